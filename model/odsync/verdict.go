package odsync

import (
	"fmt"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/verdict"
	"github.com/flushproof/flushproof/spec"
)

// ExpectUnsafe says whether the checker must find a counterexample for this
// scenario, and the comments say why.
func (c Config) ExpectUnsafe() bool {
	cache := c.Device.VolatileCache
	switch c.Variant {
	case MutantSkipSyncOnFallback:
		// With a volatile cache the fallback's page write-back completes
		// into the cache and nothing flushes it. Without one, the
		// write-back that direct_write_fallback waits for is already
		// durable, so the sync only matters for its error report: when
		// two writers share the mapping, the other one's
		// filemap_check_errors can consume AS_EIO, and only
		// generic_write_sync's errseq check would still return -EIO.
		return cache || (c.Failures && c.Tasks > 1)
	case MutantDropFUA:
		// Without a volatile cache a completed write is durable, FUA or
		// not: the false-positive control.
		return cache
	case MutantFallbackDirty:
		// Dirty pages are in host memory whatever the device is.
		return true
	}
	return false
}

// Describe renders the bound of a scenario.
func (c Config) Describe() string {
	s := fmt.Sprintf("%d %s x %d %s x %d %s", c.Tasks, verdict.Plural(c.Tasks, "task"), c.Writes, verdict.Plural(c.Writes, "write"), c.Blocks, verdict.Plural(c.Blocks, "block"))
	if c.Failures {
		s += ", EIO"
	}
	if c.Writeback {
		s += ", background write-back"
	}
	return s
}

// StandardConfig is the first bound of the verdict table: two
// writers, one write() of two blocks each (so the direct part can be all,
// a prefix or nothing), EIO on any write or flush, a crash at any point.
// The writers share the device, its flushes and the mapping's AS_EIO bit.
func StandardConfig(v Variant, dev spec.Config) Config {
	return Config{Variant: v, Device: dev, Tasks: 2, Writes: 1, Blocks: 2, Failures: true}
}

// OverwriteConfig is the second bound: one writer overwriting its two
// blocks with three write()s in a row, EIO, and the flusher thread writing
// back dirty pages whenever it likes. A crash must never bring back an
// older write()'s data.
func OverwriteConfig(v Variant, dev spec.Config) Config {
	return Config{Variant: v, Device: dev, Tasks: 1, Writes: 3, Blocks: 2, Failures: true, Writeback: true}
}

// Checks lists the rows of the O_DSYNC table: every variant on every
// device configuration at both bounds, and the skip-sync-on-fallback
// mutant without a cache and without EIO, where it is SAFE: the
// false-positive control showing that its no-cache verdict at the first
// bound comes from a lost write-back error, not from lost data.
func Checks() []Config {
	var out []Config
	for _, bound := range []func(Variant, spec.Config) Config{StandardConfig, OverwriteConfig} {
		for _, v := range Variants() {
			for _, dev := range spec.Configs() {
				out = append(out, bound(v, dev))
			}
		}
	}
	c := StandardConfig(MutantSkipSyncOnFallback, spec.Config{})
	c.Failures = false
	return append(out, c)
}

// ProofChecks is a larger bound for the real variants: both writers
// as in StandardConfig, plus the flusher thread. A row is 0.7 to 1
// million states, about a second and 0.6 to 0.8 GB of memory.
func ProofChecks() []Config {
	var out []Config
	for _, v := range []Variant{Baseline, Patched} {
		for _, dev := range spec.Configs() {
			c := StandardConfig(v, dev)
			c.Writeback = true
			out = append(out, c)
		}
	}
	return out
}

// Check explores one scenario exhaustively.
func Check(c Config, opt explore.Options) (verdict.Verdict, error) {
	sys, err := NewSystem(c)
	return verdict.Explore[State](c.Row(), sys, err, opt)
}

// Row is the scenario's row of the verdict table.
func (c Config) Row() verdict.Row {
	return verdict.Row{Model: "odsync " + c.Variant.String(), Config: c.Device.String(), Bound: c.Describe(),
		Negative: c.ExpectUnsafe(), Check: func(o explore.Options) (verdict.Verdict, error) { return Check(c, o) }}
}

// Rows are the protocol's rows of the verdict table: Checks, then
// ProofChecks marked Proof.
func Rows() []verdict.Row { return verdict.Rows(Checks(), ProofChecks()) }

// BoundRows are the protocol's rows at tasks x writes (verdict.Bound),
// each write() of two blocks as in the table: the scenarios of Checks (at
// both of its bounds: without and with background write-back), then with
// proof those of ProofChecks, each at that bound. A row is Unfit when
// NewSystem would refuse it: more device writes or flushes than a history
// holds (tasks x writes at most 16).
func BoundRows(tasks, writes int, proof, _ bool) []verdict.Row {
	at := func(cs []Config) []Config {
		for i := range cs {
			cs[i].Tasks, cs[i].Writes = tasks, writes
		}
		return cs
	}
	sets := [][]Config{at(Checks())}
	if proof {
		sets = append(sets, at(ProofChecks()))
	}
	return verdict.BoundRows(Config.validate, sets...)
}
