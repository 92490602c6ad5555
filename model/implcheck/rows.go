package implcheck

import (
	"encoding/binary"
	"fmt"

	"github.com/flushproof/flushproof/impl"
	"github.com/flushproof/flushproof/internal/implfault"
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/model/verdict"
	"github.com/flushproof/flushproof/model/world"
	"github.com/flushproof/flushproof/spec"
)

// Protocol is the catalog entry: impl.Syncer, the code hwbench measures,
// exhaustively in the model world.
func Protocol() verdict.Protocol {
	return entry("impl.Syncer", "impl.Syncer, the code hwbench measures", Rows,
		worldBound("task", "sync", "", func(tasks, syncs int) []verdict.Row { return verdict.BoundRows(nil, syncers(tasks, syncs)) }))
}

// entry is a catalog entry of impl's code in the model world.
func entry(name, what string, rows func() []verdict.Row, b *verdict.Bound) verdict.Protocol {
	return verdict.Protocol{Name: name, Summary: what + ", searched exhaustively in the model world", Doc: "docs/world.md", Rows: rows, Bound: b}
}

// maxOps is the most operations per task a row takes at a bound asked
// for: a cap, not a limit of the world; a search whose runs pass its
// depth bound (1,000 steps) ends UNKNOWN (depth bound) well before it.
const maxOps = 100

// worldBound is the bound of tasks x operations of a protocol's rows in
// the model world: up to the tasks a search takes and maxOps operations.
// The rows at a bound are those of the default table, at that bound:
// -proof's and -long's are the same configurations at other bounds.
func worldBound(task, op, fixed string, rows func(tasks, ops int) []verdict.Row) *verdict.Bound {
	return &verdict.Bound{Task: task, Op: op, Tasks: verdict.Range{Min: 1, Max: world.MaxSearchTasks}, Ops: verdict.Range{Min: 1, Max: maxOps},
		Fixed: fixed, Rows: func(tasks, ops int, _, _ bool) []verdict.Row { return rows(tasks, ops) }}
}

// Models are the memory models the rows run under.
func Models() []memory.Model { return []memory.Model{memory.SC, memory.TSO, memory.LKMM} }

// negative reports whether the configuration is a negative control.
func (c Syncer) negative() bool { return c.Fault != implfault.None || c.SampleEarly }

// Name is the row's model column: "impl.Syncer join", with the mutant.
func (c Syncer) Name() string {
	s := "impl.Syncer " + c.Policy.String()
	switch {
	case c.SampleEarly:
		s += " mutant-sample-before-write"
	case c.Fault != implfault.None:
		s += " mutant-" + c.Fault.String()
	}
	return s
}

// Bound describes what the search covers.
func (c Syncer) Bound() string { return bound(c.Tasks, c.Syncs, "sync", !c.NoFlushEIO) }

// bound is a row's bound: tasks x ops, whether a flush may fail, and the
// crash at every step.
func bound(tasks, ops int, op string, eio bool) string {
	s := fmt.Sprintf("%d %s x %d %s", tasks, verdict.Plural(tasks, "task"), ops, verdict.Plural(ops, op))
	if eio {
		s += ", flush EIO"
	}
	return s + ", crash at every step"
}

// Row is the configuration's row of the verdict table.
func (c Syncer) Row() verdict.Row {
	return row(c, c.Name(), c.Memory.String(), c.Bound(), c.negative())
}

// program is a configuration of the search.
type program interface {
	Config() world.Config
	Program() world.Program
}

// search searches the configuration; with opt.NoReduce, without the
// program's declarations (world.SearchOptions.Exact).
func search(p program, opt explore.Options) (*explore.Result[world.State], *world.Search, error) {
	s, err := world.NewSearch(p.Config(), p.Program(), world.SearchOptions{Exact: opt.NoReduce})
	if err != nil {
		return nil, nil, err
	}
	return s.Explore(opt), s, nil
}

// payload is the data of a task's round-th write: the task and the round,
// so that every write of a run is told apart.
func payload(dev spec.Device, task, round int) []byte {
	data := make([]byte, dev.BlockSize())
	binary.LittleEndian.PutUint32(data, uint32(task))
	binary.LittleEndian.PutUint32(data[4:], uint32(round))
	return data
}

// symmetric declares the tasks of a program that writes payloads to
// blocks of their own (block i is task i's) interchangeable.
func symmetric(w *world.World) {
	w.Symmetric(world.Symmetry{BlocksPerTask: 1, Relabel: relabelPayload})
}

// relabelPayload appends to dst a payload's data as task perm[i] would
// have written task i's.
func relabelPayload(dst, data []byte, perm []int) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(perm[binary.LittleEndian.Uint32(data)]))
	return append(dst, data[4:]...)
}

// row is the verdict table's row of a configuration.
func row(p program, model, config, bound string, negative bool) verdict.Row {
	r := verdict.Row{Model: model, Config: config, Bound: bound, Negative: negative}
	r.Check = func(opt explore.Options) (verdict.Verdict, error) {
		res, s, err := search(p, opt)
		if err != nil {
			return verdict.Verdict{}, err
		}
		v := verdict.FromResult(r, res)
		v.Runs, _ = s.Runs()
		return v, nil
	}
	return r
}

// Checks are the configurations of the default table: every policy, and
// the negative controls, under each memory model at 2 tasks x 1 sync.
// ProofChecks are those at 2 tasks x 2 syncs (`flushproof check -proof`).
func Checks() []Syncer      { return syncers(2, 1) }
func ProofChecks() []Syncer { return syncers(2, 2) }

func syncers(tasks, syncs int) []Syncer {
	var out []Syncer
	add := func(c Syncer) {
		for _, m := range Models() {
			c.Tasks, c.Syncs, c.Memory = tasks, syncs, m
			out = append(out, c)
		}
	}
	for _, p := range impl.Policies() {
		add(Syncer{Policy: p})
	}
	add(Syncer{Policy: impl.SkipIfFlushedSince, SampleEarly: true})
	add(Syncer{Policy: impl.SkipIfFlushedSince, Fault: implfault.GreaterEqual})
	add(Syncer{Policy: impl.Join, Fault: implfault.JoinNoFallback})
	add(Syncer{Policy: impl.GroupCommit, Fault: implfault.GroupNoWait})
	return out
}

// LongChecks are those at 3 tasks x 2 syncs (`flushproof check -long`),
// with flush EIO and a crash at every step like every other row.
func LongChecks() []Syncer { return syncers(3, 2) }

// Rows lists the rows: Checks, then ProofChecks marked Proof, then
// LongChecks marked Long.
func Rows() []verdict.Row {
	return append(verdict.Rows(Checks(), ProofChecks()), verdict.LongRows(LongChecks())...)
}
