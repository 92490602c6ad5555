package spec

import (
	"fmt"
	"math/bits"
)

// Permute returns c with write i+1 renamed wperm[i]+1 for every i < c.Writes()
// and flush j+1 renamed fperm[j]+1 for every j < c.Flushes(): the same history,
// numbered otherwise. Every query and every later event commutes with the
// renaming: Allowed, Obligations, DeviceEvents, WriteEnded, ... of the result
// are those of c with writes and flushes renamed, and applying the renamed
// event to the result gives the renamed contract of c after the event. A
// write submitted afterwards still gets the next number, Writes()+1, in
// both. A model checker uses it to store one numbering of each class of
// histories that differ only in the order their tasks submitted commands
// (see WriteKey for choosing one).
//
// The result need not be reachable by any history numbered in submission
// order (a renamed write may be ordered before a write with a smaller
// number); the contract's rules never rely on that order, so it stays
// exact. Only the order in which Obligations and DeviceEvents list their
// answers follows the new numbers.
//
// Permute panics if len(wperm) != c.Writes(), len(fperm) != c.Flushes(), or
// either is not a permutation of 0..n-1.
func (c *Contract) Permute(wperm, fperm []uint8) Contract {
	checkPerm("write", wperm, int(c.nw))
	checkPerm("flush", fperm, int(c.nf))
	return c.renamed(wperm, fperm, int(c.nw), int(c.nf))
}

// checkPerm panics unless perm is a permutation of 0..n-1: a renaming that
// merged two commands or left a number out would make a contract no
// history has.
func checkPerm(what string, perm []uint8, n int) {
	if len(perm) != n {
		panic(fmt.Sprintf("spec: Permute: %d %s numbers for %d %ses", len(perm), what, n, what))
	}
	var seen uint32 // n <= MaxWrites = 32 (MaxFlushes is smaller)
	for i, p := range perm {
		if int(p) >= n || seen&(1<<p) != 0 {
			panic(fmt.Sprintf("spec: Permute: %s renaming %v is not a permutation of 0..%d (entry %d)", what, perm, n-1, i))
		}
		seen |= 1 << p
	}
}

// renamed is c with write i+1 renamed wmap[i]+1 and flush j+1 renamed
// fmap[j]+1, the commands mapped to 0xff dropped (Forget), nw and nf
// those kept. It starts from the fields that name no write or flush (cfg,
// crashed) and rebuilds every other one, so that an entry at or beyond the
// new counts stays zero and the result is comparable with ==. A field
// added to Contract must be added here too: until it is, the identity
// check of TestPermuteCommutes fails.
func (c *Contract) renamed(wmap, fmap []uint8, nw, nf int) Contract {
	w := func(m uint32) uint32 { return renameMask(m, wmap) }
	out := Contract{cfg: c.cfg, crashed: c.crashed, nw: uint8(nw), nf: uint8(nf)}
	out.wFUA = w(c.wFUA)
	out.wPre = w(c.wPre)
	out.wPreReq = w(c.wPreReq)
	out.unsent = w(c.unsent)
	out.ended = w(c.ended)
	out.completed = w(c.completed)
	out.durable = w(c.durable)
	for i := 0; i < int(c.nw); i++ {
		to := wmap[i]
		if to == 0xff {
			continue
		}
		out.wBlocks[to] = c.wBlocks[i]
		out.wState[to] = c.wState[i]
		out.orderedBefore[to] = w(c.orderedBefore[i])
		out.pfCover[to] = w(c.pfCover[i])
		out.preCover[to] = w(c.preCover[i])
		out.durableBy[to] = renameDurableBy(c.durableBy[i], wmap, fmap)
	}
	for j := 0; j < int(c.nf); j++ {
		if to := fmap[j]; to != 0xff {
			out.fState[to] = c.fState[j]
			out.fCover[to] = w(c.fCover[j])
		}
	}
	return out
}

// renameMask renames the writes of a bit mask: bit i becomes bit
// wmap[i], or goes if wmap[i] is 0xff.
func renameMask(m uint32, wmap []uint8) uint32 {
	var out uint32
	for ; m != 0; m &= m - 1 {
		if to := wmap[bits.TrailingZeros32(m)]; to != 0xff {
			out |= 1 << to
		}
	}
	return out
}

// renameDurableBy renames the command a durableBy entry names, or gives
// durableByForgotten if that command is dropped; the kind of cause (own
// completion, flush, post-flush, preflush) is kept, since it is encoded
// in the range of the value, not in the number.
func renameDurableBy(by int8, wmap, fmap []uint8) int8 {
	var to uint8
	switch {
	case by == durableByForgotten: // names no command
		return by
	case by > 0: // flush Fk
		if to = fmap[by-1]; to == 0xff {
			return durableByForgotten
		}
		return int8(to) + 1
	case by < -MaxWrites: // preflush of write Wk
		if to = wmap[-int(by)-MaxWrites-1]; to == 0xff {
			return durableByForgotten
		}
		return -int8(MaxWrites + int(to) + 1)
	case by < 0: // post-flush of write Wk
		if to = wmap[-by-1]; to == 0xff {
			return durableByForgotten
		}
		return -int8(to) - 1
	}
	return 0 // its own completion, or not durable
}

// The causes of durability WriteKey tells apart. Only the kind of the cause
// goes into the key: the command it names would tie the key to a numbering.
const (
	byNone         = iota // not durable
	byOwn                 // its own completion (FUA, or no volatile cache)
	byOwnPostFlush        // its own post-flush (emulated FUA)
	byFlush               // a flush
	byPostFlush           // the post-flush of another FUA write
	byPreflush            // the preflush of a write
	byForgotten           // a flush Forget no longer tracks
)

// WriteKey summarises write w's (1-based) own state: its blocks, its
// command state, FUA and REQ_PREFLUSH (as the device sees them and as
// requested), whether its data is unsent, whether it ended, completed, is
// durable, and what kind of cause made it durable. The key names no other
// write or flush, so it does not depend on the numbering:
// p.WriteKey(int(wperm[w-1])+1) == c.WriteKey(w) for p = c.Permute(wperm,
// fperm). A model checker sorts writes by it to choose one numbering per
// class of histories. Two writes with equal keys may still differ in their
// relations to other writes (which writes are ordered before them, which a
// flush or preflush covers), so sorting by key alone does not always give
// one numbering per class. The key is 0 for a write not submitted; beyond
// equality and order, its layout means nothing.
func (c *Contract) WriteKey(w int) uint64 {
	if w < 1 || w > int(c.nw) {
		return 0
	}
	i := w - 1
	flag := func(m uint32, at uint) uint64 { return uint64(m>>i&1) << at }
	by := byNone
	if c.durable&(1<<i) != 0 {
		switch d := c.durableBy[i]; {
		case d == durableByForgotten:
			by = byForgotten
		case d > 0:
			by = byFlush
		case d < -MaxWrites:
			by = byPreflush
		case d < 0 && int(-d) == w:
			by = byOwnPostFlush
		case d < 0:
			by = byPostFlush
		default:
			by = byOwn
		}
	}
	// The command state is the most significant part, so that sorting
	// groups writes by progress; the blocks are the least.
	return uint64(c.wState[i])<<24 | uint64(by)<<16 |
		flag(c.wFUA, 15) | flag(c.wPre, 14) | flag(c.wPreReq, 13) | flag(c.unsent, 12) |
		flag(c.ended, 11) | flag(c.completed, 10) | flag(c.durable, 9) |
		uint64(c.wBlocks[i])
}

// FlushKey summarises flush f's (1-based) own state, its command state, as
// WriteKey does for a write: it does not depend on the numbering, and two
// flushes with equal keys may still differ in the writes they cover. The key
// is 0 for a flush not submitted.
func (c *Contract) FlushKey(f int) uint64 {
	if f < 1 || f > int(c.nf) {
		return 0
	}
	return uint64(c.fState[f-1])
}
