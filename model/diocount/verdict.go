package diocount

import (
	"fmt"
	"strings"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/model/verdict"
)

// ExpectUnsafe says whether the checker must find a counterexample for this
// configuration: skipping the callee's count for AIO breaks the protocol
// when a writer does AIO (its bio outlives the caller's count, whether or
// not i_mutex is held across the I/O); counting after dropping i_mutex
// breaks it on the overwrite path, for every kind. Without a truncate
// nothing is ever freed.
func (c Config) ExpectUnsafe() bool {
	if c.NoTruncate {
		return false
	}
	switch c.Variant {
	case MutantSkipAsync:
		for _, k := range c.Writers {
			if k == AIO {
				return true
			}
		}
	case MutantBeginAfterUnlock:
		return !c.HoldLock
	}
	return false
}

// Kinds renders the writers' kinds, e.g. "dax" or "dax+aio-dio".
func (c Config) Kinds() string {
	var ks []string
	seen := map[Kind]bool{}
	for _, k := range c.Writers {
		if !seen[k] {
			seen[k] = true
			ks = append(ks, k.String())
		}
	}
	return strings.Join(ks, "+")
}

// Describe renders the bound of a configuration.
func (c Config) Describe() string {
	s := fmt.Sprintf("%d %s x %d %s", len(c.Writers), verdict.Plural(len(c.Writers), "writer"), c.IOs, verdict.Plural(c.IOs, "I/O"))
	switch {
	case c.NoTruncate:
	case c.TruncateAfter > 0:
		s += fmt.Sprintf(", truncate after %d %s", c.TruncateAfter, verdict.Plural(c.TruncateAfter, "write"))
	default:
		s += ", truncate"
	}
	if c.HoldLock {
		return s + ", i_mutex held"
	}
	return s + ", overwrite"
}

// StandardConfig is the bound of the verdict table: two writers of
// the given kinds, one direct write each, the overwrite path (i_mutex
// dropped during the I/O), and a truncate.
func StandardConfig(v Variant, m memory.Model, kinds ...Kind) Config {
	return Config{Variant: v, Memory: m, Writers: kinds, IOs: 1}
}

// Models are the memory models the protocol is checked under: those whose
// operations have one result (memory.Models) and LKMM.
func Models() []memory.Model { return append(memory.Models(), memory.LKMM) }

// Checks lists the rows of the DIO-count table: every variant under
// every memory model with two writers of one kind (DAX, synchronous block
// DIO, AIO), with a DAX and an AIO writer side by side, with i_mutex held
// across an AIO (not an overwrite: the bio still outlives the lock), with
// one writer doing two AIOs in a row, and at the larger bound of three
// writers (DAX, synchronous block DIO, AIO) x 2 direct writes each under SC
// and TSO. That bound fits Memory under Relaxed and LKMM too, but costs
// 20 to 50 times SC's states there (Check of patched's config at that
// bound: SC 36,128 states, Relaxed 762,007, LKMM 1,875,958 in 7 s), so
// the default run leaves it out.
// A row whose stores to i_dio_count would not fit Memory's bound
// (NewSystem refuses it) is left out; none of these does since Memory
// keeps 16 live stores a location.
func Checks() []Config {
	var out []Config
	for _, v := range Variants() {
		for _, k := range Kinds() {
			for _, m := range Models() {
				c := StandardConfig(v, m, k, k)
				if _, err := NewSystem(c); err != nil {
					continue
				}
				out = append(out, c)
			}
		}
	}
	for _, v := range Variants() {
		for _, m := range Models() {
			c := StandardConfig(v, m, DAX, AIO)
			if _, err := NewSystem(c); err != nil {
				continue
			}
			out = append(out, c)
		}
	}
	for _, v := range Variants() {
		for _, m := range []memory.Model{memory.Relaxed, memory.LKMM} {
			c := StandardConfig(v, m, AIO, AIO)
			c.HoldLock = true
			out = append(out, c)
		}
	}
	for _, v := range Variants() {
		for _, m := range []memory.Model{memory.Relaxed, memory.LKMM} {
			c := StandardConfig(v, m, AIO)
			c.IOs = 2
			out = append(out, c)
		}
	}
	for _, v := range Variants() {
		for _, m := range []memory.Model{memory.SC, memory.TSO} {
			c := StandardConfig(v, m, DAX, SyncDIO, AIO)
			c.IOs = 2
			out = append(out, c)
		}
	}
	return out
}

// Check explores one configuration exhaustively.
func Check(c Config, opt explore.Options) (verdict.Verdict, error) {
	sys, err := NewSystem(c)
	return verdict.Explore[State](c.Row(), sys, err, opt)
}

// Row is the configuration's row of the verdict table:
// "diocount <variant>", "<kinds>/<memory>", the bound.
func (c Config) Row() verdict.Row {
	return verdict.Row{Model: "diocount " + c.Variant.String(), Config: c.Kinds() + "/" + c.Memory.String(), Bound: c.Describe(),
		Negative: c.ExpectUnsafe(), Check: func(o explore.Options) (verdict.Verdict, error) { return Check(c, o) }}
}

// Rows are the protocol's rows of the verdict table, one per Checks entry.
func Rows() []verdict.Row { return verdict.Rows(Checks(), nil) }
