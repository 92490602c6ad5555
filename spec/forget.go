package spec

import (
	"math"
	"math/bits"
)

// Forgetting the past of a contract. A model checker that stores Contract
// values in its states wants two runs that reach the same future through
// different pasts to be one state. Normalized clears what no query can
// read again; Forget also drops whole commands that can never matter
// again, and renumbers the rest.
//
// "Read again" is judged against what the checker asks of a contract:
// Apply (every later event, possible or not: both contracts accept or both
// refuse it, and end up equivalent again), DeviceEvents, Allowed, Durable,
// WriteEnded, FlushEnded, WriteBlocks, Writes, Flushes, Config, Crashed, and
// the question "is write w durable, or ordered before a durable write to
// block b" (the checker's "value v or newer data survives"), which reads
// OrderedBefore(w, d) for writes d on b that are durable. Obligations and
// Broken are kept exact by Normalized (durableBy is not touched, and
// OrderedBefore is kept for every pair Broken and Allowed read).
//
// Both read the same invariants of every contract reachable by Apply (and
// of its renamings by Permute and PermuteBlocks, which keep them):
//
//   - durable ⊆ completed, and a durable write never stops being durable;
//     makeDurable(ws, by) changes nothing about a write of ws that is
//     already durable (neither durable nor durableBy).
//   - orderedBefore[i] is the set of writes that had ended at write i+1's
//     ordering time t(i+1) (its submission, or for a write with
//     REQ_PREFLUSH on a volatile cache the end of its preflush, where
//     WritePreflushed overwrites it). Writes end after their ordering
//     time, and ended only grows, so the relation is transitive: x ∈
//     orderedBefore[w] and w ∈ orderedBefore[d] imply x ∈ orderedBefore[d]
//     (x ended before t(w) < end(w) < t(d)); and it is a strict order by
//     end time (x ∈ orderedBefore[d] implies end(x) < end(d)).

// durableByForgotten is the durableBy of a write made durable by a flush,
// a preflush or a post-flush that Forget dropped: the write is durable,
// and the command that made it so ended and is no longer tracked. Only
// Forget sets it, never on a write made durable by its own completion
// (durableBy 0) or by its own post-flush (which names the write itself,
// kept). The value is outside every range durableBy otherwise uses (1..
// MaxFlushes, -1..-MaxWrites, -MaxWrites-1..-2*MaxWrites).
//
// Three switches on durableBy know it, each with a first case
// "by == durableByForgotten": Obligations (contract.go) renders it as
// durableByForgottenText, renameDurableBy (permute.go) returns it
// unchanged (it names no command), and WriteKey (permute.go) gives it a
// kind of its own, byForgotten.
const durableByForgotten int8 = math.MaxInt8

// durableByForgottenText is how Obligations renders durableByForgotten.
const durableByForgottenText = "a flush that ended and is no longer tracked (forgotten)"

// Normalized returns the contract with every piece of history cleared that
// no query (see above) can ever read again, so that histories that differ
// only there become one value. The result answers every query as c does,
// now and after every later sequence of events: Allowed, DeviceEvents,
// Durable, WriteEnded, FlushEnded, WriteBlocks, Obligations and Broken
// (exactly, texts included), OrderedBefore(w1, w2) whenever w1 is 0 or
// shares a block with w2 and w2 is durable or may still become durable;
// c.Apply(e) and c.Normalized().Apply(e) both succeed or both fail, and
// normalizing their results gives the same value. Normalized is
// idempotent and commutes with Permute and PermuteBlocks (every rule is
// stated without numbers). WriteKey of the result may differ from c's
// (flags of ended writes, ended and completed after a crash are
// cleared), but is again a function of the result, so sorting by it
// still does not depend on the numbering.
//
// It does not change durableBy: Obligations renders it for every durable
// write, forever. Forget, which drops the commands durableBy names,
// replaces the names it drops with durableByForgotten.
//
// The rules, each with the argument why nothing reads what it clears:
//
//  1. A flush's cover (fCover) is read only by its FlushComplete, so only
//     while the flush is in flight and no crash has happened (after a
//     crash Apply refuses every event but Read). Otherwise it is cleared.
//  2. A write's post-flush cover (pfCover) is read only by WriteComplete
//     from cmdPostFlush (from cmdInFlight, WriteComplete overwrites it
//     with the write alone before reading it). It is kept only in
//     cmdPostFlush, before a crash.
//  3. A write's preflush cover (preCover) is read only by WritePreflushed
//     from cmdPreflush on a volatile cache (without one the flag is
//     stripped and WritePreflushed reads nothing). It is kept only in
//     cmdPreflush, before a crash.
//  4. Within a cover that is kept, the bits of durable writes are cleared:
//     makeDurable changes nothing about a write already durable, and
//     durability is never lost.
//  5. orderedBefore[i] is read by Allowed(b) only if write i+1 is durable,
//     and then only its bits on b's writes, for each block b write i+1
//     wrote (allowed is a subset of b's writes); Broken and the checker's
//     question read OrderedBefore(w, d) only for w and d both on the
//     block asked about, d durable. So each row keeps only the writes
//     that share a block with its write, and a row is cleared altogether
//     when its write is not durable and can never become durable before
//     the row is overwritten: a write that failed without completing its
//     data (only completed writes are covered: durable ⊆ completed, and a
//     failed write never completes), a write whose preflush is in flight
//     and that has not completed (WritePreflushed overwrites its row
//     before it can complete), and, after a crash, every write not
//     durable (no event but Read is accepted any more).
//  6. The flags wFUA, wPre and wPreReq of an ended write (cmdOK or
//     cmdFailed): wFUA is read by DeviceEvents, WriteDataDone and
//     WriteComplete only for a write in flight or in its post-flush,
//     wPreReq by WritePreflushed only for a write in flight, wPre by no
//     query but WriteKey. An ended write never takes another event.
//  7. After a crash, ended and completed: they are read only by later
//     submissions (the new write's orderedBefore and preCover, a flush's
//     cover) and WriteDataDone, which Apply refuses after a crash.
//
// Kept, because a query reads them: the blocks, states and unsent bits of
// every write (Allowed, WriteEnded, DeviceEvents, WriteBlocks), durable
// and durableBy, the state of every flush, ended and completed before a
// crash (ended is a function of the write states anyway; completed is
// not, for a write that failed in its post-flush, whose data completed
// and which a later flush makes durable), and the bits of every write in
// a live row or cover, superseded or not (Durable of a superseded write
// can still change; Forget is the place to drop it).
func (c *Contract) Normalized() Contract {
	out := *c
	nw, nf := int(c.nw), int(c.nf)
	live := !c.crashed // later events other than Read are still accepted

	var onBlock [MaxBlocks]uint32
	for i := 0; i < nw; i++ {
		for bm := c.wBlocks[i]; bm != 0; bm &= bm - 1 {
			onBlock[bits.TrailingZeros8(bm)] |= 1 << i
		}
	}
	for i := 0; i < nw; i++ {
		bit := uint32(1) << i
		st := c.wState[i]
		// Rules 2, 3, 4.
		if !live || st != cmdPostFlush {
			out.pfCover[i] = 0
		} else {
			out.pfCover[i] &^= c.durable
		}
		if !live || st != cmdPreflush || !c.cfg.VolatileCache {
			out.preCover[i] = 0
		} else {
			out.preCover[i] &^= c.durable
		}
		// Rule 5.
		var share uint32
		for bm := c.wBlocks[i]; bm != 0; bm &= bm - 1 {
			share |= onBlock[bits.TrailingZeros8(bm)]
		}
		rowLive := c.durable&bit != 0 ||
			live && (c.completed&bit != 0 || st == cmdInFlight)
		if rowLive {
			out.orderedBefore[i] &= share
		} else {
			out.orderedBefore[i] = 0
		}
		// Rule 6.
		if st == cmdOK || st == cmdFailed {
			out.wFUA &^= bit
			out.wPre &^= bit
			out.wPreReq &^= bit
		}
	}
	// Rules 1 and 4.
	for j := 0; j < nf; j++ {
		if !live || c.fState[j] != cmdInFlight {
			out.fCover[j] = 0
		} else {
			out.fCover[j] &^= c.durable
		}
	}
	// Rule 7.
	if !live {
		out.ended, out.completed = 0, 0
	}
	return out
}

// superseded returns, per block b, the writes ordered before a durable
// write to b: those Allowed(b) excludes for good, whatever happens later.
func (c *Contract) superseded() (sup [MaxBlocks]uint32) {
	for d := 0; d < int(c.nw); d++ {
		if c.durable&(1<<d) == 0 {
			continue
		}
		for bm := c.wBlocks[d]; bm != 0; bm &= bm - 1 {
			b := bits.TrailingZeros8(bm)
			sup[b] |= c.orderedBefore[d]
		}
	}
	for b := range sup {
		var on uint32
		for i := 0; i < int(c.nw); i++ {
			if c.wBlocks[i]&(1<<b) != 0 {
				on |= 1 << i
			}
		}
		sup[b] &= on
	}
	return sup
}

// Forget returns the contract with the writes and flushes dropped that can
// never matter again, the others renumbered in their order, normalized
// (Normalized); and, for each old write i+1 and old flush j+1, its new
// number minus 1, or 0xff if it was dropped.
//
// A write is dropped when it has ended for good (cmdOK or cmdFailed: its
// data, post-flush and preflush no longer pending) and, on every block it
// wrote, is ordered before a durable write to that block. Then:
//
//   - Allowed never includes it again (a durable write stays durable and
//     its orderedBefore does not change), and Allowed(b).Initial stays
//     false on its blocks: the durable write on b that ended last is not
//     ordered before another durable write to b (the order is strict by
//     end time), so it is kept.
//   - Whatever later happens to it changes nothing another write's
//     answers read. A pending or later cover may still make it durable:
//     its orderedBefore then joins what Allowed excludes, but on each
//     block b only with writes already ordered before the durable write
//     that supersedes it (transitivity); makeDurable of a cover that
//     includes it does the same for the others as without it. Its bits in
//     ended and completed put it into later rows and covers, where only
//     its own answers would read it.
//   - DeviceEvents never offers an event for it, and every event naming it
//     is refused (it has ended).
//
// So only the answers about the write itself are lost. Its WriteEnded
// answer is final. The checker's question "is w durable, or ordered
// before a durable write to b", for each block b it wrote, is true and
// stays true forever; Durable(w) alone is NOT kept: a superseded write
// that is not durable may still become durable (a pending or later flush
// covers it), and a durable one stays durable. A caller that needs them
// must record them before dropping: the values it wrote survive, or newer
// data does, on each of its blocks; a thread still waiting for the write
// must take its WriteEnded answer from c.
//
// A flush is dropped as soon as it has ended (cmdOK or cmdFailed): nothing
// reads an ended flush's cover, DeviceEvents offers nothing for it and
// every event naming it is refused. FlushEnded of a dropped flush must not
// be asked of the result (its number is gone, or names another flush): a
// caller that still waits for it must take the answer from c before
// renaming its references by the returned map.
//
// A write whose durableBy named a dropped flush, or the preflush or
// post-flush of a dropped write, gets durableByForgotten: it is durable,
// made so by a flush that is no longer tracked.
//
// The result answers every query about a kept command as c does (renamed),
// Allowed(b) is c's renamed (the dropped writes were not in it), and both
// stay so through every later event, renamed: applying the renamed event
// to the result and forgetting gives exactly Forget of c after the event.
// A write submitted to the result gets number Writes()+1 of the result,
// smaller than c's: a history longer than MaxWrites fits if old writes
// are forgotten in time.
func (c *Contract) Forget() (Contract, []uint8, []uint8) {
	n := c.Normalized()
	ws, fs := n.forgettable()
	return n.drop(ws, fs)
}

// forgettable returns the writes and the flushes Forget drops (bit i =
// write i+1, bit j = flush j+1).
func (c *Contract) forgettable() (ws, fs uint32) {
	sup := c.superseded()
	for i := 0; i < int(c.nw); i++ {
		drop := c.wState[i] == cmdOK || c.wState[i] == cmdFailed
		for bm := c.wBlocks[i]; drop && bm != 0; bm &= bm - 1 {
			drop = sup[bits.TrailingZeros8(bm)]&(1<<i) != 0
		}
		if drop {
			ws |= 1 << i
		}
	}
	for j := 0; j < int(c.nf); j++ {
		if c.fState[j] == cmdOK || c.fState[j] == cmdFailed {
			fs |= 1 << j
		}
	}
	return ws, fs
}

// drop removes the writes ws and the flushes fs, numbering the others in
// their order, and returns the maps Forget documents. The names of dropped
// commands in durableBy become durableByForgotten.
func (c *Contract) drop(ws, fs uint32) (Contract, []uint8, []uint8) {
	nw, nf := int(c.nw), int(c.nf)
	wmap := make([]uint8, nw)
	k := 0
	for i := 0; i < nw; i++ {
		if ws&(1<<i) != 0 {
			wmap[i] = 0xff
			continue
		}
		wmap[i] = uint8(k)
		k++
	}
	fmap := make([]uint8, nf)
	kf := 0
	for j := 0; j < nf; j++ {
		if fs&(1<<j) != 0 {
			fmap[j] = 0xff
			continue
		}
		fmap[j] = uint8(kf)
		kf++
	}
	if k == nw && kf == nf {
		return *c, wmap, fmap
	}
	return c.renamed(wmap, fmap, k, kf), wmap, fmap
}

// durableByForgotten must stay outside the flush numbers (a compile
// error here if MaxFlushes grows to it).
const _ = uint8(int(durableByForgotten) - MaxFlushes - 1)
