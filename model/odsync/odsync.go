package odsync

import (
	"fmt"
	"math/bits"

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
	if err := cfg.validate(); err != nil {
		return nil, err
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

// validate checks that the scenario is within System's bounds.
func (cfg Config) validate() error {
	if _, ok := variantNames[cfg.Variant]; !ok {
		return fmt.Errorf("odsync model: unknown variant %d", cfg.Variant)
	}
	if cfg.Tasks < 1 || cfg.Tasks > maxODTasks {
		return fmt.Errorf("odsync model: %d tasks, want 1 to %d", cfg.Tasks, maxODTasks)
	}
	if cfg.Blocks < 1 || cfg.Blocks > 4 || cfg.Tasks*cfg.Blocks > spec.MaxBlocks {
		return fmt.Errorf("odsync model: %d tasks x %d blocks, want 1 to 4 blocks and at most %d in all", cfg.Tasks, cfg.Blocks, spec.MaxBlocks)
	}
	calls := cfg.Tasks * cfg.Writes
	if cfg.Writes < 1 || calls*cfg.Blocks > spec.MaxWrites || calls > spec.MaxFlushes || cfg.Writes > 255 {
		return fmt.Errorf("odsync model: %d tasks x %d writes x %d blocks may need more than %d device writes or %d flushes",
			cfg.Tasks, cfg.Writes, cfg.Blocks, spec.MaxWrites, spec.MaxFlushes)
	}
	return nil
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
