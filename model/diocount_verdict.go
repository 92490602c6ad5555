package model

import (
	"fmt"
	"strings"
)

// ExpectUnsafe says whether the checker must find a counterexample for this
// configuration: skipping the callee's count for AIO breaks the protocol
// when a writer does AIO (its bio outlives the caller's count, whether or
// not i_mutex is held across the I/O); counting after dropping i_mutex
// breaks it on the overwrite path, for every kind. Without a truncate
// nothing is ever freed.
func (c DIOCountConfig) ExpectUnsafe() bool {
	if c.NoTruncate {
		return false
	}
	switch c.Variant {
	case DIOCountMutantSkipAsync:
		for _, k := range c.Writers {
			if k == DIOCountAIO {
				return true
			}
		}
	case DIOCountMutantBeginAfterUnlock:
		return !c.HoldLock
	}
	return false
}

// Kinds renders the writers' kinds, e.g. "dax" or "dax+aio-dio".
func (c DIOCountConfig) Kinds() string {
	var ks []string
	seen := map[DIOCountKind]bool{}
	for _, k := range c.Writers {
		if !seen[k] {
			seen[k] = true
			ks = append(ks, k.String())
		}
	}
	return strings.Join(ks, "+")
}

// Describe renders the bound of a configuration.
func (c DIOCountConfig) Describe() string {
	s := fmt.Sprintf("%d %s x %d %s", len(c.Writers), plural(len(c.Writers), "writer"), c.IOs, plural(c.IOs, "I/O"))
	switch {
	case c.NoTruncate:
	case c.TruncateAfter > 0:
		s += fmt.Sprintf(", truncate after %d %s", c.TruncateAfter, plural(c.TruncateAfter, "write"))
	default:
		s += ", truncate"
	}
	if c.HoldLock {
		return s + ", i_mutex held"
	}
	return s + ", overwrite"
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// Name is the configuration's row name in the verdict table:
// "diocount <variant> <kinds>/<memory> <bound>".
func (c DIOCountConfig) Name() string {
	return fmt.Sprintf("diocount %s %s/%s %s", c.Variant, c.Kinds(), c.Memory, c.Describe())
}

// StandardDIOCountConfig is the bound of the verdict table: two writers of
// the given kinds, one direct write each, the overwrite path (i_mutex
// dropped during the I/O), and a truncate.
func StandardDIOCountConfig(v DIOCountVariant, m MemoryModel, kinds ...DIOCountKind) DIOCountConfig {
	return DIOCountConfig{Variant: v, Memory: m, Writers: kinds, IOs: 1}
}

// DIOCountChecks lists the rows of the DIO-count table: every variant under
// every memory model with two writers of one kind (DAX, synchronous block
// DIO, AIO), with a DAX and an AIO writer side by side, with i_mutex held
// across an AIO (not an overwrite: the bio still outlives the lock), with
// one writer doing two AIOs in a row, and at the larger bound of three
// writers (DAX, synchronous block DIO, AIO) x 2 direct writes each under SC
// and TSO (Relaxed keeps too many stores there for Memory's bound). Relaxed rows whose stores to
// i_dio_count do not fit Memory's bound (NewDIOCountSystem refuses them)
// are left out: mutant-begin-after-unlock with block DIO, whose counting
// after the unlock leaves every store since the last unlock readable.
func DIOCountChecks() []DIOCountConfig {
	var out []DIOCountConfig
	for _, v := range DIOCountVariants() {
		for _, k := range DIOCountKinds() {
			for _, m := range MemoryModels() {
				c := StandardDIOCountConfig(v, m, k, k)
				if _, err := NewDIOCountSystem(c); err != nil {
					continue
				}
				out = append(out, c)
			}
		}
	}
	for _, v := range DIOCountVariants() {
		for _, m := range MemoryModels() {
			c := StandardDIOCountConfig(v, m, DIOCountDAX, DIOCountAIO)
			if _, err := NewDIOCountSystem(c); err != nil {
				continue
			}
			out = append(out, c)
		}
	}
	for _, v := range DIOCountVariants() {
		c := StandardDIOCountConfig(v, Relaxed, DIOCountAIO, DIOCountAIO)
		c.HoldLock = true
		out = append(out, c)
	}
	for _, v := range DIOCountVariants() {
		c := StandardDIOCountConfig(v, Relaxed, DIOCountAIO)
		c.IOs = 2
		out = append(out, c)
	}
	for _, v := range DIOCountVariants() {
		for _, m := range []MemoryModel{SC, TSO} {
			c := StandardDIOCountConfig(v, m, DIOCountDAX, DIOCountSyncDIO, DIOCountAIO)
			c.IOs = 2
			out = append(out, c)
		}
	}
	return out
}

// DIOCountVerdict explores one configuration exhaustively.
func DIOCountVerdict(c DIOCountConfig, opt Options) (Verdict, error) {
	sys, err := NewDIOCountSystem(c)
	if err != nil {
		return Verdict{}, err
	}
	r := Explore[DIOCountState](sys, opt)
	return newVerdict("diocount "+c.Variant.String(), c.Kinds()+"/"+c.Memory.String(), c.Describe(), c.ExpectUnsafe(), r), nil
}

// DIOCountRows are the rows of `flushproof check` for this protocol, one per
// configuration of DIOCountChecks, in the same order.
func DIOCountRows() []Row {
	var out []Row
	for _, c := range DIOCountChecks() {
		out = append(out, Row{Name: c.Name(), Check: func(o Options) (Verdict, error) { return DIOCountVerdict(c, o) }})
	}
	return out
}
