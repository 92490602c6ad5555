package flushseq

import (
	"fmt"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/model/verdict"
)

// ExpectUnsafe says whether the checker must find a counterexample for this
// configuration: every mutant is unsafe, except that the missing smp_mb only
// matters under Relaxed and LKMM, and not when waking from the wait for the
// write is itself a full barrier (WaiterSleeps), and the relaxed numbering
// only under LKMM (Relaxed's smp_mb makes every store made before it
// visible, which LKMM's does not: docs/memory.md).
func (c Config) ExpectUnsafe() bool {
	if !c.Variant.Mutant() {
		return false
	}
	switch c.Variant {
	case MutantNoMB:
		return (c.Memory == memory.Relaxed || c.Memory == memory.LKMM) && !c.WaiterSleeps
	case MutantRelaxedNumber:
		return c.Memory == memory.LKMM
	}
	return true
}

// Describe renders the bound of a configuration.
func (c Config) Describe() string {
	s := fmt.Sprintf("%d %s x %d %s", c.Tasks, verdict.Plural(c.Tasks, "task"), c.Fsyncs, verdict.Plural(c.Fsyncs, "fsync"))
	if c.FlushFailures {
		s += ", flush EIO"
	}
	if c.DAX != 0 {
		s += ", task A DAX"
	}
	if c.WaiterSleeps {
		s += ", waiter sleeps"
	}
	if c.LogForce {
		s += ", log force"
	}
	return s
}

// StandardConfig is the bound the verdict table uses for a variant and
// memory model: 2 tasks x 2 fsyncs with flush failures; the DAX mutant runs
// with task A on a DAX file (the only configuration where it differs).
func StandardConfig(v Variant, m memory.Model) Config {
	c := Config{Variant: v, Memory: m, Tasks: 2, Fsyncs: 2, FlushFailures: true}
	if v == MutantDAXSkips {
		c.DAX = 1
	}
	return c
}

// Checks lists the rows of the flush-sequence table: every variant under
// every memory model, the patched code with a DAX task, and the missing
// smp_mb with a sleeping waiter (both memory-model outcomes are reported,
// docs/flushseq.md, "Memory ordering"), and every variant with the log
// force.
func Checks() []Config {
	var out []Config
	for _, v := range Variants() {
		for _, m := range Models() {
			out = append(out, StandardConfig(v, m))
		}
	}
	for _, m := range Models() {
		c := StandardConfig(Patched, m)
		c.DAX = 1
		out = append(out, c)
	}
	for _, m := range Models() {
		c := StandardConfig(MutantNoMB, m)
		c.WaiterSleeps = true
		out = append(out, c)
	}
	// With the log force: Relaxed only, whose behaviours include SC's.
	for _, v := range Variants() {
		c := StandardConfig(v, memory.Relaxed)
		c.LogForce = true
		out = append(out, c)
	}
	return out
}

// Models are the memory models the protocol is checked under, in the
// explorer and in the model world: those whose operations have one result
// (memory.Models: SC, TSO and Relaxed), and LKMM.
func Models() []memory.Model { return append(memory.Models(), memory.LKMM) }

// Check explores one configuration exhaustively.
func Check(c Config, opt explore.Options) (verdict.Verdict, error) {
	sys, err := NewSystem(c)
	return verdict.Explore[State](c.Row(), sys, err, opt)
}

// Row is the configuration's row of the verdict table.
func (c Config) Row() verdict.Row {
	return verdict.Row{Model: "xfs-flushseq " + c.Variant.String(), Config: c.Memory.String(), Bound: c.Describe(),
		Negative: c.ExpectUnsafe(), Check: func(o explore.Options) (verdict.Verdict, error) { return Check(c, o) }}
}

// Rows are the protocol's rows of the verdict table: Checks, then
// ProofChecks marked Proof, then LongChecks marked Long.
func Rows() []verdict.Row {
	return append(verdict.Rows(Checks(), ProofChecks()), verdict.LongRows(LongChecks())...)
}

// ProofChecks are the rows of the bound that counts as a proof for
// small systems (issue: 3 tasks x 2 fsyncs, one block per task, device
// events interleaved freely, under each memory model, without flush
// failures and log force): the real variants, which must be SAFE.
func ProofChecks() []Config {
	var out []Config
	for _, v := range []Variant{Baseline, Patched, Improved, GroupCommit} {
		for _, m := range Models() {
			out = append(out, Config{Variant: v, Memory: m, Tasks: 3, Fsyncs: 2})
		}
	}
	return out
}

// LongChecks are the rows `check -long` adds: the real variants at 3 tasks
// x 2 fsyncs with flush failures, under the memory models the model world
// has (SC, TSO, LKMM). They are the bound of impl's rows at 3 x 2, which
// stand beside them. Not group commit under LKMM: on a machine of 24
// GiB its search held 17 GiB after about 24 minutes, still going, and was
// stopped (docs/world.md, "Speed").
func LongChecks() []Config {
	var out []Config
	for _, v := range []Variant{Baseline, Patched, Improved, GroupCommit} {
		for _, m := range []memory.Model{memory.SC, memory.TSO, memory.LKMM} {
			if v == GroupCommit && m == memory.LKMM {
				continue
			}
			out = append(out, Config{Variant: v, Memory: m, Tasks: 3, Fsyncs: 2, FlushFailures: true})
		}
	}
	return out
}

// BoundRows are the protocol's rows at tasks x fsyncs (verdict.Bound):
// the configurations of Checks, then with proof those of ProofChecks and
// with long those of LongChecks, each at that bound. A row is Unfit when
// NewSystem would refuse it: its flushes do not fit the memory's bounds
// (at most 15 in all under Relaxed and LKMM, 120 under SC and TSO).
func BoundRows(tasks, fsyncs int, proof, long bool) []verdict.Row {
	at := func(cs []Config) []Config {
		for i := range cs {
			cs[i].Tasks, cs[i].Fsyncs = tasks, fsyncs
		}
		return cs
	}
	sets := [][]Config{at(Checks())}
	if proof {
		sets = append(sets, at(ProofChecks()))
	}
	if long {
		sets = append(sets, at(LongChecks()))
	}
	return verdict.BoundRows(Config.validate, sets...)
}
