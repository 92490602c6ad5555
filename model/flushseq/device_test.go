package flushseq

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/spec"
)

// fsyncDeviceEvent maps a System step to the device event it causes.
func fsyncDeviceEvent(sys *System, l explore.Label, wid *[maxFsTasks]int, fid *[maxFsTasks]int, nw, nf *int) (spec.Event, bool) {
	switch {
	case l.Kind == kWrite && int(l.Actor) < sys.cfg.Tasks:
		*nw++
		wid[l.Actor] = *nw
		return spec.Event{Kind: spec.WriteSubmit, ID: *nw, Blocks: 1 << l.Actor}, true
	case l.Kind == kSubmitF:
		*nf++
		fid[l.Actor] = *nf
		return spec.Event{Kind: spec.FlushSubmit, ID: *nf}, true
	case l.Kind == kDevWrite:
		return spec.Event{Kind: spec.WriteComplete, ID: wid[l.ID]}, true
	case l.Kind == kDevFlushOK:
		return spec.Event{Kind: spec.FlushComplete, ID: fid[l.ID]}, true
	case l.Kind == kDevFlushFail:
		return spec.Event{Kind: spec.FlushFail, ID: fid[l.ID]}, true
	}
	return spec.Event{}, false
}

// TestFsyncDeviceMatchesContract walks System at random (every variant
// but the DAX one, whose tasks' data is CPU stores, not device writes) and
// checks after every device event that State's dur bit of each task
// holds exactly when the contract allows nothing but the task's current
// write on its block.
func TestFsyncDeviceMatchesContract(t *testing.T) {
	var variants []Variant
	for _, v := range Variants() {
		if v != MutantDAXSkips {
			variants = append(variants, v)
		}
	}
	rapid.Check(t, func(rt *rapid.T) {
		cfg := Config{
			Variant: rapid.SampledFrom(variants).Draw(rt, "variant"),
			Memory:  rapid.SampledFrom([]memory.Model{memory.SC, memory.TSO}).Draw(rt, "memory"),
			Tasks:   rapid.IntRange(1, 3).Draw(rt, "tasks"), Fsyncs: rapid.IntRange(1, 3).Draw(rt, "fsyncs"),
			FlushFailures: rapid.Bool().Draw(rt, "flush EIO"), WaiterSleeps: rapid.Bool().Draw(rt, "waiter sleeps"),
			LogForce: rapid.Bool().Draw(rt, "log force"),
		}
		sys, err := NewSystem(cfg)
		require.NoError(rt, err)
		con := spec.NewContract(spec.CacheFUA)
		var wid, fid [maxFsTasks]int
		var nw, nf int
		var hist []string
		st := sys.Init()[0]
		for range 80 {
			type succ struct {
				l explore.Label
				n State
			}
			var next []succ
			sys.Next(st, func(l explore.Label, n State) { next = append(next, succ{l, n}) })
			if len(next) == 0 {
				break
			}
			s := rapid.SampledFrom(next).Draw(rt, "step")
			hist = append(hist, sys.Describe(s.l))
			st = s.n
			e, ok := fsyncDeviceEvent(sys, s.l, &wid, &fid, &nw, &nf)
			if !ok {
				continue
			}
			require.NoError(rt, con.Apply(e), "after %v", hist)
			for tk := range cfg.Tasks {
				if wid[tk] == 0 {
					continue
				}
				onlyCurrent := con.Allowed(tk).String() == fmt.Sprintf("{W%d}", wid[tk])
				require.Equal(rt, onlyCurrent, st.dur&(1<<tk) != 0,
					"%v: after %v: task %d's write W%d: contract allows %v on b%d, FsyncState durable=%v",
					cfg.Variant, hist, tk, wid[tk], con.Allowed(tk), tk, st.dur&(1<<tk) != 0)
			}
		}
	})
}
