package hwbench

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPlanCounts: the plan counts S1's six cases, six calibration loops
// and six fio references,
// each reference twice its duration plus fio's start per pair, and at
// most once more if rerun.
func TestPlanCounts(t *testing.T) {
	c := Config{Scenarios: []string{"S1"}, Duration: time.Second, FIO: true, FIOPairs: 3}
	p := c.Plan(true)
	assert.Equal(t, 12, p.Cases)
	assert.Equal(t, 6, p.FIORefs)
	ref := 2*time.Second + 3*fioStart
	assert.Equal(t, 12*time.Second+6*ref, p.Total)
	assert.Equal(t, p.Total+6*ref, p.Max)
	assert.Contains(t, p.String(), "12 cases of 1s and 6 fio references of 3 pairs")

	noFIO := c.Plan(false)
	assert.Equal(t, 12*time.Second, noFIO.Total)
	assert.Equal(t, noFIO.Total, noFIO.Max)

	all := Config{Duration: time.Second, Think: time.Millisecond}.Plan(false)
	assert.Equal(t, 12+9+2+4, all.Cases, "S2 with a pause runs its policies twice")
	assert.Len(t, all.Scenarios, 4)
}

// TestBudgetFits: the duration a budget gives keeps the whole run, every
// fio reference rerun included, within the budget, and uses most of it;
// a budget too small for fio's start-up is refused.
func TestBudgetFits(t *testing.T) {
	for _, c := range []Config{
		{Scenarios: []string{"S1"}, FIO: true},
		{Scenarios: []string{"S1"}, FIO: true, FIOPairs: 2},
		{FIO: true, Think: ThinkOneFlush},
		{Scenarios: []string{"S3", "S4"}},
	} {
		for _, budget := range []time.Duration{time.Minute, 10 * time.Minute, 3 * time.Hour} {
			r, err := c.resolveBudget(budget)
			require.NoError(t, err, "%+v, budget %v", c, budget)
			p := r.Plan(true)
			assert.LessOrEqual(t, p.Max, budget, "%+v, budget %v: %v", c, budget, p)
			assert.Greater(t, p.Max, budget*8/10, "%+v, budget %v: the budget is mostly used: %v", c, budget, p)
		}
	}
	_, err := Config{Scenarios: []string{"S1"}, FIO: true}.resolveBudget(2 * time.Second)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "fio's start-up")
	_, err = Config{Scenarios: []string{"S3"}}.resolveBudget(time.Second)
	require.NoError(t, err, "two cases of half a second")
}

func (c Config) resolveBudget(b time.Duration) (Config, error) {
	c.Budget = b
	if err := c.Validate(); err != nil {
		return c, err
	}
	return c.resolve(true)
}

// TestBudgetAndDurationExclusive: a Config with both is refused, naming
// both.
func TestBudgetAndDurationExclusive(t *testing.T) {
	err := Config{Budget: time.Minute, Duration: time.Second}.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "-budget")
	assert.Contains(t, err.Error(), "Duration (-duration)")
	err = Config{Budget: 10 * time.Millisecond}.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "want 1s to 24h")
}

// TestFitsTimeout: a run longer than go test's timeout is refused up front
// with the -timeout that would fit; no timeout, or enough, passes.
func TestFitsTimeout(t *testing.T) {
	err := fitsTimeout(12*time.Minute, 1, 10*time.Minute)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "up to 13m0s")
	assert.Contains(t, err.Error(), "-timeout=14m0s")
	assert.NoError(t, fitsTimeout(12*time.Minute, 1, 0))
	assert.NoError(t, fitsTimeout(5*time.Minute, 2, 10*time.Minute))
	assert.Error(t, fitsTimeout(5*time.Minute, 2, 6*time.Minute), "a minute a target for setting up")
}

// TestRunOpsExact: runOps runs exactly the operations asked for, shared
// among the workers, whatever their number: S2's sixteen writers, asked
// for fewer operations than they are, and S1's one.
func TestRunOpsExact(t *testing.T) {
	cfg := Config{Span: 4 << 20}.withDefaults()
	tg, err := OpenTarget(TargetOptions{Path: filepath.Join(t.TempDir(), "ops.img"), Region: cfg.Span})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, tg.Close()) })
	e := &scenarioEnv{t: tg, cfg: cfg, io: ioSize(tg.Logical)}
	for _, n := range []int64{1, 7, 37} {
		w, err := e.s2Case("g", e.s2Baseline(), 0)
		require.NoError(t, err)
		got, err := w.runOps(n)
		require.NoError(t, err)
		assert.Equal(t, n, got.Ops)
		r, err := w.result() // S2's finish checks the Syncer's count against the ops
		require.NoError(t, err)
		assert.Equal(t, n, r.Ops)
		assert.Equal(t, n, r.Flushes, "a flush per sync")
	}
	w := e.s1Case(0, "seq", 1)
	got, err := w.runOps(5)
	require.NoError(t, err)
	assert.Equal(t, int64(5), got.Ops)
	_, err = w.runOps(0)
	assert.Error(t, err)
}

// TestS2EfficiencyBounded: efficiency is syncs per counted flush over the
// writers; where the counts give more syncs per flush than there are
// writers, none is stored.
func TestS2EfficiencyBounded(t *testing.T) {
	r := Result{Ops: 1600, Duration: time.Second, Flushes: 1600, Extra: map[string]float64{ExtraDeviceFlushesPerOp: 0.2}}
	s2FlushFigures(&r, 16)
	assert.InDelta(t, 0.2, r.Extra[ExtraFlushesPerSync], 1e-12, "the device's count, not the issued one")
	assert.InDelta(t, 16*0.2*1600, r.Extra[ExtraLimit], 1e-9)
	assert.InDelta(t, 1/(16*0.2), r.Extra[ExtraEfficiency], 1e-12)

	file := Result{Ops: 1000, Duration: time.Second, Flushes: 250, Extra: map[string]float64{}}
	s2FlushFigures(&file, 16)
	assert.InDelta(t, 0.25, file.Extra[ExtraFlushesPerSync], 1e-12, "the flushes issued where the device's are not counted")
	assert.InDelta(t, 0.25, file.Extra[ExtraEfficiency], 1e-12)

	over := Result{Ops: 1000, Duration: time.Second, Flushes: 1000, Extra: map[string]float64{ExtraDeviceFlushesPerOp: 0.01}}
	over.Threads = 16
	s2FlushFigures(&over, 16)
	assert.NotContains(t, over.Extra, ExtraEfficiency, "100 syncs per flush with 16 writers: the count missed flushes")
	over.Scenario, over.Tool, over.Role = "S2", "hwbench", "baseline"
	notes := s2LimitNotes(16, Result{Ops: 100, Duration: time.Second}, []Result{r, over})
	require.Len(t, notes, 2)
	assert.Contains(t, notes[1], "100.00 syncs per counted flush")
}

// TestTargetsRawSyscalls: every kind of target issues its I/O as raw
// system calls, as fio's threads do; a loop device opened without them ran
// at 0.875 of a bare pwrite loop's rate, which was most of hwbench's gap
// to fio.
func TestTargetsRawSyscalls(t *testing.T) {
	cfg := Config{Span: 4 << 20}
	devices := []string{"", filepath.Join(t.TempDir(), "named.img")}
	if os.Geteuid() == 0 {
		devices = append(devices, "loop")
	}
	for _, dev := range devices {
		tg := openTestTarget(t, dev, cfg)
		assert.True(t, tg.File.RawSyscalls(), "%q (%s)", dev, tg.Kind)
	}
}
