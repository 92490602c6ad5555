package iowq

import (
	"fmt"
	"math/bits"
	"strings"

	"github.com/flushproof/flushproof/model/explore"
)

// io-wq hashing of O_DIRECT writes as an explicit-state system.
//
// io_uring punts a write it cannot issue without blocking to io-wq. Before
// the patch, io_prep_async_work (io_uring/io_uring.c) hashed every write to
// a regular file on its inode, and io-wq runs work items with the same hash
// one at a time. After the patch, an O_DIRECT write to a file whose file
// system sets FMODE_DIO_PARALLEL_WRITE is not hashed: io-wq workers issue
// such writes in parallel, and the file system's own locking must make that
// safe. That locking is what this model is about.
//
// The file is a few blocks of two sectors each. A block is written, unwritten
// (allocated, reads as zeros, still holds some earlier file's data on the
// disk) or a hole; i_size is counted in sectors. A write covers a whole block
// (aligned) or one sector of it (unaligned, sub-block). Each worker runs its
// writes in order, one work item after another:
//
//	pick     take the next write from io-wq; a hashed write needs the
//	         inode's hash, which no other worker may hold (the write's
//	         interval starts here: the file system cannot see it earlier)
//	lock     decide the locking path (iowq_fs.go) and take i_rwsem shared
//	         or exclusive; if exclusive and the path says so, inode_dio_wait:
//	         wait until i_dio_count is 0 (no direct I/O in flight)
//	map      iomap_begin and submission: look the block up; under
//	         IOMAP_DIO_OVERWRITE_ONLY an unwritten block or a hole returns
//	         -EAGAIN (drop the lock, retry exclusive); otherwise
//	         inode_dio_begin, submit the data bio and, for a sub-block write
//	         into an unwritten block or a hole, a bio that zeroes the rest of
//	         the block (fs/iomap/direct-io.c, iomap_dio_bio_iter's
//	         need_zeroout and iomap_dio_zero)
//	wait     with IOMAP_DIO_FORCE_WAIT, or for a synchronous kiocb (SyncDIO),
//	         wait until the write completed, still holding the lock
//	unlock   release i_rwsem, and the hash: the work item ends. io-wq's
//	         kiocb is asynchronous, so without a wait the write is still in
//	         flight here (io_uring/rw.c io_write: -EIOCBQUEUED ends the
//	         issue; the CQE is posted when the write completes)
//
// The disk lands each bio of a write (the zeroing and the data, sector by
// sector, in any order), and once all have landed runs end_io: the block is
// converted to written (xfs_dio_write_end_io / ext4_dio_write_end_io), i_size
// grows to cover the write, inode_dio_end, and the write completes (its CQE).
// An optional reader takes i_rwsem shared and reads one sector at a time.
//
// What a read returns for sector s: nothing past i_size (counted as the
// initial content, 0), zeros for an unwritten block or a hole (also 0),
// otherwise what the disk holds: the initial content (0), zeros from
// sub-block zeroing (0), a write's data (its number) or another file's stale
// data (Stale).
//
// The obligation is that every sector is a linearizable register. The
// explorer checks it on the content a read would return, in every state:
// the content of s must be the data of a write W to s that has started and
// that no completed write to s supersedes (one that started after W
// completed); the initial content 0 is superseded by any completed write to
// s; stale data is never allowed. A violation is a lost write (its data
// was wiped, by zeroing or by an older write landing late) or exposed stale
// data. Reads during the run and porcupine on recorded histories check the
// whole history (linearize/file.go).

// Stale is the content of a sector that still holds another file's data.
const Stale = 0xff

const (
	sectorsPerBlock = 2
	maxBlocks       = 4
	maxSectors      = maxBlocks * sectorsPerBlock
	maxWorkers      = 8
	maxWrites       = 16
	maxReads        = 8
	readerSlot      = maxWorkers // the reader's index in pc, op and the lock masks
)

// Submit is how io_uring hands a file's direct writes to io-wq.
type Submit uint8

// The two ways.
const (
	// Hashed: io_wq_hash_work on the inode, one work item of the file
	// at a time (before the patch; after it, on a file system without
	// FMODE_DIO_PARALLEL_WRITE).
	Hashed Submit = iota + 1
	// Unhashed: the patch on a file system with the flag; workers
	// issue the file's writes in parallel.
	Unhashed
)

func (s Submit) String() string {
	switch s {
	case Hashed:
		return "hashed"
	case Unhashed:
		return "unhashed"
	}
	return fmt.Sprintf("IOWQSubmit(%d)", uint8(s))
}

// Write is one direct write: a whole block (Aligned) or one sector of it.
type Write struct {
	Block   int
	Sector  int // 0 or 1, the sector within the block; unused when Aligned
	Aligned bool
	_       struct{}
}

// sectors returns the file sectors the write covers (bit s = sector s).
func (w Write) sectors() uint8 {
	if w.Aligned {
		return 3 << (sectorsPerBlock * w.Block)
	}
	return 1 << (sectorsPerBlock*w.Block + w.Sector)
}

func (w Write) String() string {
	if w.Aligned {
		return fmt.Sprintf("b%d", w.Block)
	}
	return fmt.Sprintf("s%d", sectorsPerBlock*w.Block+w.Sector)
}

// Config is one bounded scenario.
type Config struct {
	Submit Submit
	FS     FS
	// SyncDIO makes every write wait for its own completion before it
	// unlocks (a synchronous kiocb: iomap_dio_rw waits). io-wq's writes are
	// asynchronous, so this is off for io_uring.
	SyncDIO bool
	// Layout has one letter per block: W written, U unwritten
	// (preallocated), H hole.
	Layout string
	// Size is i_size in sectors, a whole number of blocks; blocks past it
	// must be U or H.
	Size    int
	Workers [][]Write // each worker's writes, in order; 1 to 8 workers, at most 16 writes
	Reads   []int     // the reader's reads (sectors), in order; none: no reader
	_       struct{}
}

func (c Config) nWrites() int {
	n := 0
	for _, ws := range c.Workers {
		n += len(ws)
	}
	return n
}

func (c Config) validate() error {
	if c.Submit != Hashed && c.Submit != Unhashed {
		return fmt.Errorf("iowq model: unknown submission %d", c.Submit)
	}
	if _, ok := fsNames[c.FS]; !ok {
		return fmt.Errorf("iowq model: unknown file system %d", c.FS)
	}
	nb := len(c.Layout)
	if nb < 1 || nb > maxBlocks {
		return fmt.Errorf("iowq model: layout %q: want 1 to %d blocks", c.Layout, maxBlocks)
	}
	if c.Size < 0 || c.Size > nb*sectorsPerBlock || c.Size%sectorsPerBlock != 0 {
		return fmt.Errorf("iowq model: i_size %d sectors: want a whole number of blocks within the layout %q", c.Size, c.Layout)
	}
	for b, l := range c.Layout {
		switch {
		case l != 'W' && l != 'U' && l != 'H':
			return fmt.Errorf("iowq model: layout %q: block %d is %q, want W, U or H", c.Layout, b, l)
		case l == 'W' && b*sectorsPerBlock >= c.Size:
			return fmt.Errorf("iowq model: layout %q: written block %d lies past i_size %d", c.Layout, b, c.Size)
		}
	}
	if len(c.Workers) < 1 || len(c.Workers) > maxWorkers {
		return fmt.Errorf("iowq model: %d workers, want 1 to %d", len(c.Workers), maxWorkers)
	}
	if n := c.nWrites(); n < 1 || n > maxWrites {
		return fmt.Errorf("iowq model: %d writes, want 1 to %d", n, maxWrites)
	}
	for w, ws := range c.Workers {
		for i, wr := range ws {
			if wr.Block < 0 || wr.Block >= nb || (!wr.Aligned && (wr.Sector < 0 || wr.Sector >= sectorsPerBlock)) {
				return fmt.Errorf("iowq model: worker %d write %d (%+v) is outside the file", w, i, wr)
			}
		}
	}
	if len(c.Reads) > maxReads {
		return fmt.Errorf("iowq model: %d reads, want at most %d", len(c.Reads), maxReads)
	}
	for i, s := range c.Reads {
		if s < 0 || s >= nb*sectorsPerBlock {
			return fmt.Errorf("iowq model: read %d of sector %d is outside the file", i, s)
		}
	}
	return nil
}

// Describe renders the workload as a bound.
func (c Config) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d workers, %d writes (", len(c.Workers), c.nWrites())
	for w, ws := range c.Workers {
		if w > 0 {
			b.WriteString("; ")
		}
		b.WriteString(workerName(w) + ":")
		for i, wr := range ws {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(" " + wr.String())
		}
	}
	b.WriteString(")")
	if len(c.Reads) > 0 {
		b.WriteString(", reads")
		for _, s := range c.Reads {
			fmt.Fprintf(&b, " s%d", s)
		}
	}
	fmt.Fprintf(&b, ", layout %s, i_size %d", c.Layout, c.Size)
	return b.String()
}

func workerName(w int) string { return string(rune('A' + w)) }

// Worker program counters.
const (
	pcPick   uint8 = iota // take the next write from io-wq
	pcLock                // decide the path, take i_rwsem
	pcDrain               // inode_dio_wait
	pcMap                 // iomap_begin + submit, or -EAGAIN
	pcWait                // wait for its own write to complete, then unlock
	pcUnlock              // unlock: the work item ends
	pcDone
)

// Reader program counters.
const (
	pcReadLock uint8 = iota // take i_rwsem shared
	pcRead                  // read one sector, unlock
	pcReadDone
)

// State is a state of System; comparable.
type State struct {
	disk    [maxSectors]uint8 // what the disk holds
	alloc   uint8             // blocks allocated (not holes)
	written uint8             // blocks whose extent is written
	size    uint8             // i_size in sectors
	dio     uint8             // i_dio_count: writes submitted, end_io not run
	lockX   uint8             // i_rwsem exclusive holder: worker+1 (0: none)
	lockS   uint16            // i_rwsem shared holders (bit = worker, readerSlot = reader)
	hash    uint8             // worker+1 running the inode's hashed work (0: none)

	pc   [maxWorkers + 1]uint8 // workers, then the reader
	op   [maxWorkers + 1]uint8 // the current write or read, index in the program
	path [maxWorkers]uint8     // the current write's locking path (lockPath bits)

	zero, data [maxWrites]uint8 // bios in flight per write: sub-block zeroing, data (sector masks)
	started    uint16           // writes picked (their interval has begun)
	submitted  uint16           // writes submitted (mapped)
	done       uint16           // writes completed (end_io ran)
	// before[k]: the completed writes overlapping write k when k started;
	// once k completes they are superseded on the sectors they share.
	before [maxWrites]uint16
}

// writeInfo is a write of the configuration, numbered from 1 in worker order.
type writeInfo struct {
	Write
	worker  int
	sectors uint8
	overlap uint16 // writes (bit k-1) sharing a sector with it, itself included
}

// System is the protocol for the explorer.
type System struct {
	cfg    Config
	writes []writeInfo // index k-1 for write k
	first  []int       // first write number of each worker
	actors []string
	reader int // actor number of the reader (-1: none)
	disk   int // actor number of the disk
}

// NewSystem checks the configuration.
func NewSystem(cfg Config) (*System, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &System{cfg: cfg, reader: -1}
	for w, ws := range cfg.Workers {
		s.first = append(s.first, len(s.writes)+1)
		for _, wr := range ws {
			s.writes = append(s.writes, writeInfo{Write: wr, worker: w, sectors: wr.sectors()})
		}
		s.actors = append(s.actors, workerName(w))
	}
	for i := range s.writes {
		for j := range s.writes {
			if s.writes[i].sectors&s.writes[j].sectors != 0 {
				s.writes[i].overlap |= 1 << j
			}
		}
	}
	if len(cfg.Reads) > 0 {
		s.reader = len(s.actors)
		s.actors = append(s.actors, "reader")
	}
	s.disk = len(s.actors)
	s.actors = append(s.actors, "disk")
	return s, nil
}

// Config returns the configuration.
func (s *System) Config() Config { return s.cfg }

// Actors implements System: the workers, the reader if any, the disk.
func (s *System) Actors() []string { return s.actors }

func (s *System) sectors() int { return len(s.cfg.Layout) * sectorsPerBlock }

// Init implements System.
func (s *System) Init() []State {
	st := State{size: uint8(s.cfg.Size)}
	for b, l := range s.cfg.Layout {
		switch l {
		case 'W':
			st.alloc |= 1 << b
			st.written |= 1 << b
		case 'U':
			st.alloc |= 1 << b
			fallthrough
		case 'H':
			for i := 0; i < sectorsPerBlock; i++ {
				st.disk[b*sectorsPerBlock+i] = Stale
			}
		}
	}
	for w := range s.cfg.Workers {
		if len(s.cfg.Workers[w]) == 0 {
			st.pc[w] = pcDone
		}
	}
	if s.reader < 0 {
		st.pc[readerSlot] = pcReadDone
	}
	return []State{st}
}

// Content returns what a read of sector sec returns in st: 0 for the
// initial content or zeros, k for write k's data, Stale for stale data.
func (s *System) Content(st State, sec int) int {
	b := sec / sectorsPerBlock
	if sec >= int(st.size) || st.written&(1<<b) == 0 {
		return 0
	}
	return int(st.disk[sec])
}

// curWrite is the number of worker w's current write.
func (s *System) curWrite(st State, w int) int { return s.first[w] + int(st.op[w]) }

func (s *System) info(k int) writeInfo { return s.writes[k-1] }

// Check implements System: every sector's content is admissible for a
// linearizable register (see the comment at the top of the file).
func (s *System) Check(st State) error {
	for sec := 0; sec < s.sectors(); sec++ {
		v := s.Content(st, sec)
		if v == Stale {
			return fmt.Errorf("s%d reads stale data (another file's): an unwritten block was converted before all of it was written", sec)
		}
		for j := range s.writes {
			k := j + 1
			if st.done&(1<<j) == 0 || s.writes[j].sectors&(1<<sec) == 0 {
				continue
			}
			if v == 0 {
				return fmt.Errorf("lost write: %s completed, but s%d reads zeros/initial content", s.writeName(k), sec)
			}
			if st.before[j]&(1<<(v-1)) != 0 {
				return fmt.Errorf("lost write: %s completed after %s had completed, but s%d holds %s's data", s.writeName(k), s.writeName(v), sec, valueName(v))
			}
		}
	}
	return nil
}

func (s *System) writeName(k int) string {
	w := s.info(k)
	return fmt.Sprintf("W%d (%s: %s)", k, workerName(w.worker), w.Write)
}

// valueName names a sector's content.
func valueName(v int) string {
	switch v {
	case 0:
		return "0"
	case Stale:
		return "stale"
	}
	return fmt.Sprintf("W%d", v)
}

// Unfinished implements System: the workers with writes left, and the
// reader with reads left (the disk never returns).
func (s *System) Unfinished(st State) uint64 {
	var m uint64
	for w := range s.cfg.Workers {
		if st.pc[w] != pcDone {
			m |= 1 << w
		}
	}
	if s.reader >= 0 && st.pc[readerSlot] != pcReadDone {
		m |= 1 << s.reader
	}
	return m
}

// blockReason says what a worker waits for.
type blockReason uint8

const (
	notBlocked blockReason = iota
	blockedHash
	blockedLock
	blockedDrain
	blockedOwnIO
)

// blocked says whether worker w cannot move in st, and why.
func (s *System) blocked(st State, w int) blockReason {
	switch st.pc[w] {
	case pcPick:
		if s.cfg.Submit.hashed() && st.hash != 0 {
			return blockedHash
		}
	case pcLock:
		if !lockFree(st, s.lockPath(st, w)&pathExcl != 0) {
			return blockedLock
		}
	case pcDrain:
		if st.dio != 0 {
			return blockedDrain
		}
	case pcWait:
		if st.done&(1<<(s.curWrite(st, w)-1)) == 0 {
			return blockedOwnIO
		}
	}
	return notBlocked
}

func lockFree(st State, excl bool) bool {
	if excl {
		return st.lockX == 0 && st.lockS == 0
	}
	return st.lockX == 0
}

// lockPath is the path worker w's current write takes if it locks in st.
func (s *System) lockPath(st State, w int) lockPath {
	k := s.curWrite(st, w)
	return s.cfg.path(s.info(k).Write, st, lockPath(st.path[w])&pathRetry != 0)
}

// Step kinds, for labels.
const (
	kPick uint8 = iota + 1
	kLock
	kDrain
	kMap
	kEAGAIN
	kWaitUnlock
	kUnlock
	kZero
	kLand
	kEndIO
	kReadLock
	kRead
)

func label(actor int, kind uint8, id, arg int) explore.Label {
	return explore.Label{Actor: uint8(actor), Kind: kind, ID: uint16(id), Arg: uint16(arg)}
}

// Next implements System.
func (s *System) Next(st State, yield func(explore.Label, State)) {
	for w := range s.cfg.Workers {
		s.workerStep(st, w, yield)
	}
	if s.reader >= 0 {
		s.readerStep(st, yield)
	}
	s.diskSteps(st, yield)
}

// Map step argument bits.
const (
	argDrained = 1 << 8 // lock: inode_dio_wait found nothing in flight

	mapUnwritten = 1 << 0 // the block was unwritten
	mapHole      = 1 << 1 // the block was a hole (allocated now, as unwritten)
	mapDemote    = 1 << 2 // exclusive demoted to shared
	mapZeroShift = 8      // bits 8-15: the sectors zeroed, relative to the block
)

// Describe implements System.
func (s *System) Describe(l explore.Label) string {
	k, a := int(l.ID), int(l.Arg)
	switch l.Kind {
	case kPick:
		if s.cfg.Submit == Hashed {
			return fmt.Sprintf("W%d %s: takes it (holds the inode's hash)", k, s.info(k).Write)
		}
		return fmt.Sprintf("W%d %s: takes it", k, s.info(k).Write)
	case kLock:
		p := lockPath(a & 0xff)
		mode := "shared"
		if p&pathExcl != 0 {
			mode = "exclusive"
		}
		txt := "i_rwsem " + mode
		switch {
		case a&argDrained != 0:
			txt += ", inode_dio_wait: none in flight"
		case p&pathDrain != 0:
			txt += ", inode_dio_wait ..."
		case p&pathExcl != 0:
			txt += " (no inode_dio_wait)"
		}
		return txt
	case kDrain:
		return "... inode_dio_wait returns"
	case kEAGAIN:
		return fmt.Sprintf("iomap: b%d %s: -EAGAIN, unlock, retry", s.info(k).Block, mapState(a))
	case kMap:
		wr := s.info(k)
		txt := fmt.Sprintf("iomap: b%d %s", wr.Block, mapState(a))
		if z := uint8(a >> mapZeroShift); z != 0 {
			for m := z; m != 0; m &= m - 1 {
				txt += fmt.Sprintf(", zero s%d", sectorsPerBlock*wr.Block+bits.TrailingZeros8(m))
			}
		}
		txt += ", submit W" + fmt.Sprint(k)
		if a&mapDemote != 0 {
			txt += ", demote to shared"
		}
		return txt
	case kWaitUnlock:
		return fmt.Sprintf("W%d done (waited), unlock", k)
	case kUnlock:
		if a == 1 {
			return "unlock, release hash"
		}
		return "unlock"
	case kZero:
		return fmt.Sprintf("s%d zeroed (W%d's sub-block zeroing)", a, k)
	case kLand:
		return fmt.Sprintf("W%d lands on s%d", k, a)
	case kEndIO:
		return fmt.Sprintf("W%d end_io: b%d written, i_size %d, dio %d; completes", k, s.info(k).Block, a>>8, a&0xff)
	case kReadLock:
		return fmt.Sprintf("read s%d: i_rwsem shared", a)
	case kRead:
		return fmt.Sprintf("read s%d = %s, unlock", a&0xff, valueName(a>>8))
	}
	return fmt.Sprintf("step %d", l.Kind)
}

func mapState(arg int) string {
	switch {
	case arg&mapHole != 0:
		return "hole"
	case arg&mapUnwritten != 0:
		return "unwritten"
	}
	return "written"
}
