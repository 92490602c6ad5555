package odsync

import (
	"fmt"
	"math/bits"

	"github.com/flushproof/flushproof/internal/mutate"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/spec"
)

// O_DIRECT|O_DSYNC write() to a raw block device (the patch "block: skip
// redundant flush for O_DSYNC direct writes"; docs/odsync.md) as an
// explicit-state system.
//
// block/fops.c, blkdev_write_iter, for an iocb with IOCB_DIRECT and
// IOCB_DSYNC, in the steps the model takes:
//
//	blkdev_direct_write
//	  kiocb_invalidate_pages       write back and wait for dirty pages in the
//	                               range; an error fails the write, -EBUSY
//	                               makes the direct part 0 bytes long
//	  direct bio(s)                dio_bio_write_op adds REQ_FUA for dsync;
//	                               wait for completion; EIO fails the write
//	if the direct part was short (ret >= 0 and bytes left):
//	  blkdev_buffered_write        the rest is copied into the page cache
//	                               (dirty pages: volatile, in host memory)
//	  direct_write_fallback        fs/libfs.c: filemap_write_and_wait_range
//	                               over the buffered range (plain writes,
//	                               waited for), then filemap_check_errors:
//	                               on error only the direct bytes count
//	if ret > 0:
//	  generic_write_sync           include/linux/fs.h -> vfs_fsync_range ->
//	                               blkdev_fsync: file_write_and_wait_range
//	                               (dirty pages, then the errseq check
//	                               file_check_and_advance_wb_err), then
//	                               blkdev_issue_flush (an empty REQ_PREFLUSH)
//	return ret, or the first error
//
// The patch skips generic_write_sync when the whole write went direct (the
// bios carried REQ_FUA). The model chooses how many blocks of each write()
// go direct (all, none, or a prefix), so both the pure direct path and the
// fallback are explored in every interleaving.
//
// The device is spec.Contract, fed every command the tasks submit and
// every completion or failure the device reports: with native FUA, with
// emulated FUA (blk-flush.c: the data completes, then a post-flush, then
// the FUA write completes) or without a volatile cache (blk_flush_policy
// strips REQ_FUA and REQ_PREFLUSH; a completed write is durable). Nothing
// about durability is decided here; the contract says what a crash may
// leave.
//
// Write-back errors follow mm/filemap.c: a failed page write sets AS_EIO
// in the block device's (shared) mapping and records the error in its
// errseq_t (mapping_set_error). filemap_check_errors tests and clears
// AS_EIO, so another writer's check may consume it; every open file sees
// the errseq error once, at its next file_check_and_advance_wb_err (which
// also clears AS_EIO). A flusher thread (wb_workfn) may, optionally, write
// back any dirty page at any time; write-and-wait then waits for it.
//
// Each task writes its own range of blocks again and again (an overwrite
// workload); tasks share the device, its flushes and the mapping's AS_EIO
// bit. Every write() call writes a new version of its blocks: version r is
// the data of the task's r-th call.
//
// The obligation: when write() returns n > 0 blocks, a crash at any later
// moment leaves on each of those blocks the data of that call or of a later
// one of the same task (never the initial content or an older version).
// It is checked in every state, against what spec.Contract allows a crash
// to leave right then: a crash may happen at any point.

// Variant is one version of blkdev_write_iter's dsync handling.
type Variant uint8

// The variants: the real ones and the mutants the checker must catch.
const (
	// Baseline is the code before the patch: generic_write_sync after
	// every write that returned ret > 0.
	Baseline Variant = iota + 1
	// Patched is the patched kernel: skip generic_write_sync when the whole
	// write went direct (FUA bios); the fallback path still syncs.
	Patched
	// MutantSkipSyncOnFallback (mutant) skips generic_write_sync after the
	// buffered fallback too.
	MutantSkipSyncOnFallback
	// MutantDropFUA (mutant): the direct bios lose REQ_FUA, and the sync is
	// still skipped on the pure direct path.
	MutantDropFUA
	// MutantFallbackDirty (mutant): direct_write_fallback leaves the pages
	// dirty (no filemap_write_and_wait_range) and no path syncs, so
	// acknowledged data may exist only in the page cache.
	MutantFallbackDirty
)

var variantNames = map[Variant]string{
	Baseline:                 "baseline",
	Patched:                  "patched",
	MutantSkipSyncOnFallback: "mutant-skip-sync-on-fallback",
	MutantDropFUA:            "mutant-drop-fua",
	MutantFallbackDirty:      "mutant-fallback-dirty",
}

func (v Variant) String() string {
	if s, ok := variantNames[v]; ok {
		return s
	}
	return fmt.Sprintf("ODSyncVariant(%d)", uint8(v))
}

// Mutant reports whether the variant is a deliberately wrong version.
func (v Variant) Mutant() bool { return v != Baseline && v != Patched }

// Variants lists every variant, the real ones first.
func Variants() []Variant {
	return []Variant{Baseline, Patched, MutantSkipSyncOnFallback, MutantDropFUA, MutantFallbackDirty}
}

// directFUA reports whether the variant's direct bios carry REQ_FUA
// (mutant MutantDropFUA: they do not).
func (v Variant) directFUA() bool { return v != MutantDropFUA }

// leavesFallbackDirty reports whether direct_write_fallback leaves the
// buffered pages dirty (mutant MutantFallbackDirty).
func (v Variant) leavesFallbackDirty() bool { return v == MutantFallbackDirty }

// syncs reports whether the variant calls generic_write_sync after a
// write() that returned ret > 0, on the pure direct path (fallback false)
// or after the buffered fallback.
func (v Variant) syncs(fallback bool) bool {
	switch v {
	case Baseline:
		return true
	case Patched, MutantDropFUA:
		return fallback
	}
	// mutant MutantSkipSyncOnFallback: no sync after the fallback either;
	// the patch skips it only when every block went direct with REQ_FUA.
	// (mutant MutantFallbackDirty syncs on no path: its pages stay dirty.)
	return false
}

// Config is one bounded scenario.
type Config struct {
	Variant   Variant
	Device    spec.Config
	Tasks     int  // writers, 1 to 4, each on its own range of blocks
	Writes    int  // write() calls per task
	Blocks    int  // blocks per write() call, 1 to 4 (Tasks*Blocks <= spec.MaxBlocks)
	Failures  bool // device writes and flushes may fail with EIO
	Writeback bool // the flusher thread may write back any dirty page at any time
	_         struct{}
}

const maxODTasks = 4

// Program counters of a task.
const (
	pcStart      uint8 = iota // next write() call: kiocb_invalidate_pages, then the direct part
	pcDirect                  // choose the direct part (after a write-back in kiocb_invalidate_pages)
	pcDirectWait              // wait for the direct bio
	pcBuffered                // copy the rest into the page cache
	pcWBWrite                 // write-and-wait: submit the dirty pages of wbMask
	pcWBWait                  // write-and-wait: wait for every page of wbMask, then check errors
	pcSync                    // generic_write_sync: write back the range, errseq check, flush
	pcFlushWait               // wait for the flush
	pcReturn                  // write() returns
	pcDone                    // no more calls
)

// Who called a write-and-wait (filemap_write_and_wait_range or
// file_write_and_wait_range): it decides which error check follows.
const (
	callerInvalidate uint8 = iota + 1 // kiocb_invalidate_pages
	callerFallback                    // direct_write_fallback
	callerSyncRange                   // blkdev_fsync's file_write_and_wait_range
)

var callerNames = [...]string{callerInvalidate: "kiocb_invalidate_pages", callerFallback: "direct_write_fallback", callerSyncRange: "generic_write_sync"}

type task struct {
	pc      uint8
	round   uint8 // write() calls started; the running call is number round
	k       uint8 // blocks of the running call that went direct
	n       uint8 // blocks write() returns unless it fails
	wait    uint8 // the write (pcDirectWait) or flush (pcFlushWait) waited for
	wbMask  uint8 // blocks of the running write-and-wait
	wbFor   uint8 // its caller
	unseen  bool  // errseq: a write-back error this task's file has not reported yet
	failed  bool  // the running call returns -EIO
	skipped bool  // the running call skipped generic_write_sync
}

// Page states.
const (
	pageClean     uint8 = iota // not cached, or clean: the device has it
	pageDirty                  // newer than the device: lost if power fails
	pageWriteback              // being written by write wid
)

type page struct {
	st  uint8
	ver uint8 // the version it holds (dirty or under write-back)
	wid uint8 // the write carrying it (under write-back)
}

// State is a state of System; comparable.
type State struct {
	dev    spec.Contract
	ver    [spec.MaxWrites]uint8 // write i+1 carries version ver[i] of its blocks
	last   [spec.MaxBlocks]uint8 // the newest write submitted to each block
	fua    uint32                // writes submitted with REQ_FUA
	live   uint32                // writes in flight
	post   uint32                // emulated FUA: data completed, post-flush in flight
	failed uint32                // writes that failed
	flive  uint16                // flushes in flight
	nf     uint8                 // flushes submitted
	asEIO  bool                  // AS_EIO in the block device mapping's flags
	task   [maxODTasks]task
	page   [spec.MaxBlocks]page
	// acked[b]: the version of block b that the newest successful write()
	// covering b returned; a crash must leave it or a newer one (0: none).
	acked [spec.MaxBlocks]uint8
}

// CrashSet returns what block b may hold if power fails now, as
// spec.Contract says (write numbers; initial content).
func (st State) CrashSet(b int) spec.CrashSet { return st.dev.Allowed(b) }

// Acked returns the version of block b that a successful write() returned
// (0: none yet); after a crash the block must hold it or a newer one.
func (st State) Acked(b int) int { return int(st.acked[b]) }

// Version returns the version of its blocks that write w (1-based) carries.
func (st State) Version(w int) int { return int(st.ver[w-1]) }

// System is the protocol for the explorer.
type System struct {
	cfg     Config
	actors  []string
	flusher int // actor of the flusher thread (-1: none)
	device  int
}

// NewSystem checks the configuration. A run submits at most Blocks
// device writes per write() call in all (a direct bio only when at least
// one block goes direct, and each dirtied page is written back once, by
// whoever gets to it first) and at most one flush per call, so the bounds
// below keep every history within spec.Contract's limits.
func NewSystem(cfg Config) (*System, error) {
	if _, ok := variantNames[cfg.Variant]; !ok {
		return nil, fmt.Errorf("odsync model: unknown variant %d", cfg.Variant)
	}
	if cfg.Tasks < 1 || cfg.Tasks > maxODTasks {
		return nil, fmt.Errorf("odsync model: %d tasks, want 1 to %d", cfg.Tasks, maxODTasks)
	}
	if cfg.Blocks < 1 || cfg.Blocks > 4 || cfg.Tasks*cfg.Blocks > spec.MaxBlocks {
		return nil, fmt.Errorf("odsync model: %d tasks x %d blocks, want 1 to 4 blocks and at most %d in all", cfg.Tasks, cfg.Blocks, spec.MaxBlocks)
	}
	calls := cfg.Tasks * cfg.Writes
	if cfg.Writes < 1 || calls*cfg.Blocks > spec.MaxWrites || calls > spec.MaxFlushes || cfg.Writes > 255 {
		return nil, fmt.Errorf("odsync model: %d tasks x %d writes x %d blocks may need more than %d device writes or %d flushes",
			cfg.Tasks, cfg.Writes, cfg.Blocks, spec.MaxWrites, spec.MaxFlushes)
	}
	s := &System{cfg: cfg, flusher: -1}
	for t := 0; t < cfg.Tasks; t++ {
		s.actors = append(s.actors, string(rune('A'+t)))
	}
	if cfg.Writeback {
		s.flusher = len(s.actors)
		s.actors = append(s.actors, "flusher")
	}
	s.device = len(s.actors)
	s.actors = append(s.actors, "device")
	return s, nil
}

// Config returns the scenario.
func (s *System) Config() Config { return s.cfg }

// Actors implements System.
func (s *System) Actors() []string { return s.actors }

// Init implements System.
func (s *System) Init() []State {
	return []State{{dev: spec.NewContract(s.cfg.Device)}}
}

// rangeOf returns the blocks task t writes; prefix(t, k) its first k.
func (s *System) rangeOf(t int) uint8 { return s.prefix(t, s.cfg.Blocks) }

func (s *System) prefix(t, k int) uint8 {
	return uint8((1<<k)-1) << (t * s.cfg.Blocks)
}

// Label kinds.
const (
	odkDirect     uint8 = iota + 1 // ID: the direct write (0: none), Arg: blocks direct
	odkBuffered                    // Arg: the blocks dirtied
	odkWBSubmit                    // ID: the write, Arg: blocks | caller<<8
	odkWBDone                      // Arg: caller | error<<8
	odkFlush                       // ID: the flush (0: the errseq check failed first)
	odkReturn                      // ID: the call, Arg: blocks returned (0: -EIO) | skipped<<8
	odkBackground                  // ID: the write, Arg: its block
	odkDevice                      // ID: the command, Arg: its spec.Kind
)

// Describe implements System.
func (s *System) Describe(l explore.Label) string {
	t := int(l.Actor)
	switch l.Kind {
	case odkDirect:
		if l.ID == 0 {
			return fmt.Sprintf("blkdev_direct_write returns 0: all %d blocks fall back", s.cfg.Blocks)
		}
		e, _ := s.DeviceEvent(l)
		return fmt.Sprintf("direct bio: %v (%d of %d blocks)", e, l.Arg, s.cfg.Blocks)
	case odkBuffered:
		return fmt.Sprintf("blkdev_buffered_write: %s dirty in the page cache", spec.BlockList(uint8(l.Arg)))
	case odkWBSubmit:
		e, _ := s.DeviceEvent(l)
		return fmt.Sprintf("%s: write-back %v", callerNames[l.Arg>>8], e)
	case odkWBDone:
		caller := callerNames[uint8(l.Arg)]
		switch {
		case uint8(l.Arg) == callerSyncRange:
			return caller + ": write-back done"
		case l.Arg>>8 != 0:
			return caller + ": pages written, filemap_check_errors -> -EIO"
		}
		return caller + ": pages written, filemap_check_errors -> 0"
	case odkFlush:
		if l.ID == 0 {
			return "generic_write_sync: file_check_and_advance_wb_err -> -EIO"
		}
		return fmt.Sprintf("generic_write_sync: F%d submit (empty PREFLUSH)", l.ID)
	case odkReturn:
		n := int(uint8(l.Arg))
		if n == 0 {
			return fmt.Sprintf("write() #%d returns -EIO", l.ID)
		}
		mask := s.prefix(t, n)
		str := fmt.Sprintf("write() #%d returns %d block(s) (%s)", l.ID, n, spec.BlockList(mask))
		if l.Arg>>8 != 0 {
			str += ", generic_write_sync skipped"
		}
		return str
	case odkBackground:
		e, _ := s.DeviceEvent(l)
		return fmt.Sprintf("wb_workfn: background write-back %v", e)
	case odkDevice:
		e, _ := s.DeviceEvent(l)
		return e.String()
	}
	return fmt.Sprintf("step %d", l.Kind)
}

// DeviceEvent returns the device event a step causes, if any: a write or
// flush submitted by a task or the flusher, or the device's own completion,
// post-flush or failure. The events of a path, in order, are the history
// the device saw.
func (s *System) DeviceEvent(l explore.Label) (spec.Event, bool) {
	switch l.Kind {
	case odkDirect:
		if l.ID == 0 {
			return spec.Event{}, false
		}
		return spec.Event{Kind: spec.WriteSubmit, ID: int(l.ID), Blocks: s.prefix(int(l.Actor), int(l.Arg)), FUA: s.cfg.Variant.directFUA()}, true
	case odkWBSubmit, odkBackground:
		return spec.Event{Kind: spec.WriteSubmit, ID: int(l.ID), Blocks: uint8(l.Arg)}, true
	case odkFlush:
		if l.ID == 0 {
			return spec.Event{}, false
		}
		return spec.Event{Kind: spec.FlushSubmit, ID: int(l.ID)}, true
	case odkDevice:
		return spec.Event{Kind: spec.Kind(l.Arg), ID: int(l.ID)}, true
	}
	return spec.Event{}, false
}

// Unfinished implements System: the tasks with write() calls left (the
// flusher and the device never return).
func (s *System) Unfinished(st State) uint64 {
	var u uint64
	for t := 0; t < s.cfg.Tasks; t++ {
		if st.task[t].pc != pcDone {
			u |= 1 << t
		}
	}
	return u
}

// Next implements System.
func (s *System) Next(st State, yield func(explore.Label, State)) {
	for t := 0; t < s.cfg.Tasks; t++ {
		s.taskSteps(st, t, yield)
	}
	if s.flusher >= 0 {
		s.flusherSteps(st, yield)
	}
	s.deviceSteps(st, yield)
}

func (s *System) label(actor int, kind uint8, id, arg int) explore.Label {
	return explore.Label{Actor: uint8(actor), Kind: kind, ID: uint16(id), Arg: uint16(arg)}
}

// submit queues a write of blocks carrying version ver and returns its number.
func (s *System) submit(n *State, blocks uint8, fua bool, ver uint8) int {
	id := n.dev.Writes() + 1
	s.apply(n, spec.Event{Kind: spec.WriteSubmit, ID: id, Blocks: blocks, FUA: fua})
	n.ver[id-1] = ver
	n.live |= 1 << (id - 1)
	if fua {
		n.fua |= 1 << (id - 1)
	}
	for m := blocks; m != 0; m &= m - 1 {
		n.last[bits.TrailingZeros8(m)] = uint8(id)
	}
	return id
}

// apply feeds the contract; an event it rejects is a bug of this model.
func (s *System) apply(n *State, e spec.Event) {
	if err := n.dev.Apply(e); err != nil {
		panic(fmt.Sprintf("odsync model: %v", err))
	}
}

// busy returns the blocks of mask whose page is dirty or under write-back.
func (st *State) busy(mask uint8) uint8 {
	var m uint8
	for bm := mask; bm != 0; bm &= bm - 1 {
		if b := bits.TrailingZeros8(bm); st.page[b].st != pageClean {
			m |= 1 << b
		}
	}
	return m
}

func (st *State) pagesIn(mask uint8, state uint8) uint8 {
	var m uint8
	for bm := mask; bm != 0; bm &= bm - 1 {
		if b := bits.TrailingZeros8(bm); st.page[b].st == state {
			m |= 1 << b
		}
	}
	return m
}

// decide is blkdev_write_iter after the direct part (and the fallback):
// generic_write_sync or not, per variant. The patch's skip and mutant
// MutantSkipSyncOnFallback's are here (see syncs).
func (s *System) decide(n *State, t int, fallback bool) {
	tk := &n.task[t]
	if s.cfg.Variant.syncs(fallback) {
		tk.pc = pcSync
		return
	}
	tk.pc, tk.skipped = pcReturn, true
}

// taskSteps yields task t's next steps, one function per phase of
// blkdev_write_iter, in the order the code runs them:
//
//	start           startCall (kiocb_invalidate_pages' write-and-wait, if needed)
//	direct part     directPart (then writeEnded, a device step)
//	fallback        bufferedFallback
//	write-and-wait  writeAndWaitSubmit, writeAndWaitDone (kiocb_invalidate_pages,
//	                direct_write_fallback, blkdev_fsync)
//	sync            genericWriteSync (after decide)
//	return          writeReturn
//
// A phase with nothing to do goes on to the next in the same step.
func (s *System) taskSteps(st State, t int, yield func(explore.Label, State)) {
	switch st.task[t].pc {
	case pcStart:
		s.startCall(st, t, yield)
	case pcDirect:
		s.directPart(st, t, yield)
	case pcBuffered:
		s.bufferedFallback(st, t, yield)
	case pcWBWrite:
		s.writeAndWaitSubmit(st, t, yield)
	case pcWBWait:
		s.writeAndWaitDone(st, t, yield)
	case pcSync:
		s.genericWriteSync(st, t, yield)
	case pcReturn:
		s.writeReturn(st, t, yield)
	}
}

// startCall starts the next write() call: kiocb_invalidate_pages writes
// back and waits for the range's busy pages first, if there are any.
func (s *System) startCall(st State, t int, yield func(explore.Label, State)) {
	tk := st.task[t]
	n := st
	n.task[t] = task{pc: pcDirect, round: tk.round + 1, unseen: tk.unseen}
	if n.busy(s.rangeOf(t)) != 0 {
		// kiocb_invalidate_pages: filemap_write_and_wait_range first.
		// (Only the fallback-dirty mutant leaves dirty pages behind.)
		n.task[t].pc, n.task[t].wbMask, n.task[t].wbFor = pcWBWrite, s.rangeOf(t), callerInvalidate
	}
	s.taskSteps(n, t, yield)
}

// directPart chooses how many blocks go direct (none, a prefix, or all)
// and submits their bio.
func (s *System) directPart(st State, t int, yield func(explore.Label, State)) {
	tk := st.task[t]
	for k := 0; k <= s.cfg.Blocks; k++ {
		n := st
		nt := &n.task[t]
		nt.k = uint8(k)
		if k == 0 {
			// kiocb_invalidate_pages -EBUSY: blkdev_direct_write returns 0.
			nt.pc = pcBuffered
			yield(s.label(t, odkDirect, 0, 0), n)
			continue
		}
		// mutant MutantDropFUA: the bio is a plain write; dio_bio_write_op
		// (block/fops.c) adds REQ_FUA for a dsync iocb.
		id := s.submit(&n, s.prefix(t, k), s.cfg.Variant.directFUA(), tk.round)
		nt.pc, nt.wait = pcDirectWait, uint8(id)
		yield(s.label(t, odkDirect, id, k), n)
	}
}

// bufferedFallback is blkdev_buffered_write: the blocks that did not go
// direct are dirtied in the page cache; direct_write_fallback then writes
// them back and waits.
func (s *System) bufferedFallback(st State, t int, yield func(explore.Label, State)) {
	tk := st.task[t]
	n := st
	nt := &n.task[t]
	rest := s.rangeOf(t) &^ s.prefix(t, int(tk.k))
	for bm := rest; bm != 0; bm &= bm - 1 {
		b := bits.TrailingZeros8(bm)
		if n.page[b].st != pageClean {
			panic(fmt.Sprintf("odsync model: buffered write into b%d, whose page is busy", b))
		}
		n.page[b] = page{st: pageDirty, ver: tk.round}
	}
	if s.cfg.Variant.leavesFallbackDirty() {
		// mutant MutantFallbackDirty: no filemap_write_and_wait_range; the
		// pages are left dirty and the whole count is returned.
		// direct_write_fallback (fs/libfs.c) writes the range back and
		// waits for it before returning.
		nt.n = uint8(s.cfg.Blocks)
		s.decide(&n, t, true)
	} else {
		nt.pc, nt.wbMask, nt.wbFor = pcWBWrite, rest, callerFallback
	}
	yield(s.label(t, odkBuffered, 0, int(rest)), n)
}

// writeAndWaitSubmit submits one write-back of the dirty pages of wbMask
// (pages the flusher is already writing are only waited for).
func (s *System) writeAndWaitSubmit(st State, t int, yield func(explore.Label, State)) {
	tk := st.task[t]
	n := st
	dirty := st.pagesIn(tk.wbMask, pageDirty)
	n.task[t].pc = pcWBWait
	if dirty == 0 {
		// Nothing to submit: only pages the flusher is writing.
		s.taskSteps(n, t, yield)
		return
	}
	ver := st.page[bits.TrailingZeros8(dirty)].ver
	for bm := dirty; bm != 0; bm &= bm - 1 {
		if st.page[bits.TrailingZeros8(bm)].ver != ver {
			panic("odsync model: one write-back of two versions")
		}
	}
	id := s.submit(&n, dirty, false, ver)
	for bm := dirty; bm != 0; bm &= bm - 1 {
		n.page[bits.TrailingZeros8(bm)] = page{st: pageWriteback, ver: ver, wid: uint8(id)}
	}
	yield(s.label(t, odkWBSubmit, id, int(dirty)|int(tk.wbFor)<<8), n)
}

// writeAndWaitDone waits until no page of wbMask is under write-back, checks
// errors as its caller does, and returns to the caller.
func (s *System) writeAndWaitDone(st State, t int, yield func(explore.Label, State)) {
	tk := st.task[t]
	if st.busy(tk.wbMask) != 0 {
		return // __filemap_fdatawait_range: pages still under write-back
	}
	n := st
	nt := &n.task[t]
	failed := false
	switch tk.wbFor {
	case callerInvalidate, callerFallback:
		failed = n.asEIO // filemap_check_errors: test_and_clear_bit(AS_EIO)
		n.asEIO = false
	}
	switch {
	case tk.wbFor == callerSyncRange:
		nt.pc = pcSync // the range is clean now: the errseq check and the flush
	case tk.wbFor == callerInvalidate && failed:
		nt.pc, nt.failed = pcReturn, true
	case tk.wbFor == callerInvalidate:
		nt.pc = pcDirect
	case failed && tk.k > 0:
		// direct_write_fallback: only the direct bytes are reported,
		// and generic_write_sync still runs (ret > 0): its errseq check
		// reports the fallback's error, so write() fails.
		nt.n = tk.k
		if mutate.On(mutate.ODSyncShortSkipsSync) {
			nt.pc, nt.skipped = pcReturn, true // mutation: the short write returns without the sync
			break
		}
		s.decide(&n, t, true)
	case failed:
		nt.pc, nt.failed = pcReturn, true
	default:
		nt.n = uint8(s.cfg.Blocks)
		s.decide(&n, t, true)
	}
	nt.wbMask, nt.wbFor = 0, 0
	errArg := 0
	if failed {
		errArg = 1
	}
	yield(s.label(t, odkWBDone, 0, int(tk.wbFor)|errArg<<8), n)
}

// genericWriteSync is blkdev_fsync: file_write_and_wait_range, the errseq
// check, then an empty PREFLUSH waited for (its end is a device step).
func (s *System) genericWriteSync(st State, t int, yield func(explore.Label, State)) {
	tk := st.task[t]
	n := st
	nt := &n.task[t]
	if mask := s.prefix(t, int(tk.n)); st.busy(mask) != 0 {
		// file_write_and_wait_range. Not reached by the variants here
		// (the fallback leaves its range clean), kept for fidelity.
		nt.pc, nt.wbMask, nt.wbFor = pcWBWrite, mask, callerSyncRange
		s.taskSteps(n, t, yield)
		return
	}
	// file_check_and_advance_wb_err: report an errseq error this
	// file has not seen; clear AS_EIO in any case.
	n.asEIO = false
	if tk.unseen {
		nt.unseen, nt.failed, nt.pc = false, true, pcReturn
		yield(s.label(t, odkFlush, 0, 0), n)
		return
	}
	n.nf++
	id := int(n.nf)
	s.apply(&n, spec.Event{Kind: spec.FlushSubmit, ID: id})
	n.flive |= 1 << (id - 1)
	nt.pc, nt.wait = pcFlushWait, uint8(id)
	yield(s.label(t, odkFlush, id, 0), n)
}

// writeReturn is write() returning: the blocks it returns are acknowledged
// (Check holds a crash to them from now on).
func (s *System) writeReturn(st State, t int, yield func(explore.Label, State)) {
	tk := st.task[t]
	n := st
	ret := 0
	if !tk.failed {
		ret = int(tk.n)
		for bm := s.prefix(t, ret); bm != 0; bm &= bm - 1 {
			n.acked[bits.TrailingZeros8(bm)] = tk.round
		}
	}
	arg := ret
	if tk.skipped {
		arg |= 1 << 8
	}
	n.task[t] = task{pc: pcStart, round: tk.round, unseen: tk.unseen}
	if int(tk.round) == s.cfg.Writes {
		n.task[t].pc = pcDone
	}
	yield(s.label(t, odkReturn, int(tk.round), arg), n)
}

// flusherSteps: wb_workfn may write back any dirty page (WB_SYNC_NONE).
func (s *System) flusherSteps(st State, yield func(explore.Label, State)) {
	for b := 0; b < s.cfg.Tasks*s.cfg.Blocks; b++ {
		if st.page[b].st != pageDirty {
			continue
		}
		n := st
		id := s.submit(&n, 1<<b, false, st.page[b].ver)
		n.page[b] = page{st: pageWriteback, ver: st.page[b].ver, wid: uint8(id)}
		yield(s.label(s.flusher, odkBackground, id, 1<<b), n)
	}
}

func (s *System) deviceSteps(st State, yield func(explore.Label, State)) {
	// st is this call's own copy: no need for another one of its contract.
	st.dev.DeviceEvents(s.cfg.Failures, func(e spec.Event) { s.deviceStep(st, e, yield) })
}

// deviceStep applies a device event and wakes whoever waited for it (the
// wake-up only moves the woken task's own program counter, so it commutes
// with every other step and is not a step of its own).
func (s *System) deviceStep(st State, e spec.Event, yield func(explore.Label, State)) {
	n := st
	s.apply(&n, e)
	switch e.Kind {
	case spec.WriteDataDone:
		n.post |= 1 << (e.ID - 1)
	case spec.WriteComplete, spec.WriteFail:
		ok := e.Kind == spec.WriteComplete
		bit := uint32(1) << (e.ID - 1)
		n.live &^= bit
		n.post &^= bit
		if !ok {
			n.failed |= bit
		}
		s.writeEnded(&n, e.ID, ok)
	case spec.FlushComplete, spec.FlushFail:
		n.flive &^= 1 << (e.ID - 1)
		for t := 0; t < s.cfg.Tasks; t++ {
			if tk := &n.task[t]; tk.pc == pcFlushWait && int(tk.wait) == e.ID {
				if mutate.On(mutate.WaiterNeverWakes) {
					continue // mutation: the flush's end wakes nobody (submit_bio_wait never returns)
				}
				tk.pc, tk.wait = pcReturn, 0
				tk.failed = e.Kind == spec.FlushFail
			}
		}
	}
	yield(s.label(s.device, odkDevice, e.ID, int(e.Kind)), n)
}

func (s *System) writeEnded(n *State, id int, ok bool) {
	wrote := false
	for b := range n.page {
		if p := &n.page[b]; p.st == pageWriteback && int(p.wid) == id {
			// end of page write-back; invalidate_mapping_pages then drops
			// the clean page (and a failed one is not redirtied).
			*p = page{}
			wrote = true
		}
	}
	if wrote && !ok {
		// mapping_set_error: AS_EIO and the mapping's errseq_t.
		n.asEIO = true
		for t := 0; t < s.cfg.Tasks; t++ {
			n.task[t].unseen = true
		}
	}
	for t := 0; t < s.cfg.Tasks; t++ {
		tk := &n.task[t]
		if tk.pc != pcDirectWait || int(tk.wait) != id {
			continue
		}
		tk.wait = 0
		switch {
		case !ok: // blkdev_direct_write returns the error: no fallback, no sync
			tk.pc, tk.failed = pcReturn, true
		case int(tk.k) == s.cfg.Blocks:
			tk.n = tk.k
			s.decide(n, t, false)
		default:
			tk.pc = pcBuffered
		}
	}
}

// Loss is the violation: a write() returned a block as written, and
// a crash now may leave on it something older than what it returned.
type Loss struct {
	Task    string
	Call    int // the task's write() call that returned the block
	Block   int
	Content int // what the crash may leave: a write number, 0 = initial content
	Version int // the version that write carries (0 for the initial content)
	Why     string
}

func (e *Loss) Error() string {
	what := "its initial content"
	if e.Content > 0 {
		what = fmt.Sprintf("W%d, the data of %s's write() #%d (older)", e.Content, e.Task, e.Version)
	}
	return fmt.Sprintf("%s's write() #%d returned b%d as written, but a crash now may leave b%d = %s: acknowledged data lost (%s)",
		e.Task, e.Call, e.Block, e.Block, what, e.Why)
}

// Check implements System: every block a write() returned must survive a
// crash now.
func (s *System) Check(st State) error {
	for b := 0; b < s.cfg.Tasks*s.cfg.Blocks; b++ {
		acked := st.acked[b]
		if acked == 0 {
			continue
		}
		allowed := st.dev.Allowed(b)
		bad, found := 0, allowed.Initial
		for m := allowed.Writes; !found && m != 0; m &= m - 1 {
			if w := bits.TrailingZeros32(m); st.ver[w] < acked {
				bad, found = w+1, true
			}
		}
		if !found {
			continue
		}
		loss := &Loss{Task: s.actors[b/s.cfg.Blocks], Call: int(acked), Block: b, Content: bad, Why: s.why(&st, b, acked)}
		if bad > 0 {
			loss.Version = int(st.ver[bad-1])
		}
		return loss
	}
	return nil
}

// why says where the acknowledged version of block b is.
func (s *System) why(st *State, b int, ver uint8) string {
	if p := st.page[b]; p.st == pageDirty && p.ver == ver {
		return "it is only in the page cache, as a dirty page"
	}
	w := int(st.last[b])
	if w == 0 || st.ver[w-1] != ver {
		return "it never reached the device"
	}
	bit := uint32(1) << (w - 1)
	kind := "a plain write"
	if st.fua&bit != 0 {
		kind = "a FUA write"
	}
	switch {
	case st.failed&bit != 0:
		return fmt.Sprintf("W%d, %s that carried it, failed with EIO", w, kind)
	case st.live&bit != 0:
		return fmt.Sprintf("W%d, %s that carries it, is still in flight", w, kind)
	}
	for _, o := range st.dev.Obligations() {
		if o.Write == w && o.Block == b {
			return fmt.Sprintf("W%d, which carried it, is durable, but an older write still in flight may land over it", w)
		}
	}
	return fmt.Sprintf("W%d, %s that carried it, completed into the volatile write cache and no FUA or flush made it durable", w, kind)
}
