package linearize

import (
	"fmt"
	"strings"

	"pgregory.net/rapid"

	"github.com/flushproof/flushproof/model/device"
	"github.com/flushproof/flushproof/spec"
)

// GenOptions bound a generated history. The zero value is usable: a device
// with spec.Config{} (no cache), 2 or 3 blocks, 1 to 4 tasks, and the
// defaults below.
type GenOptions struct {
	Config spec.Config
	// Bug is the device DrawModelHistory runs (device.Correct by default).
	// DrawReferenceHistory always schedules with the correct device.
	Bug        device.Bug
	Blocks     int // blocks written and read; 0: 2 or 3, drawn
	MaxTasks   int // 0: 4. A task has one command or read in flight at a time, so this bounds them.
	MaxWrites  int // 0: 12
	MaxFlushes int // 0: 4
	MaxReads   int // reads before the crash (model histories only); 0: 4, negative: none
	MaxSteps   int // actions before the crash; 0: 40
	// MultiBlock lets a write cover several blocks (by default each writes
	// one). The blocks of overlapping multi-block writes may then end up
	// with different writes' data (torn), which the contract allows and
	// device.Device does by landing a write block by block.
	MultiBlock bool
	NoFailures bool // writes and flushes never fail with EIO
	_          struct{}
}

func (o GenOptions) withDefaults() GenOptions {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.MaxTasks, 4)
	def(&o.MaxWrites, 12)
	def(&o.MaxFlushes, 4)
	def(&o.MaxReads, 4)
	def(&o.MaxSteps, 40)
	o.MaxWrites = min(o.MaxWrites, spec.MaxWrites)
	o.MaxFlushes = min(o.MaxFlushes, spec.MaxFlushes)
	return o
}

// DrawModelHistory runs device.Device (opt.Bug) under a schedule drawn by
// rapid and returns what the OS saw: tasks submit writes and flushes and read
// blocks, the device takes its own steps (landing, data done, completing,
// failing) in a drawn order, then the device crashes, leaving on each block
// a content drawn from the device's CrashSet, and every block is read once.
// Landing is not recorded: it is the linearization point porcupine must
// find. The whole device trace, landing included, is logged with t.Logf.
func DrawModelHistory(t *rapid.T, opt GenOptions) History {
	return newGenerator(t, opt, false).run()
}

// DrawReferenceHistory is DrawModelHistory with the contract in charge of
// the outcome: the schedule is drawn the same way (with the correct device),
// spec.Contract is fed every device event, WriteDataDone included, and the
// crash leaves on each block a content drawn from spec.Contract.Allowed.
// There are no reads before the crash: the contract says nothing about them.
func DrawReferenceHistory(t *rapid.T, opt GenOptions) History {
	opt.Bug = device.Correct
	opt.MaxReads = -1
	return newGenerator(t, opt, true).run()
}

type generator struct {
	t         *rapid.T
	opt       GenOptions
	reference bool
	dev       device.Device
	con       spec.Contract
	rec       *Recorder
	blocks    int
	tasks     []genTask
	writes    int
	flushes   int
	reads     int
	trace     []string
}

// genTask is what a task waits for (0 = nothing).
type genTask struct {
	write, flush, read int
	readBlock          int
}

func (t genTask) idle() bool { return t.write == 0 && t.flush == 0 && t.read == 0 }

type genAction struct {
	task  int
	kind  int // one of the act* constants
	event spec.Event
}

const (
	actWrite = iota
	actFlush
	actReadCall
	actReadReturn
	actDevice
)

func newGenerator(t *rapid.T, opt GenOptions, reference bool) *generator {
	noReads := opt.MaxReads < 0
	opt = opt.withDefaults()
	if noReads {
		opt.MaxReads = 0
	}
	return &generator{
		t: t, opt: opt, reference: reference,
		dev: device.New(opt.Config, opt.Bug),
		con: spec.NewContract(opt.Config),
		rec: NewRecorder(),
	}
}

func (g *generator) run() History {
	t := g.t
	g.blocks = g.opt.Blocks
	if g.blocks <= 0 {
		g.blocks = rapid.IntRange(2, 3).Draw(t, "blocks")
	}
	g.blocks = min(g.blocks, spec.MaxBlocks)
	g.tasks = make([]genTask, rapid.IntRange(1, g.opt.MaxTasks).Draw(t, "tasks"))
	for i := 0; i < g.opt.MaxSteps && often(t, "go on"); i++ {
		acts := g.actions()
		if len(acts) == 0 {
			break
		}
		g.do(acts[rapid.IntRange(0, len(acts)-1).Draw(t, "action")])
	}
	g.crash()
	what := fmt.Sprintf("device trace (%v, %v)", g.opt.Config, g.opt.Bug)
	if g.reference {
		what = fmt.Sprintf("schedule (%v, correct device; crash outcome from the contract)", g.opt.Config)
	}
	t.Logf("%s, landing included:\n%s", what, strings.Join(g.trace, "\n"))
	return g.rec.History()
}

// actions lists what may happen next. Failures are drawn apart and rarely,
// so that most commands get through; shrinking drops them first.
func (g *generator) actions() []genAction {
	var acts, failures []genAction
	for i, task := range g.tasks {
		switch {
		case task.idle():
			if g.writes < g.opt.MaxWrites {
				acts = append(acts, genAction{task: i, kind: actWrite})
			}
			if g.flushes < g.opt.MaxFlushes {
				acts = append(acts, genAction{task: i, kind: actFlush})
			}
			if g.reads < g.opt.MaxReads {
				acts = append(acts, genAction{task: i, kind: actReadCall})
			}
		case task.read != 0:
			acts = append(acts, genAction{task: i, kind: actReadReturn})
		}
	}
	g.dev.Steps(!g.opt.NoFailures, func(e spec.Event) {
		a := genAction{kind: actDevice, event: e}
		if e.Kind == spec.WriteFail || e.Kind == spec.FlushFail {
			failures = append(failures, a)
		} else {
			acts = append(acts, a)
		}
	})
	if len(failures) > 0 && (len(acts) == 0 || rarely(g.t, "inject a failure")) {
		return failures
	}
	return acts
}

// rarely is true with probability 1/32 and shrinks to false; often is its
// opposite, also shrinking to false. (rapid's integers are biased towards
// small values, its booleans are not.)
func rarely(t *rapid.T, label string) bool {
	for i := 0; i < 5; i++ {
		if !rapid.Bool().Draw(t, label) {
			return false
		}
	}
	return true
}

func often(t *rapid.T, label string) bool {
	for i := 0; i < 5; i++ {
		if rapid.Bool().Draw(t, label) {
			return true
		}
	}
	return false
}

func (g *generator) must(err error) {
	if err != nil {
		g.t.Fatalf("record: %v", err)
	}
}

func (g *generator) do(a genAction) {
	t := g.t
	task := &g.tasks[a.task]
	switch a.kind {
	case actWrite:
		var blocks uint8
		if g.opt.MultiBlock {
			blocks = rapid.Uint8Range(1, uint8(1<<g.blocks-1)).Draw(t, "blocks written")
		} else {
			blocks = 1 << rapid.IntRange(0, g.blocks-1).Draw(t, "block written")
		}
		fua := rapid.Bool().Draw(t, "FUA")
		id, err := g.rec.SubmitWrite(a.task, blocks, fua)
		g.must(err)
		g.writes++
		task.write = id
		g.device(spec.Event{Kind: spec.WriteSubmit, ID: id, Blocks: blocks, FUA: fua}, TaskName(a.task))
	case actFlush:
		id, err := g.rec.SubmitFlush(a.task)
		g.must(err)
		g.flushes++
		task.flush = id
		g.device(spec.Event{Kind: spec.FlushSubmit, ID: id}, TaskName(a.task))
	case actReadCall:
		b := rapid.IntRange(0, g.blocks-1).Draw(t, "block read")
		id, err := g.rec.BeginRead(a.task, b)
		g.must(err)
		g.reads++
		task.read, task.readBlock = id, b
		g.trace = append(g.trace, fmt.Sprintf("%s: R%d: read b%d ...", TaskName(a.task), id, b))
	case actReadReturn:
		v := g.dev.ReadValue(task.readBlock)
		g.must(g.rec.EndRead(task.read, v))
		g.trace = append(g.trace, fmt.Sprintf("%s: R%d: ... = %s", TaskName(a.task), task.read, spec.ContentName(v)))
		task.read = 0
	case actDevice:
		e := a.event
		g.device(e, "device")
		switch e.Kind {
		case spec.WriteComplete, spec.WriteFail:
			g.must(g.rec.EndWrite(e.ID, e.Kind == spec.WriteComplete))
			for i := range g.tasks {
				if g.tasks[i].write == e.ID {
					g.tasks[i].write = 0
				}
			}
		case spec.FlushComplete, spec.FlushFail:
			g.must(g.rec.EndFlush(e.ID, e.Kind == spec.FlushComplete))
			for i := range g.tasks {
				if g.tasks[i].flush == e.ID {
					g.tasks[i].flush = 0
				}
			}
		}
	}
}

// device applies e to the device (and, for reference histories, to the
// contract) and traces it.
func (g *generator) device(e spec.Event, who string) {
	next, err := g.dev.Apply(e)
	if err != nil {
		g.t.Fatalf("the device rejected its own step %v: %v", e, err)
	}
	g.dev = next
	if g.reference {
		if err := g.con.Apply(e); err != nil {
			g.t.Fatalf("the contract rejected the device's step %v: %v", e, err)
		}
	}
	g.trace = append(g.trace, who+": "+e.String())
}

func (g *generator) crash() {
	t := g.t
	g.must(g.rec.Crash())
	g.device(spec.Event{Kind: spec.Crash}, "device")
	contents := make([]int, g.blocks)
	for b := range contents {
		set := g.dev.CrashSet(b)
		if g.reference {
			set = g.con.Allowed(b)
		}
		contents[b] = rapid.SampledFrom(set.Contents()).Draw(t, fmt.Sprintf("b%d after the crash", b))
		g.trace = append(g.trace, fmt.Sprintf("device: b%d may hold %v, holds %s", b, set, spec.ContentName(contents[b])))
	}
	for b, v := range contents {
		id, err := g.rec.BeginRead(0, b)
		g.must(err)
		g.must(g.rec.EndRead(id, v))
	}
}
