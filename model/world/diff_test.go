package world

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/spec"
)

// worldDiffBlocks is the number of blocks the world's random programs write.
const worldDiffBlocks = 2

// evW and subW build contract events (as device_test.go's ev and sub do).
func evW(k spec.Kind, id int) spec.Event { return spec.Event{Kind: k, ID: id} }
func subW(id int, blocks uint8, fua bool) spec.Event {
	return spec.Event{Kind: spec.WriteSubmit, ID: id, Blocks: blocks, FUA: fua}
}

// scriptChooser picks, at each step, the first action that matches the next
// entry of its script.
type scriptChooser struct {
	t      *testing.T
	script []func(Action) bool
}

func (c *scriptChooser) Choose(acts []Action) int {
	c.t.Helper()
	require.NotEmpty(c.t, c.script, "script ended, actions left: %v", acts)
	want := c.script[0]
	c.script = c.script[1:]
	for i, a := range acts {
		if want(a) {
			return i
		}
	}
	require.Failf(c.t, "no scripted action", "none of %v matches", acts)
	return -1
}

func act(k ActionKind, task int) func(Action) bool {
	return func(a Action) bool { return a.Kind == k && a.Task == task }
}

// TestWorldOverlappingFUAWriteRegression: W1 is submitted to b0; W2, a FUA
// write to b0, is submitted and completes while W1 is still in flight. W1
// was not ordered before W2, so it may land after it: a crash may leave W1
// or W2 (spec.Contract, rule 6). The world used to give W2 only.
func TestWorldOverlappingFUAWriteRegression(t *testing.T) {
	w, err := New(Config{Memory: memory.SC, Tasks: 2, Blocks: 1, Crash: 6})
	require.NoError(t, err)
	ch := &scriptChooser{t: t, script: []func(Action) bool{
		act(ActStart, 0), act(ActStart, 1), act(ActWrite, 0), act(ActWrite, 1), act(ActWriteDone, 1),
	}}
	out, err := w.Run(ch, func(tk *Task) {
		fl := spec.WriteFlags(0)
		if tk.ID() == 1 {
			fl = spec.FUA
		}
		_ = tk.Device().WriteAt(worldData(tk.ID(), 1), 0, fl)
	})
	require.NoError(t, err)
	require.True(t, out.Crashed)

	con := spec.NewContract(spec.CacheFUA)
	for _, e := range []spec.Event{subW(1, 1, false), subW(2, 1, true), evW(spec.WriteComplete, 2)} {
		require.NoError(t, con.Apply(e))
	}
	assert.Equal(t, "{W1 W2}", con.Allowed(0).String())
	assert.Equal(t, []int{1, 2}, w.MayLeaveVersions(0), "W1 (version 1) may land over the durable W2")
	assert.Equal(t, [][]byte{worldData(0, 1), worldData(1, 1)}, w.MayLeave(0))
	assert.False(t, w.Survives(0, worldData(1, 1)), "W2 is durable, but W1 may overwrite it")
}

// TestWorldPreflush: a write with spec.Preflush makes the writes completed
// before it durable when its preflush ends, on every block, and not before;
// its own data may be left by a crash only from then on (spec.Contract,
// rule 7). Task 0 writes b1, then b0 with REQ_PREFLUSH|FUA.
func TestWorldPreflush(t *testing.T) {
	first := []func(Action) bool{act(ActStart, 0), act(ActWrite, 0), act(ActWriteDone, 0), act(ActWrite, 0)}
	for _, tc := range []struct {
		name    string
		then    []func(Action) bool
		b1      []int // versions a crash may leave on b1
		b0      []int
		noCache bool
	}{
		{"preflush in flight: neither W1 durable nor W2 sent", nil, []int{0, 1}, []int{0}, false},
		{"preflush ended: W1 durable, W2 may land", []func(Action) bool{act(ActWritePreflushed, 0)}, []int{1}, []int{0, 1}, false},
		{"preflush write completed", []func(Action) bool{act(ActWritePreflushed, 0), act(ActWriteDone, 0)}, []int{1}, []int{1}, false},
		{"no cache: stripped, the data is sent at once", nil, []int{1}, []int{0, 1}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := append(append([]func(Action) bool{}, first...), tc.then...)
			w, err := New(Config{Memory: memory.SC, Tasks: 1, Blocks: 2, NoCache: tc.noCache, Crash: len(script) + 1})
			require.NoError(t, err)
			_, err = w.Run(&scriptChooser{t: t, script: script}, func(tk *Task) {
				_ = tk.Device().WriteAt(worldData(0, 1), 8, 0)
				_ = tk.Device().WriteAt(worldData(0, 2), 0, spec.Preflush|spec.FUA)
			})
			require.NoError(t, err)
			assert.Equal(t, tc.b1, w.MayLeaveVersions(1), "b1")
			assert.Equal(t, tc.b0, w.MayLeaveVersions(0), "b0")
		})
	}
}

// worldData is the 8-byte content of a task's n-th write: unique per write.
func worldData(task, n int) []byte {
	return []byte{byte(task + 1), byte(n), 0xd1, 0xff, 0, 0, 0, 0}
}

// worldOps are what a task of the random world program may do next.
var worldOps = []struct {
	name  string
	flush bool
	block int
	fl    spec.WriteFlags
}{
	{name: "write b0", block: 0}, {name: "write b0 FUA", block: 0, fl: spec.FUA},
	{name: "write b0 PREFLUSH", block: 0, fl: spec.Preflush}, {name: "write b0 PREFLUSH FUA", block: 0, fl: spec.Preflush | spec.FUA},
	{name: "write b1", block: 1}, {name: "write b1 FUA", block: 1, fl: spec.FUA},
	{name: "write b1 PREFLUSH", block: 1, fl: spec.Preflush},
	{name: "flush", flush: true},
}

// worldDiff is a Chooser drawn by rapid that also follows the world's trace:
// it feeds each device event to spec.Contract (one per config the world may
// stand for) and compares the crash sets after each.
type worldDiff struct {
	rt   *rapid.T
	w    *World
	cons []spec.Contract
	// ids[b][v]: the contract's write number of version v of block b.
	ids     [worldDiffBlocks][]int
	nw, nf  int
	flushOf map[int]int // task -> its flush in flight
	hist    []spec.Event
	// flags[task]: the flags of the task's write being submitted (the trace
	// does not carry REQ_PREFLUSH).
	flags map[int]spec.WriteFlags
}

func (d *worldDiff) Choose(acts []Action) int {
	return rapid.IntRange(0, len(acts)-1).Draw(d.rt, "action")
}

func (d *worldDiff) apply(e spec.Event) {
	d.hist = append(d.hist, e)
	for i := range d.cons {
		require.NoError(d.rt, d.cons[i].Apply(e), "contract %v rejects %v", d.cons[i].Config(), e)
	}
}

func (d *worldDiff) Observe(wev Event) {
	switch wev.Kind {
	case ActWrite:
		d.nw++
		b := wev.Loc
		for len(d.ids[b]) <= int(wev.Val) {
			d.ids[b] = append(d.ids[b], 0)
		}
		d.ids[b][wev.Val] = d.nw
		fl := d.flags[wev.Task]
		d.apply(spec.Event{Kind: spec.WriteSubmit, ID: d.nw, Blocks: 1 << b, FUA: fl&spec.FUA != 0, Preflush: fl&spec.Preflush != 0})
	case ActWritePreflushed:
		d.apply(spec.Event{Kind: spec.WritePreflushed, ID: d.ids[wev.Loc][wev.Val]})
	case ActWriteDone:
		d.apply(spec.Event{Kind: spec.WriteComplete, ID: d.ids[wev.Loc][wev.Val]})
	case ActFlush:
		d.nf++
		d.flushOf[wev.Task] = d.nf
		d.apply(spec.Event{Kind: spec.FlushSubmit, ID: d.nf})
	case ActFlushDone:
		d.apply(spec.Event{Kind: spec.FlushComplete, ID: d.flushOf[wev.Of]})
	case ActFlushFail:
		d.apply(spec.Event{Kind: spec.FlushFail, ID: d.flushOf[wev.Of]})
	default:
		return
	}
	d.compare()
}

// compare checks every block's crash set, and Survives for every version.
func (d *worldDiff) compare() {
	for b := range worldDiffBlocks {
		var got spec.CrashSet
		for _, v := range d.w.MayLeaveVersions(b) {
			if v == 0 {
				got.Initial = true
			} else {
				got.Writes |= 1 << (d.ids[b][v] - 1)
			}
		}
		for i := range d.cons {
			want := d.cons[i].Allowed(b)
			require.Equal(d.rt, want.String(), got.String(), "%v: history %v: b%d: world vs contract", d.cons[i].Config(), d.hist, b)
		}
		// Survives(v): every content a crash may leave is version v or newer.
		bv := &d.w.blocks[b]
		for v := 1; v < len(bv.data); v++ {
			want := !d.cons[0].Allowed(b).Initial
			for _, id := range d.cons[0].Allowed(b).Contents() {
				if id != 0 && id < d.ids[b][v] {
					want = false
				}
			}
			require.Equal(d.rt, want, d.w.Survives(b, bv.data[v]), "history %v: Survives(b%d, version %d)", d.hist, b, v)
			// The obligation of version v (Task.MustSurvive): every content
			// a crash may leave is v or a write not ordered before it.
			want = true
			for _, id := range d.cons[0].Allowed(b).Contents() {
				if id != d.ids[b][v] && d.cons[0].OrderedBefore(id, d.ids[b][v]) {
					want = false
				}
			}
			require.Equal(d.rt, want, bv.leftBefore(v) == nil, "history %v: obligation of b%d version %d: left before it %v", d.hist, b, v, bv.leftBefore(v))
		}
	}
}

// TestWorldMatchesContract drives the model world with a small random
// program: three tasks, each doing a few writes (to b0 or b1, with or
// without FUA and REQ_PREFLUSH) or flushes, chosen by rapid, as is every
// scheduling step and the crash. The world's device has no write errors and
// treats emulated FUA as native (a write seen without its data-done event),
// so it is compared with the contract of every config it may stand for.
func TestWorldMatchesContract(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		nc := rapid.Bool().Draw(rt, "no cache")
		cfg := Config{Memory: memory.SC, Tasks: 3, Blocks: worldDiffBlocks, NoCache: nc,
			FlushFailures: rapid.Bool().Draw(rt, "flush EIO"), Crash: rapid.IntRange(0, 40).Draw(rt, "crash before step")}
		w, err := New(cfg)
		require.NoError(rt, err)
		d := &worldDiff{rt: rt, w: w, flushOf: map[int]int{}, flags: map[int]spec.WriteFlags{}}
		for b := range d.ids {
			d.ids[b] = []int{0}
		}
		if nc {
			d.cons = []spec.Contract{spec.NewContract(spec.NoCache)}
		} else {
			d.cons = []spec.Contract{spec.NewContract(spec.CacheFUA), spec.NewContract(spec.CacheEmulatedFUA)}
		}
		ops := rapid.IntRange(1, 3).Draw(rt, "ops per task")
		out, err := w.Run(d, func(tk *Task) {
			names := make([]string, len(worldOps))
			for i, o := range worldOps {
				names[i] = o.name
			}
			for n := range ops {
				o := worldOps[tk.Choose(names...)]
				if o.flush {
					_ = tk.Device().Flush()
					continue
				}
				d.flags[tk.ID()] = o.fl
				_ = tk.Device().WriteAt(worldData(tk.ID(), n), int64(o.block*8), o.fl)
			}
		})
		require.NoError(rt, err)
		if out.Crashed {
			d.apply(spec.Event{Kind: spec.Crash})
			d.compare()
		}
	})
}

// flushseq.System's device: one block per task, a write per round, flushes that
// cover the tasks whose current write had completed at submission. Its
// crash-relevant state is one bit per task, dur: the task's current write is
// durable. The contract's equivalent: the block may hold nothing but that
// write after a crash.
