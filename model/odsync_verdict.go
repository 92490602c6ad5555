package model

import (
	"fmt"

	"github.com/flushproof/flushproof/spec"
)

// ExpectUnsafe says whether the checker must find a counterexample for this
// scenario, and the comments say why.
func (c ODSyncConfig) ExpectUnsafe() bool {
	cache := c.Device.VolatileCache
	switch c.Variant {
	case ODSyncSkipSyncOnFallback:
		// With a volatile cache the fallback's page write-back completes
		// into the cache and nothing flushes it. Without one, the
		// write-back that direct_write_fallback waits for is already
		// durable, so the sync only matters for its error report: when
		// two writers share the mapping, the other one's
		// filemap_check_errors can consume AS_EIO, and only
		// generic_write_sync's errseq check would still return -EIO.
		return cache || (c.Failures && c.Tasks > 1)
	case ODSyncDropFUA:
		// Without a volatile cache a completed write is durable, FUA or
		// not: the false-positive control.
		return cache
	case ODSyncFallbackDirty:
		// Dirty pages are in host memory whatever the device is.
		return true
	}
	return false
}

// Describe renders the bound of a scenario.
func (c ODSyncConfig) Describe() string {
	s := fmt.Sprintf("%d %s x %d %s x %d %s", c.Tasks, odPlural(c.Tasks, "task"), c.Writes, odPlural(c.Writes, "write"), c.Blocks, odPlural(c.Blocks, "block"))
	if c.Failures {
		s += ", EIO"
	}
	if c.Writeback {
		s += ", background write-back"
	}
	return s
}

func odPlural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// StandardODSyncConfig is the first bound of the verdict table: two
// writers, one write() of two blocks each (so the direct part can be all,
// a prefix or nothing), EIO on any write or flush, a crash at any point.
// The writers share the device, its flushes and the mapping's AS_EIO bit.
func StandardODSyncConfig(v ODSyncVariant, dev spec.Config) ODSyncConfig {
	return ODSyncConfig{Variant: v, Device: dev, Tasks: 2, Writes: 1, Blocks: 2, Failures: true}
}

// OverwriteODSyncConfig is the second bound: one writer overwriting its two
// blocks with three write()s in a row, EIO, and the flusher thread writing
// back dirty pages whenever it likes. A crash must never bring back an
// older write()'s data.
func OverwriteODSyncConfig(v ODSyncVariant, dev spec.Config) ODSyncConfig {
	return ODSyncConfig{Variant: v, Device: dev, Tasks: 1, Writes: 3, Blocks: 2, Failures: true, Writeback: true}
}

// ODSyncChecks lists the rows of the O_DSYNC table: every variant on every
// device configuration at both bounds, and the skip-sync-on-fallback
// mutant without a cache and without EIO, where it is SAFE: the
// false-positive control showing that its no-cache verdict at the first
// bound comes from a lost write-back error, not from lost data.
func ODSyncChecks() []ODSyncConfig {
	var out []ODSyncConfig
	for _, bound := range []func(ODSyncVariant, spec.Config) ODSyncConfig{StandardODSyncConfig, OverwriteODSyncConfig} {
		for _, v := range ODSyncVariants() {
			for _, dev := range spec.Configs() {
				out = append(out, bound(v, dev))
			}
		}
	}
	c := StandardODSyncConfig(ODSyncSkipSyncOnFallback, spec.Config{})
	c.Failures = false
	return append(out, c)
}

// ODSyncProofChecks is a larger bound for the real variants: both writers
// as in StandardODSyncConfig, plus the flusher thread. A row is 0.7 to 1
// million states, about a second and 0.6 to 0.8 GB of memory.
func ODSyncProofChecks() []ODSyncConfig {
	var out []ODSyncConfig
	for _, v := range []ODSyncVariant{ODSyncBaseline, ODSyncPatched} {
		for _, dev := range spec.Configs() {
			c := StandardODSyncConfig(v, dev)
			c.Writeback = true
			out = append(out, c)
		}
	}
	return out
}

// ODSyncVerdict explores one scenario exhaustively.
func ODSyncVerdict(c ODSyncConfig, opt Options) (Verdict, error) {
	sys, err := NewODSyncSystem(c)
	if err != nil {
		return Verdict{}, err
	}
	r := Explore[ODSyncState](sys, opt)
	return newVerdict("odsync "+c.Variant.String(), c.Device.String(), c.Describe(), c.ExpectUnsafe(), r), nil
}

// ODSyncRowName is the name of a scenario's row in `flushproof check`.
func ODSyncRowName(c ODSyncConfig) string {
	return fmt.Sprintf("odsync %s %s %s", c.Variant, c.Device, c.Describe())
}

// ODSyncRows returns the rows of ODSyncChecks for the verdict table.
func ODSyncRows() []Row {
	var out []Row
	for _, c := range ODSyncChecks() {
		out = append(out, Row{Name: ODSyncRowName(c), Check: func(o Options) (Verdict, error) { return ODSyncVerdict(c, o) }})
	}
	return out
}
