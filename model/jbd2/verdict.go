package jbd2

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
	case NoBarrier:
		// The journal blocks and the commit block complete into the
		// volatile cache and nothing flushes it. Without a cache a
		// completed write is durable and the commit block is sent only
		// after the journal blocks completed: the false-positive control.
		return cache
	case AsyncCommit:
		// The flush after the commit block is what makes the transaction
		// durable, and commit.c calls blkdev_issue_flush without looking
		// at its result: when it fails with EIO the commit returns as if
		// it had succeeded. Without EIO, or without a cache (an empty
		// flush cannot fail), it must be SAFE.
		return cache && c.Failures
	case MutantAsyncNoChecksum:
		// The commit block may reach the disk before a metadata block, on
		// any device, and without a checksum recovery replays what it
		// finds. With the descriptor alone a missing descriptor ends the
		// log before the commit block, so only the ignored flush error is
		// left.
		return c.Blocks > 1 || (cache && c.Failures)
	case MutantDropPreflush:
		// FUA makes the commit block durable, not the journal blocks in
		// the cache before it. Without a cache both flags are stripped
		// anyway: the false-positive control. With emulated FUA the
		// post-flush also covers the journal blocks (docs/semantics.md,
		// rule 3), so the commit returns only once they are durable, and
		// before that a commit block without its metadata is replayed
		// partially, which needs a metadata block: with the descriptor
		// alone, a missing descriptor ends the log first.
		return cache && (c.Device.NativeFUA || c.Blocks > 1)
	}
	return false
}

// Describe renders the bound of a scenario.
func (c Config) Describe() string {
	s := fmt.Sprintf("%d %s x %d journal %s", c.Transactions, verdict.Plural(c.Transactions, "transaction"), c.Blocks, verdict.Plural(c.Blocks, "block"))
	if c.Failures {
		s += ", EIO"
	}
	return s
}

// StandardConfig is the bound of the verdict table: two transactions
// committed one after the other, each a descriptor and one metadata copy
// plus its commit block (six log blocks), EIO on any write or flush, a
// crash at any point.
func StandardConfig(v Variant, dev spec.Config) Config {
	return Config{Variant: v, Device: dev, Transactions: 2, Blocks: 2, Failures: true}
}

// Checks lists the rows of the jbd2 table: every variant on every device
// configuration at the standard bound, and async_commit on the cached
// devices without EIO, where it must be SAFE: the rows that show its
// verdict with EIO comes from the ignored flush error alone.
func Checks() []Config {
	var out []Config
	for _, v := range Variants() {
		for _, dev := range spec.Configs() {
			out = append(out, StandardConfig(v, dev))
		}
	}
	for _, dev := range []spec.Config{spec.CacheFUA, spec.CacheEmulatedFUA} {
		c := StandardConfig(AsyncCommit, dev)
		c.Failures = false
		out = append(out, c)
	}
	return out
}

// ProofChecks is a larger bound for the real variants: two transactions
// of three journal blocks each, eight log blocks in all.
func ProofChecks() []Config {
	var out []Config
	for _, v := range []Variant{Barrier, NoBarrier, AsyncCommit} {
		for _, dev := range spec.Configs() {
			c := StandardConfig(v, dev)
			c.Blocks = 3
			out = append(out, c)
		}
	}
	return out
}

// Check explores one scenario exhaustively.
func Check(c Config, opt explore.Options) (verdict.Verdict, error) {
	sys, err := NewSystem(c)
	if err != nil {
		return verdict.Verdict{}, err
	}
	return verdict.FromResult(c.Row(), explore.Explore[State](sys, opt)), nil
}

// Row is the scenario's row of the verdict table.
func (c Config) Row() verdict.Row {
	return verdict.Row{Model: "jbd2 " + c.Variant.String(), Config: c.Device.String(), Bound: c.Describe(),
		Negative: c.ExpectUnsafe(), Check: func(o explore.Options) (verdict.Verdict, error) { return Check(c, o) }}
}

// Rows are the protocol's rows of the verdict table: Checks, then
// ProofChecks marked Proof.
func Rows() []verdict.Row {
	var out []verdict.Row
	for _, c := range Checks() {
		out = append(out, c.Row())
	}
	for _, c := range ProofChecks() {
		r := c.Row()
		r.Proof = true
		out = append(out, r)
	}
	return out
}
