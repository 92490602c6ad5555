package durable

import (
	"errors"
	"fmt"
	"strings"

	"github.com/flushproof/flushproof/internal/mutate"
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/litmus"
	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/model/verdict"
	"github.com/flushproof/flushproof/spec"
)

// Test is a durability litmus file ready for flushproof check: what
// its header asks for (Expect, Device, Failures, Crash), which the
// command line may override.
type Test struct {
	Test *litmus.Test
	File string // the file's name, for errors
	// Unsafe: the file expects UNSAFE (Expect: unsafe), a negative
	// control; by default a file is expected SAFE. UnsafeOn narrows it
	// ("Expect: unsafe on LKMM, Relaxed"): only the rows whose memory
	// model, or device configuration, is named (names of both kinds must
	// both match).
	Unsafe   bool
	UnsafeOn []string
	Devices  []spec.Config // Device: one or more configurations, or all
	// Models are the memory models a file is checked under when the
	// command line names none (Models: SC, TSO): DefaultModels without
	// the line.
	Models []memory.Model
	// ModelsAll: the header says Models: all.
	ModelsAll bool
	Failures  Failures  // Failures: none, flush, write, or flush,write
	Crash     CrashMode // Crash: any (the default), end or none
	// Daemons are threads that need not finish (Daemons: P1, P2): a
	// flusher or an IO thread that may wait forever once its work is
	// done. The others must finish, or the search reports a deadlock.
	Daemons uint64
}

// Read reads t's header. A value it does not know is an *Error at
// the value. Without a Device line every configuration is checked.
func Read(file string, t *litmus.Test) (*Test, error) {
	d := &Test{Test: t, File: file, Devices: spec.Configs(), Models: DefaultModels()}
	errf := func(k, format string, args ...any) error {
		f := t.Header[k]
		return &litmus.Error{File: file, Line: f.Line, Col: f.Col, Msg: fmt.Sprintf(format, args...)}
	}
	if f, ok := t.Header["expect"]; ok {
		v := strings.ToLower(strings.TrimSpace(f.Value))
		switch {
		case v == "safe":
		case v == "unsafe":
			d.Unsafe = true
		case strings.HasPrefix(v, "unsafe on "):
			d.Unsafe = true
			for _, part := range strings.Split(strings.TrimPrefix(v, "unsafe on "), ",") {
				name := strings.TrimSpace(part)
				if _, err := spec.ParseConfig(name); err != nil && modelNamed(name) < 0 {
					return nil, errf("expect", "Expect: %q: %q is neither a memory model (SC, TSO, Relaxed, LKMM) nor a device configuration (cache+fua, cache+emulated-fua, no-cache)%s", f.Value, name, litmus.DidYouMean(name, modelNames(), configNames()))
				}
				d.UnsafeOn = append(d.UnsafeOn, name)
			}
		default:
			return nil, errf("expect", "Expect: %q: want safe, unsafe, or unsafe on a list of memory models and device configurations%s", f.Value, litmus.DidYouMean(v, []string{"safe", "unsafe"}))
		}
	}
	if f, ok := t.Header["models"]; ok {
		ms, err := ParseModels(f.Value)
		if err != nil {
			return nil, errf("models", "Models: %v", err)
		}
		d.Models, d.ModelsAll = ms, IsAll(f.Value)
	}
	if f, ok := t.Header["device"]; ok {
		devs, err := ParseDevices(f.Value)
		if err != nil {
			return nil, errf("device", "Device: %v", err)
		}
		d.Devices = devs
	}
	if f, ok := t.Header["failures"]; ok {
		fl, err := ParseFailures(f.Value)
		if err != nil {
			return nil, errf("failures", "Failures: %v", err)
		}
		d.Failures = fl
	}
	if f, ok := t.Header["crash"]; ok {
		c, err := ParseCrash(f.Value)
		if err != nil {
			return nil, errf("crash", "Crash: %v", err)
		}
		d.Crash = c
	}
	if f, ok := t.Header["daemons"]; ok {
		for _, part := range strings.Split(f.Value, ",") {
			name := strings.TrimSpace(part)
			n, ok := litmus.ThreadNumber(name)
			if !ok {
				n = -1
			}
			if n < 0 || n >= len(t.Threads) {
				var threads []string
				for i := range t.Threads {
					threads = append(threads, fmt.Sprintf("P%d", i))
				}
				return nil, errf("daemons", "Daemons: %q: %q is not a thread of the file (P0 to P%d)%s", f.Value, name, len(t.Threads)-1, litmus.DidYouMean(name, threads))
			}
			if d.Daemons&(1<<n) != 0 {
				return nil, errf("daemons", "Daemons: %q: %s named twice", f.Value, name)
			}
			d.Daemons |= 1 << n
		}
	}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return d, nil
}

// Validate checks what the header (or the overrides since) and the final
// condition ask together.
func (d *Test) Validate() error {
	t := d.Test
	condErr := func(format string, args ...any) error {
		return &litmus.Error{File: d.File, Line: t.CondLine, Col: t.CondCol, Msg: fmt.Sprintf(format, args...)}
	}
	if t.Quant == litmus.Exists {
		return condErr("exists asks whether some outcome is reachable; a durability check states what must hold: write forall (...) or ~exists (...)")
	}
	if d.Crash == CrashNone && len(condBlocks(t)) > 0 {
		return condErr("the final condition names blocks, which only a crash reveals, but the header says Crash: none")
	}
	if t.Recovery != nil && d.Crash == CrashNone {
		return &litmus.Error{File: d.File, Line: t.Recovery.Line, Col: t.Recovery.Col, Msg: "recovery() runs after a crash, but the header says Crash: none"}
	}
	// Compile it once: what the compiler refuses (a break outside a loop,
	// too many registers...) is refused now, not in every row.
	op, err := compileDurable(memory.SC, t, d.File)
	if err != nil {
		return err
	}
	if t.Recovery != nil {
		if _, err := compileRecovery(op, t, d.File); err != nil {
			return err
		}
	}
	return nil
}

// unionBlocks is the ascending union of two ascending block lists.
func unionBlocks(a, b []int) []int {
	var seen [spec.MaxBlocks]bool
	for _, x := range a {
		seen[x] = true
	}
	for _, x := range b {
		seen[x] = true
	}
	var out []int
	for x, ok := range seen {
		if ok {
			out = append(out, x)
		}
	}
	return out
}

// condBlocks lists the blocks t's final condition names, ascending.
func condBlocks(t *litmus.Test) []int {
	var seen [spec.MaxBlocks]bool
	t.Cond.Locs(func(l string) {
		if b := t.BlockOf(l); b >= 0 {
			seen[b] = true
		}
	})
	var out []int
	for b, ok := range seen {
		if ok {
			out = append(out, b)
		}
	}
	return out
}

// ParseDevices reads a list of device configurations: "cache+fua",
// "cache+fua,no-cache", or "all".
func ParseDevices(s string) ([]spec.Config, error) {
	if strings.TrimSpace(strings.ToLower(s)) == "all" {
		return spec.Configs(), nil
	}
	var out []spec.Config
	for _, part := range strings.Split(s, ",") {
		c, err := spec.ParseConfig(strings.TrimSpace(part))
		if err != nil {
			return nil, fmt.Errorf("%v, or all%s", err, litmus.DidYouMean(strings.TrimSpace(part), configNames(), []string{"all"}))
		}
		for _, o := range out {
			if o == c {
				return nil, fmt.Errorf("%s named twice", c)
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// ParseFailures reads which commands may fail: none, flush, write,
// flush,write (or all).
func ParseFailures(s string) (Failures, error) {
	var f Failures
	for _, part := range strings.Split(strings.ToLower(s), ",") {
		switch strings.TrimSpace(part) {
		case "none":
			if strings.Contains(s, ",") {
				return 0, fmt.Errorf("%q: none with others", s)
			}
		case "flush", "flushes":
			f |= FailFlush
		case "write", "writes":
			f |= FailWrite
		case "all":
			f |= FailFlush | FailWrite
		default:
			return 0, fmt.Errorf("%q: want none, flush, write, flush,write or all%s", s, litmus.DidYouMean(strings.TrimSpace(part), []string{"none", "flush", "write", "all"}))
		}
	}
	return f, nil
}

// ParseCrash reads a crash mode: any, end or none.
func ParseCrash(s string) (CrashMode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "any", "anywhere", "every step":
		return CrashAny, nil
	case "end":
		return CrashEnd, nil
	case "none":
		return CrashNone, nil
	}
	return 0, fmt.Errorf("%q: want any, end or none%s", s, litmus.DidYouMean(strings.ToLower(strings.TrimSpace(s)), []string{"any", "end", "none"}))
}

// Rows are the file's rows of the verdict table: one per memory model
// (models, or d.Models if nil) and device configuration. all says that
// the models were asked for as "all" (-model all, or Models: all when
// models is nil): a model that cannot express the program then gives an
// N/A row with the reason (Verdict.NotApplicable) instead of an error.
func (d *Test) Rows(models []memory.Model, all bool) []verdict.Row {
	if models == nil {
		models, all = d.Models, d.ModelsAll
	}
	var out []verdict.Row
	for _, m := range models {
		for _, dev := range d.Devices {
			cfg := Config{Model: m, Device: dev, Failures: d.Failures, Crash: d.Crash}
			row := verdict.Row{Model: d.Test.Name, Config: m.String() + " " + dev.String(), Bound: d.bound(), Negative: d.ExpectUnsafe(m, dev)}
			row.Check = func(o explore.Options) (verdict.Verdict, error) {
				r, err := d.Search(cfg, o)
				if err != nil && all && errors.Is(err, litmus.ErrNotInModel) {
					return verdict.Verdict{Model: row.Model, Config: row.Config, Bound: row.Bound, Negative: row.Negative, Outcome: verdict.NA, NotApplicable: err.Error()}, nil
				}
				if err != nil {
					return verdict.Verdict{}, err
				}
				return verdict.FromResult(row, r), nil
			}
			out = append(out, row)
		}
	}
	return out
}

// bound describes what a row explores.
func (d *Test) bound() string {
	n := len(d.Test.Threads)
	s := fmt.Sprintf("%d %s", n, verdict.Plural(n, "thread"))
	switch d.Crash {
	case CrashAny:
		s += ", crash anywhere"
	case CrashEnd:
		s += ", crash at the end"
	}
	switch d.Failures {
	case FailFlush:
		s += ", flush EIO"
	case FailWrite:
		s += ", write EIO"
	case FailFlush | FailWrite:
		s += ", flush and write EIO"
	}
	return s
}

// Search explores the file under cfg. A run the model cannot judge (a
// fault: a value, block or command beyond its bounds, a store memory.LKMM
// cannot place) is an error naming the file and line, with the run that
// reached it.
func (d *Test) Search(cfg Config, opt explore.Options) (*explore.Result[State], error) {
	sys, err := d.system(cfg)
	if err != nil {
		return nil, err
	}
	r := explore.Explore[State](sys, opt)
	if v := r.Violation; v != nil {
		var fe *FaultError
		if errors.As(v.Err, &fe) {
			at, msg := d.File, fe.Msg
			if fe.Line > 0 {
				at = fmt.Sprintf("%s:%d:%d", d.File, fe.Line, fe.Col)
				msg = strings.TrimPrefix(msg, fmt.Sprintf("line %d: ", fe.Line))
			}
			return nil, fmt.Errorf("%s: %s; the run that reaches it:\n%s", at, msg, explore.Timeline(v.Actor, v.Path))
		}
	}
	return r, nil
}

// system compiles the file for cfg.
func (d *Test) system(cfg Config) (*durSystem, error) {
	if cfg.Model < memory.SC || cfg.Model > memory.LKMM {
		return nil, fmt.Errorf("%s: unknown memory model %v", d.File, cfg.Model)
	}
	op, err := compileDurable(cfg.Model, d.Test, d.File)
	if err != nil {
		return nil, err
	}
	sys := &durSystem{op: op, cfg: cfg, blocks: condBlocks(d.Test), daemons: d.Daemons}
	for t, code := range op.code {
		for _, in := range code {
			if in.dev != nil && in.dev.Kind == litmus.DevSubmit && in.dev.Slot > 0 {
				sys.fixed[t] |= 1 << in.dev.Slot
			}
		}
	}
	if d.Test.Recovery != nil {
		if sys.rec, err = compileRecovery(op, d.Test, d.File); err != nil {
			return nil, err
		}
		sys.blocks = unionBlocks(sys.blocks, recoveryBlocks(sys.rec))
	}
	for t, code := range op.code {
		keep := uint8(condRegs(d.Test.Cond, t, op.regs[t])) // indices below MaxRegs
		sys.live = append(sys.live, liveRegs(code, op.regs[t], keep))
		local := make([]bool, len(code))
		for i, in := range code {
			switch in.kind {
			case iBranch, iNop, iCheck:
				local[i] = true
			case iJump:
				local[i] = true
			case iAssign:
				// An assignment to a register the final condition
				// names is a step of its own: the condition, judged
				// after a crash in every state, sees the state before
				// it.
				local[i] = keep&(1<<op.regs[t][in.assign.Reg]) == 0
				if mutate.On(mutate.CondAssignLocal) && underBranch(code, i) {
					local[i] = true // mutation: a conditional assignment rides along whatever it sets
				}
			case iDevRead:
				sys.reads = true
			}
		}
		sys.local = append(sys.local, local)
	}
	sys.sym = findSymmetry(d.Test, op, d.Daemons)
	sys.locIdx = make([]int, len(d.Test.Locs))
	for l := range sys.locIdx {
		sys.locIdx[l] = l
	}
	sys.obligations()
	return sys, nil
}

// underBranch reports whether instruction i runs on some paths only
// because of a branch (CondAssignLocal): some branch reaches it and can
// also go on without it, to the thread's end or forever. That is an arm
// of an if, a loop's body, and code a goto may skip or repeat.
func underBranch(code []instr, i int) bool {
	n := len(code)
	// avoid[j]: some path from j goes on without passing i (the
	// greatest fixpoint: a loop that never passes i counts).
	avoid := make([]bool, n+1)
	for j := range avoid {
		avoid[j] = j != i
	}
	for changed := true; changed; {
		changed = false
		for j := 0; j < n; j++ {
			if !avoid[j] {
				continue
			}
			ok := false
			successors(code, j, func(s int) { ok = ok || avoid[s] })
			if !ok {
				avoid[j], changed = false, true
			}
		}
	}
	// reach[j]: some path from j passes i.
	reach := make([]bool, n+1)
	reach[i] = true
	for changed := true; changed; {
		changed = false
		for j := n - 1; j >= 0; j-- {
			if reach[j] {
				continue
			}
			successors(code, j, func(s int) { reach[j] = reach[j] || reach[s] })
			changed = changed || reach[j]
		}
	}
	for j, in := range code {
		if in.kind == iBranch && avoid[j] && reach[j] {
			return true
		}
	}
	return false
}

// AllModels are the memory models a file can be checked under.
func AllModels() []memory.Model {
	return []memory.Model{memory.SC, memory.TSO, memory.Relaxed, memory.LKMM}
}

// DefaultModels are the memory models a file is checked under when
// neither its header nor the command line names any: Relaxed lacks the
// acquires, releases and locks most files have.
func DefaultModels() []memory.Model {
	return []memory.Model{memory.SC, memory.TSO, memory.LKMM}
}

// IsAll reports whether a list of models or devices is "all".
func IsAll(s string) bool { return strings.EqualFold(strings.TrimSpace(s), "all") }

// ParseModels reads a list of memory models: "sc,tso", "LKMM", or "all"
// (SC, TSO, Relaxed and LKMM), in the order given.
func ParseModels(s string) ([]memory.Model, error) {
	if strings.EqualFold(strings.TrimSpace(s), "all") {
		return AllModels(), nil
	}
	var out []memory.Model
	for _, part := range strings.Split(s, ",") {
		n := modelNamed(strings.TrimSpace(part))
		if n < 0 {
			return nil, fmt.Errorf("%q: want a comma-separated list of sc, tso, relaxed, lkmm, or all%s", s, litmus.DidYouMean(strings.TrimSpace(part), modelNames(), []string{"all"}))
		}
		for _, m := range out {
			if int(m) == n {
				return nil, fmt.Errorf("%q: %s named twice", s, m)
			}
		}
		out = append(out, memory.Model(n))
	}
	return out, nil
}

// modelNames and configNames are the names a header may give.
func modelNames() []string {
	var out []string
	for _, m := range AllModels() {
		out = append(out, m.String())
	}
	return out
}

func configNames() []string {
	var out []string
	for _, c := range spec.Configs() {
		out = append(out, c.String())
	}
	return out
}

// modelNamed returns the memory model a name (any case) names, -1 if none.
func modelNamed(name string) int {
	for _, m := range AllModels() {
		if strings.EqualFold(m.String(), name) {
			return int(m)
		}
	}
	return -1
}

// ExpectUnsafe reports whether the file expects UNSAFE under memory model
// m on device dev (Expect).
func (d *Test) ExpectUnsafe(m memory.Model, dev spec.Config) bool {
	if !d.Unsafe {
		return false
	}
	var models, devs, mOK, dOK bool
	for _, n := range d.UnsafeOn {
		if mm := modelNamed(n); mm >= 0 {
			models, mOK = true, mOK || memory.Model(mm) == m
		} else {
			devs, dOK = true, dOK || n == dev.String()
		}
	}
	return (!models || mOK) && (!devs || dOK)
}
