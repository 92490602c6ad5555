package spec

import (
	"fmt"
	"math/bits"
	"strings"

	"github.com/flushproof/flushproof/internal/mutate"
)

// Contract is the device contract as an incremental monitor: feed it a
// history with Apply and ask, at any point, what a crash may leave
// (Allowed) and what must survive (Obligations).
//
// The rules (docs/semantics.md explains them with their sources):
//
//  1. Commands are submitted and complete later, in any order.
//  2. A flush covers exactly the writes that had completed when the flush was
//     submitted; when it completes successfully, the covered writes are
//     durable. writeback_cache_control.rst: "the filesystem will have to
//     issue an explicit cache flush ... for data already written" and
//     REQ_PREFLUSH "guarantees that previously completed write requests are on
//     non-volatile storage"; a write still in flight at submission is not
//     "previously completed", even if it completes before the flush does.
//  3. A FUA write is durable when it completes successfully
//     (writeback_cache_control.rst: "the I/O completion for this request is
//     only signaled after the data has been committed to non-volatile storage").
//     Without native FUA the block layer sends a post-flush once the data
//     completed (blk-flush.c, REQ_FSEQ_POSTFLUSH) and signals completion after
//     it; that post-flush is an ordinary flush, so it also covers every other
//     write completed before it was submitted.
//  4. Without a volatile cache, REQ_FUA and REQ_PREFLUSH are stripped
//     (blk-flush.c, blk_flush_policy) and a completed write is durable; an
//     empty flush completes at once (blk_insert_flush ends it with success).
//  5. Writes and flushes may fail with EIO. A failed flush guarantees nothing;
//     a failed write is never durable but its data may have reached the media.
//  6. Crash: blocks are independent. W1 is ordered before W2 when W1 ended
//     (completed or failed; for an emulated FUA write, when its data
//     completed) before W2 was submitted (for a write with REQ_PREFLUSH on
//     a volatile cache: before its data was sent, rule 7). After a crash a block
//     holds the data of a write W submitted to it, or its initial content,
//     such that no durable write to that block is ordered after W (for the
//     initial content: no durable write to that block at all).
//  7. A write may carry REQ_PREFLUSH. blk-flush.c runs it as a PREFLUSH
//     step, then the DATA step (blk_insert_flush queues it for a flush;
//     flush_end_io -> blk_flush_complete_seq moves it on to
//     REQ_FSEQ_DATA, which sends the data, only once that flush
//     completed; an error in any step ends the request with that error,
//     its later steps not run). Its preflush covers the writes that had
//     completed when the write was submitted, as a flush submitted then
//     would (rule 2). The event WritePreflushed says the preflush
//     completed: the covered writes are durable from then on, and only
//     from then on may the write's data reach the device, so before it a
//     crash cannot leave the write's data. This ties blocks together: a
//     crash that leaves the write's data also keeps the writes its
//     preflush covers. A write that fails before WritePreflushed (its
//     preflush failed) guarantees nothing and never lands. With FUA too
//     the write itself is durable at completion (rule 3). Without a
//     volatile cache REQ_PREFLUSH is stripped (rule 4): the data is sent
//     at once and WritePreflushed, if given, changes nothing.
//
// A Contract is a comparable value of fixed size, so explorers can use it as
// (part of) a map key. The zero value is not ready: use NewContract.
type Contract struct {
	cfg     Config
	crashed bool
	nw, nf  uint8

	wBlocks [MaxWrites]uint8
	wState  [MaxWrites]cmdState
	wFUA    uint32 // FUA as the device sees it: stripped without a volatile cache
	wPre    uint32 // REQ_PREFLUSH as the device sees it: stripped without a volatile cache
	wPreReq uint32 // REQ_PREFLUSH as the submitter asked for it
	// unsent: writes whose data the block layer has not sent (their
	// preflush is in flight, or failed): a crash cannot leave it (rule 7).
	unsent uint32

	// orderedBefore[i]: the writes that had ended when write i+1 was
	// submitted (with REQ_PREFLUSH: when its preflush completed and its
	// data was sent).
	orderedBefore [MaxWrites]uint32
	// pfCover[i]: with emulated FUA, the writes covered by write i+1's post-flush.
	pfCover [MaxWrites]uint32
	// preCover[i]: the writes covered by write i+1's preflush (rule 7).
	preCover [MaxWrites]uint32

	ended     uint32 // writes that completed or failed (for the OS or the device)
	completed uint32 // writes whose completion the device reported (for flush coverage)
	durable   uint32 // writes whose data must survive a crash
	// durableBy[i]: what made write i+1 durable: 0 = its own completion
	// (FUA or no cache), k > 0 = flush Fk, -k = post-flush of write Wk,
	// -(MaxWrites+k) = preflush of write Wk.
	durableBy [MaxWrites]int8

	fState [MaxFlushes]cmdState
	fCover [MaxFlushes]uint32
}

type cmdState uint8

const (
	cmdNone      cmdState = iota
	cmdPreflush           // REQ_PREFLUSH: the preflush step in flight, the data not sent yet
	cmdInFlight           // submitted (with REQ_PREFLUSH: the preflush completed, the data sent)
	cmdPostFlush          // emulated FUA: data done, post-flush in flight
	cmdOK                 // completed successfully
	cmdFailed             // completed with EIO
)

// DeviceEvents calls yield with each event the device may take next, in a
// fixed order: for each write in flight, by number, the end of its
// preflush step (rule 7) or, with emulated FUA, the end of its data step
// (rule 3) or else its completion, then (with failures) its failure; then
// for each flush in flight, by number, its completion and (with failures
// and a volatile cache, rule 4) its failure. A protocol that drives the
// device as a transition system takes its device steps from here, so
// which command may end how is decided in one place.
func (c *Contract) DeviceEvents(failures bool, yield func(Event)) {
	for i := 0; i < int(c.nw); i++ {
		id := i + 1
		switch c.wState[i] {
		case cmdPreflush:
			yield(Event{Kind: WritePreflushed, ID: id})
		case cmdInFlight:
			if c.cfg.EmulatesFUA() && c.wFUA&(1<<i) != 0 {
				yield(Event{Kind: WriteDataDone, ID: id})
			} else {
				yield(Event{Kind: WriteComplete, ID: id})
			}
		case cmdPostFlush:
			yield(Event{Kind: WriteComplete, ID: id})
		default:
			continue
		}
		if failures {
			yield(Event{Kind: WriteFail, ID: id})
		}
	}
	for j := 0; j < int(c.nf); j++ {
		if c.fState[j] != cmdInFlight {
			continue
		}
		yield(Event{Kind: FlushComplete, ID: j + 1})
		if failures && c.cfg.VolatileCache {
			yield(Event{Kind: FlushFail, ID: j + 1})
		}
	}
}

// NewContract returns the contract of a fresh device with config cfg.
func NewContract(cfg Config) Contract { return Contract{cfg: cfg} }

// Config returns the device configuration the contract was made for.
func (c *Contract) Config() Config { return c.cfg }

// Crashed reports whether the history ended in a crash.
func (c *Contract) Crashed() bool { return c.crashed }

// Writes returns the number of writes submitted so far.
func (c *Contract) Writes() int { return int(c.nw) }

// Apply adds one event to the history. It returns an error, and leaves the
// contract unchanged, if the event is impossible at this point (a completion
// of a command that is not in flight, a flush failure without a cache, a
// second crash, a write with REQ_PREFLUSH that lands or completes before
// its WritePreflushed...). WriteLand and Read events are accepted and
// ignored: the contract allows every landing order and says nothing about
// reads.
func (c *Contract) Apply(e Event) error {
	if c.crashed && e.Kind != Read {
		return fmt.Errorf("%v after the crash", e)
	}
	switch e.Kind {
	case WriteSubmit:
		if e.ID != int(c.nw)+1 {
			return fmt.Errorf("%v: next write is W%d", e, c.nw+1)
		}
		if e.ID > MaxWrites {
			return fmt.Errorf("%v: more than %d writes in one history", e, MaxWrites)
		}
		if e.Blocks == 0 {
			return fmt.Errorf("%v: a write needs at least one block", e)
		}
		i := e.ID - 1
		c.nw++
		c.wBlocks[i] = e.Blocks
		c.wState[i] = cmdInFlight
		c.orderedBefore[i] = c.ended
		if e.FUA && c.cfg.VolatileCache { // rule 4: stripped without a cache
			c.wFUA |= 1 << i
		}
		if e.Preflush {
			c.wPreReq |= 1 << i
		}
		if mutate.On(mutate.CompletedAtSubmit) {
			c.completed |= 1 << i
		}
		if e.Preflush && c.cfg.VolatileCache { // rules 4 and 7
			c.wPre |= 1 << i
			c.preCover[i] = c.completed
			c.wState[i] = cmdPreflush
			c.unsent |= 1 << i
		}
		return nil
	case WritePreflushed:
		if e.ID >= 1 && e.ID <= int(c.nw) && !c.cfg.VolatileCache && c.wPreReq&(1<<(e.ID-1)) != 0 {
			// Rule 4: the flag was stripped, there is no preflush step.
			_, err := c.write(e, cmdInFlight)
			return err
		}
		i, err := c.write(e, cmdPreflush)
		if err != nil {
			return err
		}
		// Rule 7: the preflush completed; its writes are durable, and the
		// data is sent only now, so for rule 6 the write is applied over
		// every write that has ended by now.
		c.makeDurable(c.preCover[i], -int8(MaxWrites+i+1))
		c.orderedBefore[i] = c.ended
		c.wState[i] = cmdInFlight
		c.unsent &^= 1 << i
		return nil
	case WriteLand, Read:
		if e.Kind == WriteLand {
			if _, err := c.write(e, cmdInFlight); err != nil {
				return err
			}
		}
		return nil
	case WriteDataDone:
		i, err := c.write(e, cmdInFlight)
		if err != nil {
			return err
		}
		if !c.cfg.EmulatesFUA() || c.wFUA&(1<<i) == 0 {
			return fmt.Errorf("%v: only a FUA write on a device with emulated FUA has a post-flush", e)
		}
		// Rule 3: the data completed, so the post-flush submitted now covers
		// it and every write completed before it. The device has completed
		// the data command, so for rule 6 the write has ended: a write
		// submitted from now on is applied over it.
		c.completed |= 1 << i
		c.ended |= 1 << i
		c.pfCover[i] = c.completed
		c.wState[i] = cmdPostFlush
		return nil
	case WriteComplete:
		i, err := c.write(e, cmdInFlight)
		if err != nil {
			i, err = c.write(e, cmdPostFlush)
		}
		if err != nil {
			return err
		}
		if c.wState[i] == cmdInFlight && c.cfg.EmulatesFUA() && c.wFUA&(1<<i) != 0 {
			// An emulated FUA write seen from above the block layer, without
			// its post-flush event: what the post-flush covered besides the
			// write itself is unknown, so only the write is promised.
			c.pfCover[i] = 1 << i
		}
		c.wState[i] = cmdOK
		c.ended |= 1 << i
		c.completed |= 1 << i
		switch {
		case c.cfg.VolatileCache && c.wFUA&(1<<i) != 0 && mutate.On(mutate.FUAWeak):
			// The FUA write lands in the volatile cache like any other.
		case !c.cfg.VolatileCache, c.wFUA&(1<<i) != 0 && c.cfg.NativeFUA:
			c.makeDurable(1<<i, 0) // rules 3 and 4
		case c.wFUA&(1<<i) != 0:
			c.makeDurable(c.pfCover[i], -int8(i+1)) // rule 3, emulated
		}
		return nil
	case WriteFail:
		i, err := c.write(e, cmdInFlight)
		if err != nil {
			i, err = c.write(e, cmdPostFlush)
		}
		if err != nil {
			// Rule 7: the preflush failed; the request ends with its
			// error and the data is never sent (c.unsent keeps it).
			i, err = c.write(e, cmdPreflush)
		}
		if err != nil {
			return err
		}
		c.wState[i] = cmdFailed
		c.ended |= 1 << i
		return nil
	case FlushSubmit:
		if e.ID != int(c.nf)+1 {
			return fmt.Errorf("%v: next flush is F%d", e, c.nf+1)
		}
		if e.ID > MaxFlushes {
			return fmt.Errorf("%v: more than %d flushes in one history", e, MaxFlushes)
		}
		c.nf++
		c.fState[e.ID-1] = cmdInFlight
		c.fCover[e.ID-1] = c.completed // rule 2
		return nil
	case FlushComplete, FlushFail:
		if e.ID < 1 || e.ID > int(c.nf) || c.fState[e.ID-1] != cmdInFlight {
			return fmt.Errorf("%v: F%d is not in flight", e, e.ID)
		}
		if e.Kind == FlushFail && !c.cfg.VolatileCache {
			return fmt.Errorf("%v: without a volatile cache an empty flush completes at once and cannot fail", e)
		}
		if e.Kind == FlushFail {
			c.fState[e.ID-1] = cmdFailed // rule 5
			return nil
		}
		c.fState[e.ID-1] = cmdOK
		cover := c.fCover[e.ID-1]
		if mutate.On(mutate.FlushCoversAtCompletion) {
			cover = c.completed
		}
		c.makeDurable(cover, int8(e.ID))
		return nil
	case Crash:
		c.crashed = true
		return nil
	}
	return fmt.Errorf("unknown event %v", e)
}

func (c *Contract) write(e Event, want cmdState) (int, error) {
	if e.ID < 1 || e.ID > int(c.nw) {
		return 0, fmt.Errorf("%v: W%d was not submitted", e, e.ID)
	}
	if c.wState[e.ID-1] != want {
		return 0, fmt.Errorf("%v: W%d is not in the right state for it", e, e.ID)
	}
	return e.ID - 1, nil
}

func (c *Contract) makeDurable(ws uint32, by int8) {
	for m := ws &^ c.durable; m != 0; m &= m - 1 {
		c.durableBy[bits.TrailingZeros32(m)] = by
	}
	c.durable |= ws
}

// CrashSet is the set of contents a block may hold after a crash: a set of
// write numbers, plus possibly the block's initial content.
type CrashSet struct {
	Writes  uint32 // bit i = write W(i+1)
	Initial bool
}

// Has reports whether content w (a write number, 0 = initial) is in the set.
func (s CrashSet) Has(w int) bool {
	if w == 0 {
		return s.Initial
	}
	return w <= MaxWrites && s.Writes&(1<<(w-1)) != 0
}

// Union returns s ∪ t.
func (s CrashSet) Union(t CrashSet) CrashSet {
	return CrashSet{Writes: s.Writes | t.Writes, Initial: s.Initial || t.Initial}
}

// Minus returns s \ t.
func (s CrashSet) Minus(t CrashSet) CrashSet {
	return CrashSet{Writes: s.Writes &^ t.Writes, Initial: s.Initial && !t.Initial}
}

// Empty reports whether the set has no content at all.
func (s CrashSet) Empty() bool { return s.Writes == 0 && !s.Initial }

// Contents lists the set as write numbers (0 = initial), ascending.
func (s CrashSet) Contents() []int {
	var out []int
	if s.Initial {
		out = append(out, 0)
	}
	for m := s.Writes; m != 0; m &= m - 1 {
		out = append(out, bits.TrailingZeros32(m)+1)
	}
	return out
}

func (s CrashSet) String() string {
	var parts []string
	for _, w := range s.Contents() {
		parts = append(parts, ContentName(w))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// Allowed returns what block b may hold after a crash at this point of the
// history (rule 6).
func (c *Contract) Allowed(b int) CrashSet {
	mask := uint8(1) << b
	var onBlock, durableOn uint32
	for i := 0; i < int(c.nw); i++ {
		if c.wBlocks[i]&mask != 0 {
			onBlock |= 1 << i
		}
	}
	durableOn = onBlock & c.durable
	allowed := onBlock &^ c.unsent // rule 7: data not sent cannot be left
	for m := durableOn; m != 0; m &= m - 1 {
		d := bits.TrailingZeros32(m)
		allowed &^= c.orderedBefore[d]
	}
	if mutate.On(mutate.CrashKeepsInFlight) && allowed != 0 {
		// Only the newest write the block may hold: nothing in flight is
		// ever lost.
		return CrashSet{Writes: 1 << (31 - bits.LeadingZeros32(allowed))}
	}
	return CrashSet{Writes: allowed, Initial: durableOn == 0}
}

// Obligation is a durable write: after any later crash, Block holds this
// write's data or that of a write not ordered before it.
type Obligation struct {
	Write int // write number
	Block int
	By    string // what made it durable: "its FUA completion", "F2", ...
}

func (o Obligation) String() string {
	return fmt.Sprintf("W%d on b%d (durable by %s)", o.Write, o.Block, o.By)
}

// Obligations lists the durable writes, per block, in write order.
func (c *Contract) Obligations() []Obligation {
	var out []Obligation
	for m := c.durable; m != 0; m &= m - 1 {
		i := bits.TrailingZeros32(m)
		by := c.durableBy[i]
		var s string
		switch {
		case by == durableByForgotten:
			s = durableByForgottenText
		case by > 0:
			s = fmt.Sprintf("flush F%d", by)
		case by < -MaxWrites:
			s = fmt.Sprintf("the preflush of write W%d", -int(by)-MaxWrites)
		case by < 0 && int(-by) == i+1:
			s = "its FUA completion (emulated: post-flush)"
		case by < 0:
			s = fmt.Sprintf("the post-flush of FUA write W%d", -by)
		case c.cfg.VolatileCache:
			s = "its FUA completion"
		default:
			s = "its completion (no volatile cache)"
		}
		for bm := c.wBlocks[i]; bm != 0; bm &= bm - 1 {
			out = append(out, Obligation{Write: i + 1, Block: bits.TrailingZeros8(bm), By: s})
		}
	}
	return out
}

// OrderedBefore reports whether content w1 is ordered before write w2
// (rule 6): w1 ended before w2 was submitted (with REQ_PREFLUSH on a
// volatile cache: before w2's data was sent). The initial content (0) is
// ordered before every write.
func (c *Contract) OrderedBefore(w1, w2 int) bool {
	return w1 == 0 || c.orderedBefore[w2-1]&(1<<(w1-1)) != 0
}

// Broken explains why content w of block b violates the contract, or returns
// "" if the contract allows it. It names the obligation that is broken.
func (c *Contract) Broken(b, w int) string {
	if c.Allowed(b).Has(w) {
		return ""
	}
	mask := uint8(1) << b
	if w > 0 && (w > int(c.nw) || c.wBlocks[w-1]&mask == 0) {
		return fmt.Sprintf("b%d = %s, but W%d never wrote b%d", b, ContentName(w), w, b)
	}
	if w > 0 && c.unsent&(1<<(w-1)) != 0 {
		return fmt.Sprintf("b%d = %s after the crash, but W%d's preflush had not completed: its data was never sent", b, ContentName(w), w)
	}
	for _, o := range c.Obligations() {
		if o.Block != b {
			continue
		}
		if c.OrderedBefore(w, o.Write) {
			return fmt.Sprintf("b%d = %s after the crash, but %s must survive: %s is older", b, ContentName(w), o, ContentName(w))
		}
	}
	return fmt.Sprintf("b%d = %s is not allowed", b, ContentName(w))
}

// WriteEnded reports whether write w (1-based) has ended, and whether it
// failed (EIO). A write not submitted has not ended.
func (c *Contract) WriteEnded(w int) (ended, failed bool) {
	if w < 1 || w > int(c.nw) {
		return false, false
	}
	switch c.wState[w-1] {
	case cmdOK:
		return true, false
	case cmdFailed:
		return true, true
	}
	return false, false
}

// FlushEnded reports whether flush f (1-based) has ended, and whether it
// failed (EIO). A flush not submitted has not ended.
func (c *Contract) FlushEnded(f int) (ended, failed bool) {
	if f < 1 || f > int(c.nf) {
		return false, false
	}
	switch c.fState[f-1] {
	case cmdOK:
		return true, false
	case cmdFailed:
		return true, true
	}
	return false, false
}

// Flushes returns the number of flushes submitted so far.
func (c *Contract) Flushes() int { return int(c.nf) }

// WriteBlocks returns the blocks write w (1-based) wrote, 0 if it was not
// submitted.
func (c *Contract) WriteBlocks(w int) uint8 {
	if w < 1 || w > int(c.nw) {
		return 0
	}
	return c.wBlocks[w-1]
}

// Durable reports whether write w (1-based) is durable: after any later
// crash its block holds its data or that of a write not ordered before it.
func (c *Contract) Durable(w int) bool {
	return w >= 1 && w <= int(c.nw) && c.durable&(1<<(w-1)) != 0
}

// FlushCover returns the writes flush f (1-based) covers, bit i for write
// W(i+1): those that had completed when it was submitted (rule 2), which
// its successful completion makes durable. 0 if f was not submitted.
func (c *Contract) FlushCover(f int) uint32 {
	if f < 1 || f > int(c.nf) {
		return 0
	}
	return c.fCover[f-1]
}

// PreflushCover returns the writes the preflush of write w (1-based)
// covers, bit i for write W(i+1): those that had completed when w was
// submitted (rule 7). 0 if w was not submitted or the device runs no
// preflush for it (no REQ_PREFLUSH, or no volatile cache: rule 4).
func (c *Contract) PreflushCover(w int) uint32 {
	if w < 1 || w > int(c.nw) || c.wPre&(1<<(w-1)) == 0 {
		return 0
	}
	return c.preCover[w-1]
}
