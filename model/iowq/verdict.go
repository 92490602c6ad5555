package iowq

import (
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/verdict"
)

// StandardConfig is the bound of the io-wq verdict table: a file of two
// blocks, b0 unwritten (preallocated) and b1 a hole past i_size (2 sectors).
// Worker A writes s0 (unaligned, into the unwritten block), then b1
// (aligned, extending i_size); worker B writes b0 (aligned), then s1
// (unaligned); worker C writes s3 (unaligned, past i_size); a reader reads
// s0, then s1. It has two unaligned writes into one unwritten block, an
// unaligned write racing an aligned one in flight on the same block (why
// inode_dio_wait is needed), extending writes aligned and not, and
// concurrent reads.
func StandardConfig(submit Submit, fs FS, sync bool) Config {
	return Config{
		Submit:  submit,
		FS:      fs,
		SyncDIO: sync,
		Layout:  "UH",
		Size:    2,
		Workers: [][]Write{
			{{Block: 0, Sector: 0}, {Block: 1, Aligned: true}},
			{{Block: 0, Aligned: true}, {Block: 0, Sector: 1}},
			{{Block: 1, Sector: 1}},
		},
		Reads: []int{0, 1},
	}
}

// Race2011Config is the shape of the 2011 ext4 corruption on its own:
// one unwritten block, worker A writes s0 and worker B writes s1, both
// unaligned, no reader.
func Race2011Config(submit Submit, fs FS, sync bool) Config {
	return Config{
		Submit:  submit,
		FS:      fs,
		SyncDIO: sync,
		Layout:  "U",
		Size:    2,
		Workers: [][]Write{{{Block: 0, Sector: 0}}, {{Block: 0, Sector: 1}}},
	}
}

// ExpectUnsafe says whether the checker must find a lost write at the
// standard bound (and, for the ext4-2011 mutant, at Race2011Config). The correct file systems are safe however io-wq submits.
// The ext4-2011 race needs two unaligned writes into one unwritten block in
// flight together: hashing hides it only if each write completes before the
// next is issued (SyncDIO); io-wq's asynchronous writes leave the first in
// flight when the second is issued, hashed or not. The missing
// inode_dio_wait needs an earlier write still in flight when an exclusive
// writer maps the block, which only asynchronous completion allows.
func (c Config) ExpectUnsafe() bool {
	switch c.FS {
	case MutantExt4Unwritten2011:
		return !(c.Submit == Hashed && c.SyncDIO)
	case MutantXFSNoDIOWait:
		return !c.SyncDIO
	}
	return false
}

// Completion names how writes complete: "async DIO" (io-wq) or "sync DIO".
func (c Config) Completion() string {
	if c.SyncDIO {
		return "sync DIO"
	}
	return "async DIO"
}

// Checks lists the rows of the io-wq table: at the standard bound, every
// file system hashed and unhashed with io-wq's asynchronous completion, and
// the mutants with synchronous completion too, where serialisation hides
// their bugs (the false-positive controls); then the 2011 race on its own,
// for ext4 and the ext4-2011 mutant.
func Checks() []Config {
	subs := []Submit{Hashed, Unhashed}
	var out []Config
	for _, fs := range FileSystems() {
		for _, sub := range subs {
			out = append(out, StandardConfig(sub, fs, false))
		}
	}
	for _, fs := range FileSystems() {
		if !fs.Mutant() {
			continue
		}
		for _, sub := range subs {
			out = append(out, StandardConfig(sub, fs, true))
		}
	}
	for _, sub := range subs {
		out = append(out, Race2011Config(sub, Ext4, false))
	}
	for _, sync := range []bool{false, true} {
		for _, sub := range subs {
			out = append(out, Race2011Config(sub, MutantExt4Unwritten2011, sync))
		}
	}
	return out
}

// Check explores one configuration exhaustively.
func Check(c Config, opt explore.Options) (verdict.Verdict, error) {
	sys, err := NewSystem(c)
	return verdict.Explore[State](c.Row(), sys, err, opt)
}

// Row is the configuration's row of the verdict table: "iowq <submit>", then
// "<fs>, <completion>", then the bound.
func (c Config) Row() verdict.Row {
	return verdict.Row{Model: "iowq " + c.Submit.String(), Config: c.FS.String() + ", " + c.Completion(), Bound: c.Describe(),
		Negative: c.ExpectUnsafe(), Check: func(o explore.Options) (verdict.Verdict, error) { return Check(c, o) }}
}

// Rows are the protocol's rows of the verdict table, one per Checks entry.
func Rows() []verdict.Row { return verdict.Rows(Checks(), nil) }
