package device

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/spec"
)

// Differential tests of the device copies against spec.Contract, the source
// of truth for what a crash may leave. Each test drives one copy through
// random histories (overlapping writes to one block, FUA, REQ_PREFLUSH,
// emulated FUA, no cache, EIO where the copy has it) and compares, after
// every event (a crash may come at any point), the set of contents each
// block may hold after a crash with spec.Contract.Allowed.

// diffBlocks is the number of blocks the random histories write: two, so
// that writes overlap often and a flush or preflush covers other blocks.
const diffBlocks = 2

// TestDeviceMatchesContract drives Device. The device is
// nondeterministic (landing order), so it is run as Explain does: the set of
// every state the visible history leads to. Each state's crash set must be
// allowed by the contract (soundness), and together they must leave every
// content the contract allows (completeness).
func TestDeviceMatchesContract(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		cfg := rapid.SampledFrom(spec.Configs()).Draw(rt, "config")
		con := spec.NewContract(cfg)
		devs := closeLanding([]Device{New(cfg, Correct)})
		var hist []spec.Event
		steps := rapid.IntRange(1, 24).Draw(rt, "steps")
		for range steps {
			evs := deviceEventsEnabled(devs)
			if len(evs) == 0 {
				break
			}
			e := rapid.SampledFrom(evs).Draw(rt, "event")
			hist = append(hist, e)
			require.NoError(rt, con.Apply(e), "contract rejects %v after %v", e, hist[:len(hist)-1])
			var next []Device
			for _, d := range devs {
				if n, err := d.Apply(e); err == nil {
					next = append(next, n)
				}
			}
			require.NotEmpty(rt, next, "no device state takes %v after %v", e, hist[:len(hist)-1])
			devs = closeLanding(next)
			for b := range diffBlocks {
				want := con.Allowed(b)
				for i := range devs {
					s := devs[i].CrashSet(b)
					require.True(rt, s.Minus(want).Empty(), "history %v: b%d: a device state may leave %v, the contract allows %v", hist, b, s, want)
				}
				require.Equal(rt, want.String(), CrashUnion(devs, b).String(), "history %v: b%d: crash images of the device vs the contract", hist, b)
			}
			if e.Kind == spec.Crash {
				break
			}
		}
	})
}

// deviceEventsEnabled lists the visible events some device state takes next:
// a new write (any blocks, with or without FUA and REQ_PREFLUSH), a new
// flush, every completion or failure, and the crash.
func deviceEventsEnabled(devs []Device) []spec.Event {
	var evs []spec.Event
	seen := map[spec.Event]bool{}
	add := func(e spec.Event) {
		if !seen[e] {
			seen[e] = true
			evs = append(evs, e)
		}
	}
	// At most five writes, three in flight at once: the landing orders of
	// overlapping writes in flight multiply the device states.
	d0 := &devs[0]
	inFlight := 0
	for i := range int(d0.nw) {
		if ended, _ := d0.WriteDone(i + 1); !ended {
			inFlight++
		}
	}
	if d0.nw < 5 && inFlight < 3 {
		for blocks := uint8(1); blocks < 1<<diffBlocks; blocks++ {
			for _, fua := range []bool{false, true} {
				for _, pre := range []bool{false, true} {
					add(spec.Event{Kind: spec.WriteSubmit, ID: int(d0.nw) + 1, Blocks: blocks, FUA: fua, Preflush: pre})
				}
			}
		}
	}
	if int(d0.nf) < 4 {
		add(spec.Event{Kind: spec.FlushSubmit, ID: int(d0.nf) + 1})
	}
	for i := range devs {
		devs[i].Steps(true, func(e spec.Event) {
			if e.Kind != spec.WriteLand {
				add(e)
			}
		})
	}
	// Without a cache REQ_PREFLUSH is stripped and the device takes no
	// preflush step, but a history may still say the (empty) step ended:
	// the contract and the device must both take it as a no-op.
	if !d0.cfg.VolatileCache {
		for i := range int(d0.nw) {
			if ended, _ := d0.WriteDone(i + 1); !ended && d0.wPreReq&(1<<i) != 0 {
				add(spec.Event{Kind: spec.WritePreflushed, ID: i + 1})
			}
		}
	}
	add(spec.Event{Kind: spec.Crash})
	return evs
}

// TestDevicePreflushOrdersData: W1 completed on b1, then W2 with
// REQ_PREFLUSH|FUA is submitted to b0. Until W2's preflush completed its
// data cannot land, so a crash leaves b0 as it was; once it completed, W1 is
// durable and W2 may be on b0 (blk-flush.c: the DATA step is sent from
// flush_end_io). A failed preflush ends W2 before its data was sent.
func TestDevicePreflushOrdersData(t *testing.T) {
	h := []spec.Event{
		{Kind: spec.WriteSubmit, ID: 1, Blocks: 2}, {Kind: spec.WriteComplete, ID: 1},
		{Kind: spec.WriteSubmit, ID: 2, Blocks: 1, FUA: true, Preflush: true},
	}
	for _, tc := range []struct {
		name   string
		then   []spec.Event
		b0, b1 string
	}{
		{"preflush in flight", nil, "{initial}", "{initial W1}"},
		{"preflush completed", []spec.Event{{Kind: spec.WritePreflushed, ID: 2}}, "{initial W2}", "{W1}"},
		{"preflush failed", []spec.Event{{Kind: spec.WriteFail, ID: 2}}, "{initial}", "{initial W1}"},
		{"write completed", []spec.Event{{Kind: spec.WritePreflushed, ID: 2}, {Kind: spec.WriteComplete, ID: 2}}, "{W2}", "{W1}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			devs, err := Explain(spec.CacheFUA, Correct, append(append([]spec.Event{}, h...), tc.then...))
			require.NoError(t, err)
			assert.Equal(t, tc.b0, CrashUnion(devs, 0).String(), "b0")
			assert.Equal(t, tc.b1, CrashUnion(devs, 1).String(), "b1")
		})
	}
	_, err := Explain(spec.CacheFUA, Correct, append(append([]spec.Event{}, h...), spec.Event{Kind: spec.WriteComplete, ID: 2}))
	assert.Error(t, err, "a preflush write cannot complete before its preflush")
}

// TestDevicePreflushExhaustive: the explorer's soundness and completeness
// checks of Device against spec.Contract over a small workload with
// REQ_PREFLUSH writes, in every config.
func TestDevicePreflushExhaustive(t *testing.T) {
	for _, cfg := range spec.Configs() {
		t.Run(cfg.String(), func(t *testing.T) {
			w := Workload{Config: cfg, Failures: true, Writers: [][]WriteOp{
				{{Blocks: 1}, {Blocks: 2, FUA: true, Preflush: true}},
				{{Blocks: 2}, {Blocks: 1, Preflush: true}},
			}}
			r, err := CheckSound(w, explore.Options{})
			require.NoError(t, err)
			require.True(t, r.Exhausted)
			assert.Nil(t, r.Violation)
			c, err := CheckComplete(w, explore.Options{})
			require.NoError(t, err)
			assert.Nil(t, c.Violation)
			t.Logf("%v: sound %v; complete %v", cfg, r.Stats, c.Stats)
		})
	}
}
