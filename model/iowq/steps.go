package iowq

import (
	"math/bits"

	"github.com/flushproof/flushproof/internal/mutate"
	"github.com/flushproof/flushproof/model/explore"
)

// workerStep yields worker w's next step, one function per phase of a work
// item (the comment at the top of the file): pick, lock (with
// inode_dio_wait), map and submit, wait, unlock.
func (s *System) workerStep(st State, w int, yield func(explore.Label, State)) {
	if st.pc[w] == pcDone || s.blocked(st, w) != notBlocked {
		return
	}
	k := s.curWrite(st, w)
	n := st
	switch st.pc[w] {
	case pcPick:
		s.pickStep(st, w, k, yield)
	case pcLock:
		s.lockStep(st, w, k, yield)
	case pcDrain:
		n.pc[w] = pcMap
		yield(label(w, kDrain, k, 0), n)
	case pcMap:
		s.mapStep(st, w, k, yield)
	case pcWait:
		// Woken by the completion (fused with the unlock: the wake-up
		// touches only the worker's own state).
		s.unlock(&n, w)
		yield(label(w, kWaitUnlock, k, 0), n)
	case pcUnlock:
		s.unlock(&n, w)
		arg := 0
		if s.cfg.Submit.hashed() {
			arg = 1
		}
		yield(label(w, kUnlock, k, arg), n)
	}
}

// hashWaiter reports whether a worker other than w has writes left and
// waits for the hash that w holds in st.
func (s *System) hashWaiter(st *State, w int) bool {
	for u := range s.cfg.Workers {
		if u != w && st.pc[u] == pcPick && s.blocked(*st, u) == blockedHash {
			return true
		}
	}
	return false
}

// hashed reports whether io-wq runs the file's writes one at a time.
func (s Submit) hashed() bool { return s == Hashed }

// pickStep is io-wq handing worker w its write k (and the inode's hash, if
// hashed): the write's interval begins.
func (s *System) pickStep(st State, w, k int, yield func(explore.Label, State)) {
	bit := uint16(1) << (k - 1)
	n := st
	if s.cfg.Submit.hashed() {
		n.hash = uint8(w + 1)
	}
	n.started |= bit
	n.before[k-1] = st.done & s.info(k).overlap
	n.path[w] = 0
	n.pc[w] = pcLock
	yield(label(w, kPick, k, 0), n)
}

// lockStep takes i_rwsem as the file system's path says, and goes to
// inode_dio_wait if the path drains. The mutant file systems differ from
// the real ones only in that path (Config.path): MutantExt4Unwritten2011
// takes the lock shared for an unaligned write into an unwritten block,
// MutantXFSNoDIOWait drops the drain.
func (s *System) lockStep(st State, w, k int, yield func(explore.Label, State)) {
	n := st
	p := s.lockPath(st, w)
	if p&pathExcl != 0 {
		n.lockX = uint8(w + 1)
	} else {
		n.lockS |= 1 << w
	}
	n.path[w] = uint8(p)
	n.pc[w] = pcMap
	arg := int(p)
	if p&pathDrain != 0 {
		if st.dio != 0 {
			n.pc[w] = pcDrain
		} else {
			// inode_dio_wait returns at once: with the lock held
			// exclusive no direct I/O can start, so nothing is lost
			// by not making this a step of its own.
			arg |= argDrained
		}
	}
	yield(label(w, kLock, k, arg), n)
}

// mapStep is iomap_begin and the submission of worker w's write k.
func (s *System) mapStep(st State, w, k int, yield func(explore.Label, State)) {
	wr := s.info(k)
	p := lockPath(st.path[w])
	bb := uint8(1) << wr.Block
	unwritten := st.written&bb == 0
	n := st
	arg := 0
	if unwritten {
		arg |= mapUnwritten
		if st.alloc&bb == 0 {
			arg |= mapHole
		}
	}
	if p&pathOverwriteOnly != 0 && unwritten {
		// IOMAP_DIO_OVERWRITE_ONLY: zeroing or allocation needed, so
		// iomap_begin says -EAGAIN; the write drops its shared lock and
		// retries exclusive (xfs_file_dio_write_unaligned, retry_exclusive).
		n.lockS &^= 1 << w
		n.path[w] = uint8(pathRetry)
		n.pc[w] = pcLock
		yield(label(w, kEAGAIN, k, arg), n)
		return
	}
	n.alloc |= bb
	n.data[k-1] = wr.sectors
	if !wr.Aligned && unwritten {
		blockMask := uint8(3) << (sectorsPerBlock * wr.Block)
		n.zero[k-1] = blockMask &^ wr.sectors
		arg |= int(n.zero[k-1]>>(sectorsPerBlock*wr.Block)) << mapZeroShift
	}
	n.dio++
	n.submitted |= 1 << (k - 1)
	if p&pathDemote != 0 {
		n.lockX = 0
		n.lockS |= 1 << w
		arg |= mapDemote
	}
	n.pc[w] = pcUnlock
	if p&pathWait != 0 {
		n.pc[w] = pcWait
	}
	yield(label(w, kMap, k, arg), n)
}

// unlock releases worker w's lock and hash and moves it to its next write.
func (s *System) unlock(n *State, w int) {
	if n.lockX == uint8(w+1) {
		n.lockX = 0
	}
	n.lockS &^= 1 << w
	if n.hash == uint8(w+1) && !(mutate.On(mutate.WaiterNeverWakes) && s.hashWaiter(n, w)) {
		// mutation WaiterNeverWakes: a worker found the hash busy and
		// waits for it, but the wake-up that releasing the hash sends
		// (io_wq_hash_wake) is lost, so the work queue stays stalled on it.
		n.hash = 0
	}
	n.path[w] = 0
	n.op[w]++
	n.pc[w] = pcPick
	if int(n.op[w]) == len(s.cfg.Workers[w]) {
		n.pc[w] = pcDone
	}
}

func (s *System) readerStep(st State, yield func(explore.Label, State)) {
	r := readerSlot
	i := int(st.op[r])
	n := st
	switch st.pc[r] {
	case pcReadLock:
		if st.lockX != 0 {
			return
		}
		n.lockS |= 1 << r
		n.pc[r] = pcRead
		yield(label(s.reader, kReadLock, i, s.cfg.Reads[i]), n)
	case pcRead:
		sec := s.cfg.Reads[i]
		v := s.Content(st, sec)
		n.lockS &^= 1 << r
		n.op[r]++
		n.pc[r] = pcReadLock
		if int(n.op[r]) == len(s.cfg.Reads) {
			n.pc[r] = pcReadDone
		}
		yield(label(s.reader, kRead, i, sec|v<<8), n)
	}
}

func (s *System) diskSteps(st State, yield func(explore.Label, State)) {
	for j := range s.writes {
		k := j + 1
		if st.submitted&(1<<j) == 0 || st.done&(1<<j) != 0 {
			continue
		}
		if st.zero[j] == 0 && st.data[j] == 0 {
			n := st
			wr := s.writes[j]
			n.written |= 1 << wr.Block
			n.alloc |= 1 << wr.Block
			end := uint8(sectorsPerBlock*wr.Block + sectorsPerBlock)
			if !wr.Aligned {
				end = uint8(sectorsPerBlock*wr.Block + wr.Sector + 1)
			}
			n.size = max(n.size, end)
			n.dio--
			n.done |= 1 << j
			yield(label(s.disk, kEndIO, k, int(n.size)<<8|int(n.dio)), n)
			continue
		}
		for m := st.zero[j]; m != 0; m &= m - 1 {
			sec := bits.TrailingZeros8(m)
			n := st
			n.disk[sec] = 0
			n.zero[j] &^= 1 << sec
			yield(label(s.disk, kZero, k, sec), n)
		}
		for m := st.data[j]; m != 0; m &= m - 1 {
			sec := bits.TrailingZeros8(m)
			n := st
			n.disk[sec] = uint8(k)
			n.data[j] &^= 1 << sec
			yield(label(s.disk, kLand, k, sec), n)
		}
	}
}
