package diocount

import (
	"fmt"
	"github.com/flushproof/flushproof/model/memory"
)

// DIO counting with DAX (the patch "ext4: Add DIO_SKIP_DIO_COUNT flag to
// dax_do_io()"; docs/diocount.md) as an explicit-state system.
//
// i_dio_count counts the direct I/O in flight on an inode. inode_dio_begin
// is atomic_inc (unordered); inode_dio_end is atomic_dec_and_test (fully
// ordered) and wakes the waiters when the count reaches 0
// (include/linux/fs.h). Truncate runs with i_mutex held (do_truncate ->
// ext4_setattr, ATTR_SIZE, shrinking): it sets i_size, waits in
// inode_dio_wait (fs/inode.c) until the count is 0, then frees the blocks
// past the new size (ext4_truncate). A direct write of the patch's era
// (ext4_file_write_iter -> ext4_ext_direct_IO, fs/ext4/inode.c, v4.6):
//
//	inode_lock                        ext4_file_write_iter; overwrite = the
//	                                  blocks are mapped and inside i_size
//	inode_dio_begin                   the caller's count, under i_mutex
//	if overwrite: inode_unlock        the I/O runs without i_mutex
//	dax_do_io (fs/dax.c) or __blockdev_direct_IO (fs/direct-io.c):
//	    inode_dio_begin               the callee's count, unless DIO_SKIP_DIO_COUNT
//	    get_block                     file block -> disk block
//	    DAX: CPU stores (synchronous); block: submit_bio, then wait
//	    (dio_await_completion) or, for AIO, return -EIOCBQUEUED
//	    inode_dio_end                 the callee's count, unless DIO_SKIP_DIO_COUNT:
//	                                  dax_do_io before it returns; dio_complete,
//	                                  which for AIO runs when the bio completes
//	inode_dio_end                     the caller's count
//	if overwrite: inode_lock          then ext4_file_write_iter's inode_unlock
//
// Because the overwrite path drops i_mutex during the I/O, truncate cannot
// rely on the lock: only the count keeps it from freeing a block that a
// direct write has mapped and not yet written. The callee's count is
// redundant while the caller's is held (DAX and synchronous block DIO); it
// is the only one left for an AIO bio after the caller's inode_dio_end.
//
// The obligation: no direct write lands in a disk block after truncate
// freed it (through a mapping taken before the free). It is checked at
// every landing: a DAX store by the writer, a bio by the device.
//
// Model. Writer w owns file block bw, mapped to disk block dw; truncate
// shrinks the file to 0 and frees every dw. A writer that takes i_mutex
// after truncate finds its block past i_size: that write extends the file
// into a newly allocated block (the non-overwrite path), which no mapping
// taken earlier can reach; it is one step. The counter lives in Memory
// (SC, TSO or Relaxed). i_mutex is a lock with release/acquire semantics:
// under Relaxed, a task that takes it sees at least what the last holder saw
// when it let go (in particular that holder's inode_dio_begin).
// inode_dio_wait is the v4.6 code: a plain atomic_read; if non-zero,
// prepare_to_wait (set_current_state: smp_mb) and read again; sleep until
// the inode_dio_end that reached 0 wakes it (waking is a full barrier).
//
// Steps that touch only the stepping task's own state are fused with the
// step before them (the sync bio's completion with the waiter's wake-up,
// truncate's inode_unlock with the free, the re-taken i_mutex with its
// release, a write after the truncate with its inode_lock); truncate's
// barriers are fused with the read after them, and its wake-up (enabled
// while the count is 0) with its re-read. Every read-modify-write of the
// counter, every other lock operation, get_block and landing is a step of
// its own.

// Kind is how a writer's direct writes reach the disk.
type Kind uint8

// The kinds of direct write.
const (
	// DAX: dax_do_io; the CPU stores the data before it returns.
	DAX Kind = iota + 1
	// SyncDIO: __blockdev_direct_IO for a synchronous kiocb; it
	// waits for the bio (dio_await_completion) and runs dio_complete
	// before it returns.
	SyncDIO
	// AIO: __blockdev_direct_IO for an asynchronous kiocb; it
	// returns -EIOCBQUEUED with the bio in flight, and dio_complete runs
	// when the bio completes.
	AIO
)

// Kinds lists the kinds.
func Kinds() []Kind { return []Kind{DAX, SyncDIO, AIO} }

func (k Kind) String() string {
	switch k {
	case DAX:
		return "dax"
	case SyncDIO:
		return "sync-dio"
	case AIO:
		return "aio-dio"
	}
	return fmt.Sprintf("DIOCountKind(%d)", uint8(k))
}

// Variant is one version of the counting code: which I/O kinds the
// callee (dax_do_io, __blockdev_direct_IO) is told not to count.
type Variant uint8

// The variants.
const (
	// Baseline: before the patch, caller and callee both count.
	Baseline Variant = iota + 1
	// Patched: the patch, DIO_SKIP_DIO_COUNT for dax_do_io.
	Patched
	// BenignSkipSync: also DIO_SKIP_DIO_COUNT for synchronous
	// block DIO, which completes before the caller's inode_dio_end just as
	// DAX does: safe, the false-positive control.
	BenignSkipSync
	// MutantSkipAsync: DIO_SKIP_DIO_COUNT for DAX and for
	// asynchronous block DIO, whose bio outlives the caller's count.
	MutantSkipAsync
	// MutantBeginAfterUnlock: patched, but the caller's
	// inode_dio_begin comes after the overwrite path dropped i_mutex (the
	// comment in ext4_ext_direct_IO asks for the increment under i_mutex).
	MutantBeginAfterUnlock
)

var variantNames = map[Variant]string{
	Baseline: "baseline", Patched: "patched",
	BenignSkipSync:         "benign-skip-sync",
	MutantSkipAsync:        "mutant-skip-async",
	MutantBeginAfterUnlock: "mutant-begin-after-unlock",
}

func (v Variant) String() string {
	if s, ok := variantNames[v]; ok {
		return s
	}
	return fmt.Sprintf("DIOCountVariant(%d)", uint8(v))
}

// Variants lists every variant, real ones first.
func Variants() []Variant {
	return []Variant{Baseline, Patched, BenignSkipSync,
		MutantSkipAsync, MutantBeginAfterUnlock}
}

// Mutant reports whether the variant is a negative control.
func (v Variant) Mutant() bool {
	return v == MutantSkipAsync || v == MutantBeginAfterUnlock
}

// CalleeSkips reports whether the variant passes DIO_SKIP_DIO_COUNT to the
// callee for direct writes of kind k.
func (v Variant) CalleeSkips(k Kind) bool {
	switch v {
	case Patched, MutantBeginAfterUnlock:
		return k == DAX
	case BenignSkipSync:
		return k == DAX || k == SyncDIO
	case MutantSkipAsync:
		return k == DAX || k == AIO
	}
	return false
}

// Config is one bounded scenario.
type Config struct {
	Variant Variant
	Memory  memory.Model
	// Writers gives the kind of each writer task's direct writes (1 to 5
	// writers); writer w writes file block bw.
	Writers []Kind
	// IOs is the number of direct writes per writer (one at a time).
	IOs int
	// HoldLock: the writes are not overwrites, so ext4_ext_direct_IO keeps
	// i_mutex across the I/O. By default they are overwrites and i_mutex is
	// dropped during the I/O.
	HoldLock bool
	// TruncateAfter holds truncate back until this many direct writes
	// (over all writers) have started: 0 lets it run at any time (every
	// schedule); random walks use it to put the truncate in the middle of
	// long runs instead of, most of the time, near their start.
	TruncateAfter int
	// NoTruncate leaves the truncate task out (for counting RMWs).
	NoTruncate bool
	_          struct{}
}

// Op is what a step of System does; it is the Label's Kind.
type Op uint8

// The steps. Writer steps are named after the code of ext4_ext_direct_IO
// and its callee, device steps after the bio's completion, truncate steps
// after ext4_setattr and inode_dio_wait.
const (
	OpLock        Op = iota + 1 // writer: inode_lock (ext4_file_write_iter), its block inside i_size
	OpBeyondEOF                 // writer: inode_lock finds its block truncated: extending write to a new block; inode_unlock
	OpCallerBegin               // writer: ext4_ext_direct_IO's inode_dio_begin
	OpUnlock                    // writer: overwrite: inode_unlock before the I/O
	OpCalleeBegin               // writer: dax_do_io's or __blockdev_direct_IO's inode_dio_begin
	OpMap                       // writer: get_block (Arg 1: a hole, nothing to write)
	OpDAXStore                  // writer: dax_io's CPU stores land in the disk block
	OpSubmit                    // writer: submit_bio; AIO: return -EIOCBQUEUED
	OpCalleeEnd                 // writer: the callee's inode_dio_end (dax_do_io, or dio_complete in the submitter)
	OpCallerEnd                 // writer: ext4_ext_direct_IO's inode_dio_end
	OpRelock                    // writer: overwrite: inode_lock again, return, inode_unlock
	OpUnlockEnd                 // writer: not an overwrite: return, inode_unlock
	OpBioLands                  // device: a bio lands (synchronous: it completes and the writer wakes)
	OpAIOComplete               // device: dio_complete of an AIO: the callee's inode_dio_end
	OpTruncLock                 // truncate: inode_lock, i_size = 0
	OpWaitRead                  // truncate: inode_dio_wait's first atomic_read (ID: newest value)
	OpWaitPrepare               // truncate: prepare_to_wait (smp_mb), atomic_read; sleeps if not 0
	OpWaitWoken                 // truncate: woken by the inode_dio_end that reached 0, reads 0
	OpTruncFree                 // truncate: ext4_truncate frees the blocks; inode_unlock
	OpBarrier                   // any actor (LKMM): the barrier after its last fully ordered RMW takes effect, before its next step

	opWaitBio Op = 100 // a writer waits for its synchronous bio: no step of its own
)

// CounterRMW is the change the step makes to i_dio_count with one
// read-modify-write: +1 (inode_dio_begin), -1 (inode_dio_end) or 0.
func (o Op) CounterRMW() int {
	switch o {
	case OpCallerBegin, OpCalleeBegin:
		return 1
	case OpCalleeEnd, OpCallerEnd, OpAIOComplete:
		return -1
	}
	return 0
}
