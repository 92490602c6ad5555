package iowq

import "fmt"

// How each modelled file system locks a direct write: the path a write takes
// through i_rwsem, inode_dio_wait and IOMAP_DIO_FORCE_WAIT, decided when it
// takes the lock, from the write, i_size and the block's mapping.

// FS is a file system's direct-write locking.
type FS uint8

// The file systems: three correct ones and two mutants that the checker
// must catch (each differs from a correct one by one rule).
const (
	// XFS is fs/xfs/xfs_file.c. Aligned writes
	// (xfs_file_dio_write_aligned): i_rwsem shared; a write starting past
	// i_size takes it exclusive and drains in-flight direct I/O
	// (xfs_file_write_checks: inode_dio_wait), then demotes it to shared
	// before the I/O. Unaligned writes (xfs_file_dio_write_unaligned): if
	// the write starts past i_size or ends at or past it, exclusive +
	// inode_dio_wait + IOMAP_DIO_FORCE_WAIT; otherwise shared with
	// IOMAP_DIO_OVERWRITE_ONLY, which fails with -EAGAIN if the block needs
	// allocation or zeroing, and the write retries exclusive. Sets
	// FMODE_DIO_PARALLEL_WRITE.
	XFS FS = iota + 1
	// Ext4 is fs/ext4/file.c ext4_dio_write_checks: shared only for a
	// write that does not extend i_size, covers allocated blocks only and is
	// not an unaligned write into an unwritten block; otherwise exclusive.
	// Exclusive and unaligned or extending: IOMAP_DIO_FORCE_WAIT, and
	// inode_dio_wait if it is unaligned and not a pure overwrite of written
	// blocks. Sets FMODE_DIO_PARALLEL_WRITE.
	Ext4
	// NoFlag is a file system without FMODE_DIO_PARALLEL_WRITE: i_rwsem
	// exclusive for every direct write (as generic_file_write_iter in
	// mm/filemap.c takes inode_lock for every write), with ext4's
	// drain-and-wait rules for unaligned or extending writes. Safe, but
	// io-wq workers writing one file queue on i_rwsem.
	NoFlag
	// MutantExt4Unwritten2011 is a mutant of Ext4 without the rule that an
	// unaligned write into an unwritten block takes i_rwsem exclusive: two
	// such writes into one block run in parallel under the shared lock, and
	// each zeroes the rest of the block, which may wipe the other's sector.
	// This is the ext4 corruption of 2011, which ext4 fixed by serialising
	// unaligned asynchronous direct writes and waiting for unwritten
	// conversions (ext4_unaligned_aio, ext4_unwritten_wait in older
	// fs/ext4/file.c); ext4_dio_write_checks keeps the rule today ("unaligned
	// I/O to unwritten extents ... partial block zeroing").
	MutantExt4Unwritten2011
	// MutantXFSNoDIOWait is a mutant of XFS whose exclusive paths skip
	// inode_dio_wait: an unaligned write may zero part of a block while an
	// aligned write into it is still in flight ("Otherwise we risk data
	// corruption due to unwritten extent conversions from the AIO end_io
	// handler", xfs_file_dio_write_unaligned).
	MutantXFSNoDIOWait
)

var fsNames = map[FS]string{
	XFS: "xfs", Ext4: "ext4", NoFlag: "noflag",
	MutantExt4Unwritten2011: "mutant-ext4-2011-shared-unwritten", MutantXFSNoDIOWait: "mutant-xfs-no-dio-wait",
}

func (f FS) String() string {
	if s, ok := fsNames[f]; ok {
		return s
	}
	return fmt.Sprintf("IOWQFS(%d)", uint8(f))
}

// FileSystems lists every file system, the correct ones first.
func FileSystems() []FS {
	return []FS{XFS, Ext4, NoFlag, MutantExt4Unwritten2011, MutantXFSNoDIOWait}
}

// Mutant reports whether the file system is a negative control.
func (f FS) Mutant() bool { return f == MutantExt4Unwritten2011 || f == MutantXFSNoDIOWait }

// ParallelDIO reports whether the file system sets FMODE_DIO_PARALLEL_WRITE,
// that is, whether the patched io_uring leaves its direct writes unhashed.
// The mutants claim it too: that is how their bug would meet parallel io-wq
// workers.
func (f FS) ParallelDIO() bool { return f != NoFlag }

// drainsExclusive: the exclusive paths wait for the direct I/O in flight
// (inode_dio_wait); MutantXFSNoDIOWait does not.
func (f FS) drainsExclusive() bool { return f != MutantXFSNoDIOWait }

// unalignedUnwrittenExclusive: an unaligned write into an unwritten block
// takes i_rwsem exclusive; MutantExt4Unwritten2011 takes it shared.
func (f FS) unalignedUnwrittenExclusive() bool { return f != MutantExt4Unwritten2011 }

// lockPath is the locking path of one write (a bit set).
type lockPath uint8

const (
	pathExcl          lockPath = 1 << iota // i_rwsem exclusive
	pathDrain                              // inode_dio_wait after taking it
	pathWait                               // wait for its own completion before unlocking
	pathOverwriteOnly                      // IOMAP_DIO_OVERWRITE_ONLY: -EAGAIN if the block is not written
	pathDemote                             // exclusive for the checks only, demoted to shared before the I/O
	pathRetry                              // retrying exclusive after -EAGAIN
)

// path decides how write wr locks when it takes i_rwsem in st. retry is set
// after an -EAGAIN from IOMAP_DIO_OVERWRITE_ONLY.
func (c Config) path(wr Write, st State, retry bool) lockPath {
	pos := sectorsPerBlock * wr.Block
	end := pos + sectorsPerBlock
	if !wr.Aligned {
		pos += wr.Sector
		end = pos + 1
	}
	isize := int(st.size)
	bb := uint8(1) << wr.Block
	written, allocated := st.written&bb != 0, st.alloc&bb != 0

	var p lockPath
	switch c.FS {
	case XFS, MutantXFSNoDIOWait:
		switch {
		case wr.Aligned && pos > isize:
			p = pathExcl | pathDrain | pathDemote
		case wr.Aligned:
			p = 0
		case retry || pos > isize || end >= isize:
			p = pathExcl | pathDrain | pathWait
		default:
			p = pathOverwriteOnly
		}
		if !c.FS.drainsExclusive() {
			// mutant MutantXFSNoDIOWait: the exclusive paths skip
			// inode_dio_wait, which xfs_file_dio_write_unaligned calls
			// before an unaligned write may zero part of a block.
			p &^= pathDrain
		}
	case Ext4, MutantExt4Unwritten2011, NoFlag:
		extend := end > isize
		// ext4_overwrite_io: every block allocated and within i_size.
		overwrite := allocated && end <= isize
		shared := !extend && overwrite && !(!wr.Aligned && !written)
		if !c.FS.unalignedUnwrittenExclusive() {
			// mutant MutantExt4Unwritten2011: an unaligned write into an
			// unwritten block takes i_rwsem shared; ext4_dio_write_checks
			// takes it exclusive, since the partial block zeroing of two
			// such writes races.
			shared = !extend && overwrite
		}
		if c.FS == NoFlag {
			shared = false
		}
		if !shared {
			p = pathExcl
			if !wr.Aligned || extend {
				p |= pathWait
			}
			if !wr.Aligned && (!overwrite || !written) {
				p |= pathDrain
			}
		}
	}
	if c.SyncDIO {
		p |= pathWait
	}
	return p
}
