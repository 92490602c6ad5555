package jbd2

import (
	"fmt"
	"math/bits"
	"strings"

	"github.com/flushproof/flushproof/internal/mutate"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/spec"
)

// The jbd2 journal commit (fs/jbd2/commit.c) and its recovery
// (fs/jbd2/recovery.c) as an explicit-state system.
//
// jbd2_journal_commit_transaction, for one transaction, in the steps the
// model takes (the journal is on the file system's device, so the
// j_fs_dev != j_dev flush is not modelled):
//
//	phase 2b  under blk_start_plug: one submit_bh per journal block
//	          (the descriptor, then the metadata copies; REQ_OP_WRITE |
//	          JBD2_JOURNAL_REQ_FLAGS, no PREFLUSH, no FUA)
//	          async_commit only: journal_submit_commit_record now, before
//	          blk_finish_plug and before any wait; with async_commit the
//	          commit block carries neither REQ_PREFLUSH nor REQ_FUA
//	phase 3/4 wait_on_buffer for every journal block; an error -> -EIO,
//	          jbd2_journal_abort
//	phase 5   without async_commit: journal_submit_commit_record; it writes
//	          nothing if the journal was aborted; with JBD2_BARRIER the
//	          commit block is REQ_PREFLUSH | REQ_FUA
//	          journal_wait_on_commit_record: an error -> jbd2_journal_abort
//	          async_commit with JBD2_BARRIER: blkdev_issue_flush(j_dev),
//	          whose return value commit.c does not look at
//	the commit returns; the transaction is committed unless the journal
//	was aborted (a waiter in jbd2_log_wait_commit then sees -EIO)
//
// One committer (kjournald2) commits the transactions one after the other;
// an aborted journal commits nothing more.
//
// The blocks' submissions are one step: they sit in the plug until
// blk_finish_plug, and each is its own write command for the device.
//
// REQ_PREFLUSH | REQ_FUA on the commit block is one write carrying
// spec.Event.Preflush and FUA: spec.Contract (rule 7) follows blk-flush.c
// (blk_flush_complete_seq: REQ_FSEQ_PREFLUSH, then REQ_FSEQ_DATA), so the
// device's WritePreflushed step ends the preflush, making the journal
// blocks durable, and only then may the commit block's data land; an error
// in the preflush ends the write with EIO, its data never sent.
// Config.PreflushAsFlush feeds the same request as the two commands the
// block layer sends instead (an empty flush, then the FUA data write once
// it completed); the tests check that both give the same crash images.
// Without a volatile cache blk_flush_policy strips both flags: the commit
// block is a plain write.
//
// The journal is laid out from block 0: transaction t (0-based) owns blocks
// t*(J+1) .. t*(J+1)+J, the descriptor first, then J-1 metadata copies,
// then its commit block. Every log block is written once, so block b is
// written by W(b+1) or not at all, and a crash leaves on it either that
// write's data or the block's initial content (which recovery never takes
// for a journal block of the expected sequence).
//
// Recovery (do_one_pass, PASS_SCAN then PASS_REPLAY) walks the log from the
// start: a block that is not a journal block of the expected sequence ends
// the log; a descriptor's tagged blocks are skipped in the scan (with
// JBD2_FEATURE_COMPAT_CHECKSUM, calc_chksums folds them into a crc32); at
// the commit block the transaction is complete. With the checksum feature
// a mismatch sets end_transaction to this transaction: it and every later
// one are not replayed (without async_commit the scan also stops there).
// PASS_REPLAY copies the tagged blocks of every transaction before
// end_transaction, whatever the log holds for them (jbd2_do_replay; v1
// checksums have no per-block tag checksum). The model assumes crc32 never
// collides: the checksum matches iff every block of the transaction holds
// this transaction's data.
//
// The obligation, in every state (a crash may come at any point): for every
// crash image spec.Contract allows, recovery replays every transaction
// whose commit returned, fully, and replays no transaction of which a
// block did not reach the disk.

// Variant is one way the journal is mounted, or a mutant of the commit.
type Variant uint8

// The variants: the real mount options first, then the mutants the checker
// must catch.
const (
	// Barrier is the default (JBD2_BARRIER, no async_commit, no journal
	// checksum): the commit block is written with REQ_PREFLUSH | REQ_FUA
	// after the journal blocks completed.
	Barrier Variant = iota + 1
	// NoBarrier is mount -o nobarrier (no JBD2_BARRIER): the commit block is
	// a plain write after the journal blocks completed, and nothing flushes.
	NoBarrier
	// AsyncCommit is mount -o journal_async_commit (ext4 then sets
	// JBD2_FEATURE_COMPAT_CHECKSUM and JBD2_FEATURE_INCOMPAT_ASYNC_COMMIT),
	// with barriers: the commit block is a plain write submitted with the
	// journal blocks, an empty flush follows once all of them completed,
	// and recovery discards a transaction whose checksum does not match.
	AsyncCommit
	// MutantAsyncNoChecksum (mutant): async_commit without the journal
	// checksum; recovery cannot tell a torn transaction.
	MutantAsyncNoChecksum
	// MutantDropPreflush (mutant): the commit block keeps REQ_FUA but loses
	// REQ_PREFLUSH, so nothing orders the journal blocks before it on
	// stable storage.
	MutantDropPreflush
)

var variantNames = map[Variant]string{
	Barrier:               "barrier",
	NoBarrier:             "nobarrier",
	AsyncCommit:           "async-commit",
	MutantAsyncNoChecksum: "mutant-async-commit-no-checksum",
	MutantDropPreflush:    "mutant-drop-preflush",
}

func (v Variant) String() string {
	if s, ok := variantNames[v]; ok {
		return s
	}
	return fmt.Sprintf("Jbd2Variant(%d)", uint8(v))
}

// Mutant reports whether the variant is a deliberately wrong commit.
func (v Variant) Mutant() bool { return v == MutantAsyncNoChecksum || v == MutantDropPreflush }

// Variants lists every variant, the real ones first.
func Variants() []Variant {
	return []Variant{Barrier, NoBarrier, AsyncCommit, MutantAsyncNoChecksum, MutantDropPreflush}
}

// async reports JBD2_FEATURE_INCOMPAT_ASYNC_COMMIT.
func (v Variant) async() bool { return v == AsyncCommit || v == MutantAsyncNoChecksum }

// checksum reports JBD2_FEATURE_COMPAT_CHECKSUM (v1 transaction checksums).
// mutant MutantAsyncNoChecksum: ext4 sets it whenever it sets async_commit
// (set_journal_csum_feature_set in fs/ext4/super.c).
func (v Variant) checksum() bool { return v == AsyncCommit }

// barrier reports JBD2_BARRIER.
func (v Variant) barrier() bool { return v != NoBarrier }

// Config is one bounded scenario.
type Config struct {
	Variant      Variant
	Device       spec.Config
	Transactions int  // committed one after the other, 1 to 4
	Blocks       int  // journal blocks per transaction: the descriptor and Blocks-1 metadata copies, 1 to 7
	Failures     bool // device writes and flushes may fail with EIO
	// PreflushAsFlush feeds the barrier's commit block to the device as
	// the commands blk-flush.c sends for it: an empty flush (the PREFLUSH
	// step) and, once it completed, the data write with FUA, instead of
	// one write carrying spec.Event.Preflush (docs/semantics.md, rule 7).
	// Not a row of the table: the test that holds the two ways to each
	// other uses it.
	PreflushAsFlush bool
	_               struct{}
}

// blocksPer is the log blocks one transaction takes: its journal blocks and
// its commit block.
func (c Config) blocksPer() int { return c.Blocks + 1 }

// Committer program counters.
const (
	pcStart       uint8 = iota // submit the next transaction's journal blocks
	pcJournalWait              // phase 3/4: wait for the journal blocks
	pcCommitWait               // journal_wait_on_commit_record
	pcFlushWait                // async_commit: wait for blkdev_issue_flush
	pcDone                     // no more transactions (or the journal aborted)
)

// State is a state of System; comparable.
type State struct {
	dev    spec.Contract
	pc     uint8
	txn    uint8  // the transaction being committed (0-based)
	live   uint32 // writes in flight
	post   uint32 // emulated FUA: data completed, post-flush in flight
	fua    uint32 // writes submitted with REQ_FUA
	failed uint32 // writes that failed
	flive  uint16 // flushes in flight
	nf     uint8  // flushes submitted
	// preflush: with PreflushAsFlush, the flush that is the PREFLUSH step
	// of the commit block's REQ_PREFLUSH | REQ_FUA request (0: none in
	// flight).
	preflush uint8
	// pre: writes carrying REQ_PREFLUSH whose preflush step is in flight.
	pre uint32
	// commitEnded: the commit request ended (its data write completed or
	// failed, or its preflush failed); commitFailed: with an error.
	commitEnded, commitFailed bool
	aborted                   bool  // jbd2_journal_abort was called
	acked                     uint8 // transactions whose commit returned without an abort
}

// Acked reports whether transaction t's commit returned successfully.
func (st State) Acked(t int) bool { return st.acked&(1<<t) != 0 }

// Aborted reports whether the journal was aborted.
func (st State) Aborted() bool { return st.aborted }

// CrashSet returns what log block b may hold if power fails now, as
// spec.Contract says.
func (st State) CrashSet(b int) spec.CrashSet { return st.dev.Allowed(b) }

// System is the protocol for the explorer.
type System struct {
	cfg    Config
	actors []string
}

const (
	actorJbd2   = 0
	actorDevice = 1
)

// NewSystem checks the configuration.
func NewSystem(cfg Config) (*System, error) {
	if _, ok := variantNames[cfg.Variant]; !ok {
		return nil, fmt.Errorf("jbd2 model: unknown variant %d", cfg.Variant)
	}
	if cfg.Transactions < 1 || cfg.Transactions > 4 {
		return nil, fmt.Errorf("jbd2 model: %d transactions, want 1 to 4", cfg.Transactions)
	}
	if cfg.Blocks < 1 || cfg.Transactions*(cfg.Blocks+1) > spec.MaxBlocks {
		return nil, fmt.Errorf("jbd2 model: %d transactions x %d journal blocks (+ a commit block each): at least one journal block, at most %d log blocks",
			cfg.Transactions, cfg.Blocks, spec.MaxBlocks)
	}
	return &System{cfg: cfg, actors: []string{"jbd2", "device"}}, nil
}

// Config returns the scenario.
func (s *System) Config() Config { return s.cfg }

// Actors implements System.
func (s *System) Actors() []string { return s.actors }

// Init implements System.
func (s *System) Init() []State { return []State{{dev: spec.NewContract(s.cfg.Device)}} }

// journalMask returns the log blocks of transaction t's journal blocks;
// commitBlock its commit block.
func (s *System) journalMask(t int) uint32 {
	return uint32((1<<s.cfg.Blocks)-1) << (t * s.cfg.blocksPer())
}

func (s *System) commitBlock(t int) int { return t*s.cfg.blocksPer() + s.cfg.Blocks }

// Label kinds.
const (
	kJournal     uint8 = iota + 1 // ID: transaction; journal blocks submitted
	kJournalDone                  // ID: transaction, Arg: 1 = an error (abort)
	kCommitDone                   // ID: transaction, Arg: 1 = an error (abort)
	kFlushDone                    // ID: transaction, Arg: the flush
	kDevice                       // ID: the command, Arg: its spec.Kind | 1<<8 = the preflush step of the commit ended (or failed)
)

// Describe implements System.
func (s *System) Describe(l explore.Label) string {
	t := int(l.ID) + 1
	switch l.Kind {
	case kJournal:
		str := fmt.Sprintf("T%d: submit journal blocks %s", t, s.writeList(int(l.ID), s.journalMask(int(l.ID))))
		if s.cfg.Variant.async() {
			str += fmt.Sprintf(" and, async_commit, the commit block W%d submit b%d", s.commitBlock(int(l.ID))+1, s.commitBlock(int(l.ID)))
		}
		return str
	case kJournalDone:
		switch {
		case l.Arg&1 != 0 && s.cfg.Variant.async():
			return fmt.Sprintf("T%d: journal IO error: jbd2_journal_abort, wait for the commit block", t)
		case l.Arg&1 != 0:
			return fmt.Sprintf("T%d: journal IO error: jbd2_journal_abort, no commit block; the commit returns -EIO", t)
		}
		c := s.commitBlock(int(l.ID))
		switch {
		case s.cfg.Variant.async():
			return fmt.Sprintf("T%d: journal blocks written, wait for the commit block", t)
		case !s.cfg.Device.VolatileCache:
			return fmt.Sprintf("T%d: journal blocks written; commit block W%d submit b%d (PREFLUSH|FUA stripped: no cache)", t, c+1, c)
		case s.cfg.Variant == Barrier && !s.cfg.PreflushAsFlush:
			return fmt.Sprintf("T%d: journal blocks written; commit block W%d submit b%d PREFLUSH FUA", t, c+1, c)
		case s.cfg.Variant == Barrier:
			return fmt.Sprintf("T%d: journal blocks written; commit block b%d submitted with PREFLUSH|FUA: blk-flush.c sends F%d, its PREFLUSH step", t, c, l.Arg>>8)
		case s.cfg.Variant == MutantDropPreflush:
			return fmt.Sprintf("T%d: journal blocks written; commit block W%d submit b%d FUA (no PREFLUSH)", t, c+1, c)
		}
		return fmt.Sprintf("T%d: journal blocks written; commit block W%d submit b%d (nobarrier: no flags)", t, c+1, c)
	case kCommitDone:
		if l.Arg&1 != 0 {
			return fmt.Sprintf("T%d: commit block IO error: jbd2_journal_abort; the commit returns -EIO", t)
		}
		if l.Arg>>8 != 0 {
			return fmt.Sprintf("T%d: commit block written; async_commit: blkdev_issue_flush, F%d submit", t, l.Arg>>8)
		}
		return fmt.Sprintf("T%d: commit block written; the commit returns", t)
	case kFlushDone:
		str := fmt.Sprintf("T%d: F%d ended (commit.c ignores its result); the commit returns", t, uint8(l.Arg))
		if l.Arg>>8 != 0 {
			str = fmt.Sprintf("T%d: F%d ended (commit.c ignores its result); the journal was aborted: the commit returns -EIO", t, uint8(l.Arg))
		}
		return str
	case kDevice:
		e := spec.Event{Kind: spec.Kind(uint8(l.Arg)), ID: int(l.ID)}
		if l.Arg>>8 == 0 {
			return e.String()
		}
		if e.Kind == spec.FlushFail || e.Kind == spec.WriteFail {
			return fmt.Sprintf("%v: the preflush failed, the commit request ends with EIO, its data never sent", e)
		}
		w := s.preflushData(l)
		return fmt.Sprintf("%v; blk-flush.c sends the data step: %v", e, w)
	}
	return fmt.Sprintf("step %d", l.Kind)
}

func (s *System) writeList(t int, mask uint32) string {
	var parts []string
	for m := mask; m != 0; m &= m - 1 {
		b := bits.TrailingZeros32(m)
		parts = append(parts, fmt.Sprintf("W%d b%d", b+1, b))
	}
	return strings.Join(parts, ", ")
}

// preflushData is the FUA data write the block layer sends when the
// preflush step of label l completed.
func (s *System) preflushData(l explore.Label) spec.Event {
	b := int(l.Arg >> 9)
	return spec.Event{Kind: spec.WriteSubmit, ID: b + 1, Blocks: 1 << b, FUA: true}
}

// DeviceEvents returns the commands a step sends to the device and the
// device's own events, in order; the events of a path are the history the
// device saw.
func (s *System) DeviceEvents(l explore.Label) []spec.Event {
	t := int(l.ID)
	switch l.Kind {
	case kJournal:
		var out []spec.Event
		for m := s.journalMask(t); m != 0; m &= m - 1 {
			b := bits.TrailingZeros32(m)
			out = append(out, spec.Event{Kind: spec.WriteSubmit, ID: b + 1, Blocks: 1 << b})
		}
		if s.cfg.Variant.async() {
			c := s.commitBlock(t)
			out = append(out, spec.Event{Kind: spec.WriteSubmit, ID: c + 1, Blocks: 1 << c})
		}
		return out
	case kJournalDone:
		if l.Arg&1 != 0 || s.cfg.Variant.async() {
			return nil
		}
		if l.Arg>>8 != 0 {
			return []spec.Event{{Kind: spec.FlushSubmit, ID: int(l.Arg >> 8)}}
		}
		c := s.commitBlock(t)
		cache := s.cfg.Device.VolatileCache
		pre := s.cfg.Variant == Barrier && !s.cfg.PreflushAsFlush && cache
		return []spec.Event{{Kind: spec.WriteSubmit, ID: c + 1, Blocks: 1 << c, FUA: (s.cfg.Variant == MutantDropPreflush || pre) && cache, Preflush: pre}}
	case kCommitDone:
		if l.Arg>>8 != 0 {
			return []spec.Event{{Kind: spec.FlushSubmit, ID: int(l.Arg >> 8)}}
		}
	case kDevice:
		e := spec.Event{Kind: spec.Kind(uint8(l.Arg)), ID: int(l.ID)}
		if l.Arg>>8 != 0 && e.Kind == spec.FlushComplete && s.cfg.PreflushAsFlush {
			return []spec.Event{e, s.preflushData(l)}
		}
		return []spec.Event{e}
	}
	return nil
}

// Unfinished implements System: the committer until it committed its
// transactions or the journal aborted (the device never returns).
func (s *System) Unfinished(st State) uint64 {
	if st.pc == pcDone {
		return 0
	}
	return 1 << actorJbd2
}

// Next implements System.
func (s *System) Next(st State, yield func(explore.Label, State)) {
	s.committerSteps(st, yield)
	s.deviceSteps(st, yield)
}

func label(actor int, kind uint8, id, arg int) explore.Label {
	return explore.Label{Actor: uint8(actor), Kind: kind, ID: uint16(id), Arg: uint16(arg)}
}

// apply feeds the contract; an event it rejects is a bug of this model.
func (s *System) apply(n *State, e spec.Event) {
	if err := n.dev.Apply(e); err != nil {
		panic(fmt.Sprintf("jbd2 model: %v", err))
	}
}

// write submits a one-block write of log block b (it is W(b+1)).
func (s *System) write(n *State, b int, fua bool) { s.writePreflush(n, b, fua, false) }

func (s *System) writePreflush(n *State, b int, fua, preflush bool) {
	id := n.dev.Writes() + 1
	if id != b+1 {
		panic(fmt.Sprintf("jbd2 model: log block b%d written by W%d", b, id))
	}
	s.apply(n, spec.Event{Kind: spec.WriteSubmit, ID: id, Blocks: 1 << b, FUA: fua, Preflush: preflush})
	n.live |= 1 << b
	if preflush {
		n.pre |= 1 << b
	}
	if fua {
		n.fua |= 1 << b
	}
}

func (s *System) flush(n *State) int {
	n.nf++
	id := int(n.nf)
	s.apply(n, spec.Event{Kind: spec.FlushSubmit, ID: id})
	n.flive |= 1 << (id - 1)
	return id
}

// committerSteps yields the committer's next step, one function per phase
// of jbd2_journal_commit_transaction.
func (s *System) committerSteps(st State, yield func(explore.Label, State)) {
	switch st.pc {
	case pcStart:
		s.submitJournal(st, yield)
	case pcJournalWait:
		s.journalWritten(st, yield)
	case pcCommitWait:
		s.commitWritten(st, yield)
	case pcFlushWait:
		s.flushed(st, yield)
	}
}

// submitJournal is phase 2b: every journal block of the transaction is
// submitted under the plug; with async_commit the commit block too.
func (s *System) submitJournal(st State, yield func(explore.Label, State)) {
	t := int(st.txn)
	n := st
	for m := s.journalMask(t); m != 0; m &= m - 1 {
		s.write(&n, bits.TrailingZeros32(m), false)
	}
	if s.cfg.Variant.async() {
		// async_commit: journal_submit_commit_record before the waits of
		// phase 3, and without REQ_PREFLUSH | REQ_FUA (commit.c adds them
		// only with JBD2_BARRIER and without async_commit).
		s.write(&n, s.commitBlock(t), false)
		n.commitEnded, n.commitFailed = false, false
	}
	n.pc = pcJournalWait
	yield(label(actorJbd2, kJournal, t, 0), n)
}

// journalWritten is phases 3 and 4 (wait for every journal block) and,
// without async_commit, phase 5's journal_submit_commit_record.
func (s *System) journalWritten(st State, yield func(explore.Label, State)) {
	t := int(st.txn)
	jm := s.journalMask(t)
	if st.live&jm != 0 {
		return // wait_on_buffer
	}
	n := st
	failed := st.failed&jm != 0
	if failed {
		n.aborted = true // jbd2_journal_abort(journal, -EIO)
	}
	if s.cfg.Variant.async() {
		n.pc = pcCommitWait
		yield(label(actorJbd2, kJournalDone, t, b2i(failed)), n)
		return
	}
	if failed {
		// journal_submit_commit_record writes nothing on an aborted
		// journal; the commit returns and the journal stays aborted.
		n.pc = pcDone
		yield(label(actorJbd2, kJournalDone, t, 1), n)
		return
	}
	c := s.commitBlock(t)
	n.pc, n.commitEnded, n.commitFailed = pcCommitWait, false, false
	arg := 0
	switch {
	case !s.cfg.Device.VolatileCache:
		// blk_flush_policy strips REQ_PREFLUSH and REQ_FUA.
		s.write(&n, c, false)
	case s.cfg.Variant == Barrier && !s.cfg.PreflushAsFlush:
		// REQ_PREFLUSH | REQ_FUA: the device runs the PREFLUSH step
		// first (WritePreflushed), then takes the data (spec.Contract,
		// rule 7).
		s.writePreflush(&n, c, true, true)
	case s.cfg.Variant == Barrier:
		// PreflushAsFlush: blk-flush.c's PREFLUSH step as an empty flush;
		// the data step is sent when it completed (deviceStep).
		f := s.flush(&n)
		n.preflush = uint8(f)
		arg = f << 8
	case s.cfg.Variant == MutantDropPreflush:
		// mutant MutantDropPreflush: REQ_FUA only; commit.c sets
		// REQ_PREFLUSH | REQ_FUA with JBD2_BARRIER.
		s.write(&n, c, true)
	default:
		// NoBarrier: without JBD2_BARRIER the commit block is a plain write.
		s.write(&n, c, false)
	}
	yield(label(actorJbd2, kJournalDone, t, arg), n)
}

// commitWritten is journal_wait_on_commit_record and, with async_commit
// and barriers, the blkdev_issue_flush that follows.
func (s *System) commitWritten(st State, yield func(explore.Label, State)) {
	t := int(st.txn)
	if !st.commitEnded {
		return
	}
	n := st
	if st.commitFailed {
		n.aborted = true
	}
	if s.cfg.Variant.async() && s.cfg.Variant.barrier() {
		// The flush is issued even when the journal was aborted.
		f := s.flush(&n)
		n.pc = pcFlushWait
		yield(label(actorJbd2, kCommitDone, t, b2i(st.commitFailed)|f<<8), n)
		return
	}
	s.commitReturns(&n)
	yield(label(actorJbd2, kCommitDone, t, b2i(st.commitFailed)), n)
}

// flushed: the async_commit flush ended. commit.c calls
// blkdev_issue_flush(journal->j_dev) without looking at its result, so a
// failed flush does not abort the journal.
func (s *System) flushed(st State, yield func(explore.Label, State)) {
	f := int(st.nf)
	if st.flive&(1<<(f-1)) != 0 {
		return
	}
	n := st
	t := int(st.txn)
	s.commitReturns(&n)
	yield(label(actorJbd2, kFlushDone, t, f|b2i(st.aborted)<<8), n)
}

// commitReturns ends jbd2_journal_commit_transaction: the transaction is
// committed unless the journal was aborted, in which case nothing more is
// committed.
func (s *System) commitReturns(n *State) {
	if n.aborted {
		n.pc = pcDone
		return
	}
	n.acked |= 1 << n.txn
	n.txn++
	n.pc = pcStart
	if int(n.txn) == s.cfg.Transactions {
		n.pc = pcDone
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (s *System) deviceSteps(st State, yield func(explore.Label, State)) {
	// st is this call's own copy: no need for another one of its contract.
	st.dev.DeviceEvents(s.cfg.Failures, func(e spec.Event) { s.deviceStep(st, e, yield) })
}

// deviceStep applies a device event and marks what the committer waits
// for (the wake-up is not a step of its own).
func (s *System) deviceStep(st State, e spec.Event, yield func(explore.Label, State)) {
	n := st
	s.apply(&n, e)
	arg := int(e.Kind)
	c := s.commitBlock(int(st.txn))
	switch e.Kind {
	case spec.WritePreflushed:
		n.pre &^= 1 << (e.ID - 1)
	case spec.WriteDataDone:
		n.post |= 1 << (e.ID - 1)
	case spec.WriteComplete, spec.WriteFail:
		bit := uint32(1) << (e.ID - 1)
		if e.Kind == spec.WriteFail && st.pre&bit != 0 {
			arg |= 1 << 8 // the preflush failed (Describe)
		}
		n.live &^= bit
		n.post &^= bit
		n.pre &^= bit
		if e.Kind == spec.WriteFail {
			n.failed |= bit
		}
		if e.ID == c+1 && !mutate.On(mutate.WaiterNeverWakes) {
			// The commit block's end wakes the committer in
			// journal_wait_on_commit_record (mutation WaiterNeverWakes:
			// it does not).
			n.commitEnded, n.commitFailed = true, e.Kind == spec.WriteFail
		}
	case spec.FlushComplete, spec.FlushFail:
		n.flive &^= 1 << (e.ID - 1)
		if e.ID == int(st.preflush) {
			// blk_flush_complete_seq: the PREFLUSH step ended. On success
			// the data step is sent (FUA); on error the request ends.
			n.preflush = 0
			arg |= 1<<8 | c<<9
			if e.Kind == spec.FlushFail {
				n.commitEnded, n.commitFailed = true, true
			} else {
				s.write(&n, c, true)
			}
		}
	}
	yield(label(actorDevice, kDevice, e.ID, arg), n)
}
