/*
 * O_DSYNC direct writes to a raw block device: blkdev_write_iter() of
 * block/fops.c, which the patch "block: skip redundant flush for O_DSYNC
 * direct writes" changes, and the block/fops.c code it calls
 * (bdev_file_inode, dio_bio_write_op, blkdev_fsync, blkdev_direct_write,
 * blkdev_buffered_write), as linux v7.2.6 has them (the same text in
 * v6.18.5, v6.19.6 and v7.1.3), pasted unchanged in the block/fops.c
 * sections; the harness sections hold the rest, as stubs.
 *
 * The built-in model is model/odsync (docs/odsync.md); this harness is
 * its first bound, "2 tasks x 1 write x 2 blocks, EIO". Two tasks each
 * make one write() of two 4 KiB blocks to the block device opened
 * O_WRONLY|O_DIRECT|O_DSYNC, each on a range of its own (blocks 0-1 and
 * 2-3), every block with the value 1. A third task decides how far each
 * direct part gets (dio_choice), as the built-in model chooses it:
 * nothing (invalidate_inode_pages2_range() fails with -EBUSY,
 * blkdev_direct_write() returns 0 and all of it falls back to the page
 * cache), one block, or both. The obligation: when write() returns
 * n > 0 bytes, those blocks are durable (assert_durable right there: a
 * crash from then on cannot lose them).
 *
 * What the stubs do, and leave out:
 *   - blkdev_direct_IO() (block/fops.c, not pasted: it allocates bios,
 *     pins user pages and may complete asynchronously): a bio per block
 *     (a bio carries one block here), with the flags dio_bio_write_op()
 *     gives it, each submitted and waited for in turn (submit_bio_wait);
 *     a failed bio fails the direct part with -EIO.
 *   - The page cache: each task has the struct address_space of its own
 *     range (the only pages it touches): a mask of its dirty pages.
 *     blkdev_buffered_write() copies the rest of the write into dirty
 *     pages; direct_write_fallback() (fs/libfs.c, as the kernel has it)
 *     writes them back, a plain bio each, waited for in turn, and a
 *     failed one calls mapping_set_error(). The mapping's error state,
 *     which every opener of the device shares (the AS_EIO bit of flags
 *     and the errseq_t wb_err), is the file-scope bdev_wb both tasks'
 *     mappings point to. No flusher thread writes pages back.
 *   - As in the litmus files, kiocb_invalidate_pages() runs
 *     filemap_check_errors() (its write-and-wait finds no page of the
 *     range), which model/odsync does not, and the sync's
 *     file_write_and_wait_range() finds no dirty page in the range (the
 *     fallback wrote its pages back): only its errseq check is modelled.
 *   - AS_EIO is the only bit of flags, 1 when set: set_bit() and
 *     clear_bit() store the word, test_bit() is atomic_long_read(),
 *     test_and_clear_bit() atomic_long_xchg(), as the litmus files have
 *     them (kernel.h's are a load and a compare-and-swap loop each: with
 *     them a task names more than 64 registers). The errseq_t is a count of
 *     errors (errseq_set() an atomic_inc_return(): its cmpxchg is fully
 *     ordered), without the SEEN flag; the superblock's errseq is left
 *     out. file_check_and_advance_wb_err() reads it once, with
 *     smp_load_acquire() where the kernel has READ_ONCE() (clear_bit()
 *     follows with nothing between, and the checker's LKMM refuses a
 *     store after an unordered load of another location, as the litmus
 *     files say), and takes no file->f_lock (each task has its own file).
 *   - Failed copies into the page cache (-EFAULT), -ENOSPC, swap files,
 *     atomic writes, IOCB_NOWAIT, the file's times and the iov_iter's
 *     pages are left out.
 *   - For the checker's bounds (a task names at most 64 registers, 8 live
 *     at once), the stubs are lean: macros where a function would name a
 *     register for its result, one bio per task that every submission
 *     reuses, each task's range a constant. They have no loop: the
 *     front end forgets every constant it knew at a loop, and the flags
 *     dio_bio_write_op() reads must stay known.
 *
 * Check it, then check it with the patch applied, and each mutant as a
 * patch after it (mutant-*.patch here; the -nocache ones are its
 * false-positive controls):
 *   flushproof check examples/blkdev-odsync/blkdev-odsync.c
 *   flushproof check -patch examples/blkdev-odsync/0001-block-skip-redundant-flush.patch examples/blkdev-odsync/blkdev-odsync.c
 *   flushproof check -patch examples/blkdev-odsync/0001-block-skip-redundant-flush.patch -patch examples/blkdev-odsync/mutant-drop-fua.patch examples/blkdev-odsync/blkdev-odsync.c
 *
 * Expect: safe
 * Device: all
 * Failures: flush,write
 */
#include <flushproof/kernel.h>

/* flushproof: harness */
#define PAGE_SHIFT	12
#define PAGE_SIZE	(1 << PAGE_SHIFT)
#define SECTOR_SHIFT	9
#define EPERM		1
#define EBUSY		16
#define ETXTBSY		26
#define EIOCBQUEUED	529

/* What every write() writes, to every block of its range */
#define FLUSHPROOF_DATA	1

/*
 * include/linux/fs.h: the kiocb flags. The values are flushproof's, not
 * the kernel's (IOCB_DIRECT is 1 << 17 there, beyond what a register
 * holds): only their names mean anything.
 */
#define IOCB_DSYNC	(1 << 1)
#define IOCB_SYNC	(1 << 2)
#define IOCB_NOWAIT	(1 << 3)
#define IOCB_ATOMIC	(1 << 6)
#define IOCB_DONTCACHE	(1 << 7)
#define IOCB_DIRECT	(1 << 9)
#define IOCB_WRITE	(1 << 10)

/* include/linux/fs.h, include/linux/fs/super_types.h */
#define S_SYNC		(1 << 0)
#define SB_SYNCHRONOUS	(1 << 4)
#define __IS_FLG(inode, flg)	((inode)->i_sb->s_flags & (flg))
#define IS_SYNC(inode)		(__IS_FLG(inode, SB_SYNCHRONOUS) || \
					((inode)->i_flags & S_SYNC))
/* without CONFIG_SWAP */
#define IS_SWAPFILE(inode)	((void)(inode), 0U)

/* include/linux/pagemap.h */
enum mapping_flags {
	AS_EIO		= 0,	/* IO error on async write */
	AS_ENOSPC	= 1,	/* ENOSPC on async write */
};

typedef u32 dev_t;
typedef unsigned long pgoff_t;
typedef u32 errseq_t;

struct super_block { unsigned long s_flags; };
struct inode {
	unsigned int		i_flags;
	struct super_block	*i_sb;
	dev_t			i_rdev;
};
/* block/bdev.c */
struct bdev_inode {
	struct block_device bdev;
	struct inode vfs_inode;
};

/*
 * The block device's mapping as one task has it (see the header): its
 * pages, and the error state every opener of the device shares.
 */
struct flushproof_wb {
	unsigned long		flags;
	errseq_t		wb_err;
};
struct address_space {
	struct inode		*host;
	struct flushproof_wb	*flushproof_wb;
	unsigned int		flushproof_dirty;	/* bit i: page i is dirty */
	struct bio		flushproof_bio;		/* the task's bio */
};
struct file;
struct file_operations {
	int (*fsync) (struct file *, loff_t, loff_t, int datasync);
};
struct file {
	struct address_space	*f_mapping;
	const struct file_operations *f_op;
	errseq_t		f_wb_err;
};
struct kiocb {
	struct file		*ki_filp;
	loff_t			ki_pos;
	int			ki_flags;
	int			ki_flushproof_direct;	/* blocks the direct part writes */
};
/* lib/iov_iter.c: how much is left to write */
struct iov_iter {
	size_t			count;
};
struct iomap_ops { int flushproof_unused; };
struct iomap_write_ops;

/* include/linux/fs.h */
#define iocb_is_dsync(iocb)	(((iocb)->ki_flags & IOCB_DSYNC) || \
				 IS_SYNC((iocb)->ki_filp->f_mapping->host))

/* block/bdev.c */
static inline struct bdev_inode *BDEV_I(struct inode *inode)
{
	return container_of(inode, struct bdev_inode, vfs_inode);
}

struct block_device *I_BDEV(struct inode *inode)
{
	return &BDEV_I(inode)->bdev;
}

/* flushproof: block/fops.c */
static inline struct inode *bdev_file_inode(struct file *file)
{
	return file->f_mapping->host;
}

static blk_opf_t dio_bio_write_op(struct kiocb *iocb)
{
	blk_opf_t opf = REQ_OP_WRITE | REQ_SYNC | REQ_IDLE;

	/* avoid the need for a I/O completion work item */
	if (iocb_is_dsync(iocb))
		opf |= REQ_FUA;
	return opf;
}

/* flushproof: harness */
/*
 * include/linux/uio.h, lib/iov_iter.c: only the count moves; nothing
 * reads it after write(), so iov_iter_reexpand() is left out.
 */
#define iov_iter_count(i)		((i)->count)
#define iov_iter_truncate(i, n)		do { if ((i)->count > (n)) (i)->count = (n); } while (0)
#define iov_iter_reexpand(i, n)		((void)(i))
#define iov_iter_advance(i, n)		((i)->count -= (n))
#define iov_iter_revert(i, n)		((i)->count += (n))

/*
 * include/asm-generic/bitops: flags holds AS_EIO alone, 1 when set, so
 * that setting or clearing the bit is storing the word.
 */
#define test_bit(nr, addr) \
	((nr) == AS_EIO && atomic_long_read((const atomic_long_t *)(addr)))
#define test_and_clear_bit(nr, addr) \
	((nr) == AS_EIO && atomic_long_xchg((atomic_long_t *)(addr), 0))
#define set_bit(nr, addr) \
	do { if ((nr) == AS_EIO) atomic_long_set((atomic_long_t *)(addr), 1); } while (0)
#define clear_bit(nr, addr) \
	do { if ((nr) == AS_EIO) atomic_long_set((atomic_long_t *)(addr), 0); } while (0)

/* lib/errseq.c, as a count of errors (see the header) */
#define errseq_set(eseq, err)	atomic_inc_return((atomic_t *)(eseq))

/* include/linux/pagemap.h, without the superblock's errseq */
static inline void mapping_set_error(struct address_space *mapping, int error)
{
	/* Record in wb_err for checkers using errseq_t based tracking */
	errseq_set(&mapping->flushproof_wb->wb_err, error);

	/* Record it in flags for now, for legacy callers */
	set_bit(AS_EIO, &mapping->flushproof_wb->flags);
}

/* mm/filemap.c, for AS_EIO */
static int filemap_check_errors(struct address_space *mapping)
{
	/* Check for outstanding write errors */
	if (!test_bit(AS_EIO, &mapping->flushproof_wb->flags))
		return 0;
	if (!test_and_clear_bit(AS_EIO, &mapping->flushproof_wb->flags))
		return 0;
	return -EIO;
}

/*
 * mm/filemap.c, __filemap_fdatawrite_range() and
 * __filemap_fdatawait_range(): the dirty pages of the range written
 * back, each a bio waited for in turn; a failed write calls
 * mapping_set_error(), as iomap's write-back completion does. A range
 * here is a write's, two pages at most, and holds every dirty page of
 * the task's mapping: after it, none is dirty.
 */
static void filemap_fdatawrite_range(struct address_space *mapping,
				     loff_t start, loff_t end)
{
	struct bio *bio = &mapping->flushproof_bio;

	bio->bi_bdev = I_BDEV(mapping->host);
	bio->bi_opf = REQ_OP_WRITE;
	bio->bi_iter.bi_sector = start >> PAGE_SHIFT;
	bio->bi_iter.bi_size = PAGE_SIZE;
	bio->bi_flushproof_value = FLUSHPROOF_DATA;
	if (mapping->flushproof_dirty & (1 << bio->bi_iter.bi_sector)) {
		if (submit_bio_wait(bio))
			mapping_set_error(mapping, -EIO);
	}
	bio->bi_iter.bi_sector++;
	if (bio->bi_iter.bi_sector <= end >> PAGE_SHIFT &&
	    (mapping->flushproof_dirty & (1 << bio->bi_iter.bi_sector))) {
		if (submit_bio_wait(bio))
			mapping_set_error(mapping, -EIO);
	}
	mapping->flushproof_dirty = 0;
}

/* mm/filemap.c */
#define filemap_write_and_wait_range(mapping, lstart, lend) \
	(filemap_fdatawrite_range((mapping), (lstart), (lend)), \
	 filemap_check_errors(mapping))

/*
 * mm/filemap.c: the write-back of the range finds no dirty page (see the
 * header), then file_check_and_advance_wb_err(): errseq_check(),
 * errseq_check_and_advance() with the value it read, and
 * clear_bit(AS_EIO).
 */
static int flushproof_file_write_and_wait(struct file *file)
{
	struct address_space *mapping = file->f_mapping;
	errseq_t old;

	old = smp_load_acquire(&mapping->flushproof_wb->wb_err);
	clear_bit(AS_EIO, &mapping->flushproof_wb->flags);
	if (old == file->f_wb_err)
		return 0;
	file->f_wb_err = old;
	return -EIO;
}
#define file_write_and_wait_range(file, lstart, lend) \
	flushproof_file_write_and_wait(file)

/* flushproof: block/fops.c */
static int blkdev_fsync(struct file *filp, loff_t start, loff_t end,
		int datasync)
{
	struct block_device *bdev = I_BDEV(filp->f_mapping->host);
	int error;

	error = file_write_and_wait_range(filp, start, end);
	if (error)
		return error;

	/*
	 * There is no need to serialise calls to blkdev_issue_flush with
	 * i_mutex and doing so causes performance issues with concurrent
	 * O_SYNC writers to a block device.
	 */
	error = blkdev_issue_flush(bdev);
	if (error == -EOPNOTSUPP)
		error = 0;

	return error;
}

/* flushproof: harness */
/* block/fops.c: the operation vfs_fsync_range() calls */
static const struct file_operations def_blk_fops = {
	.fsync		= blkdev_fsync,
};

/* fs/sync.c: the inode's times are not modelled */
#define vfs_fsync_range(file, start, end, datasync) \
	((file)->f_op->fsync((file), (start), (end), (datasync)))

/* include/linux/fs.h */
static inline ssize_t generic_write_sync(struct kiocb *iocb, ssize_t count)
{
	if (iocb_is_dsync(iocb)) {
		int ret = vfs_fsync_range(iocb->ki_filp,
				iocb->ki_pos - count, iocb->ki_pos - 1,
				(iocb->ki_flags & IOCB_SYNC) ? 0 : 1);
		if (ret)
			return ret;
	}
	return count;
}

/*
 * How many blocks a direct part writes (flushproof's choice, made by the
 * task chooser below): 0 stands for invalidate_inode_pages2_range()
 * failing with -EBUSY, the common way a direct write to a block device
 * falls back to the page cache.
 */
static int dio_choice;

/*
 * mm/filemap.c, filemap_invalidate_pages() without IOCB_NOWAIT: write
 * back and wait for the range, which has no dirty page (no part of this
 * write is in the page cache yet), so filemap_check_errors(); then
 * invalidate its pages: here, the choice.
 */
static int flushproof_invalidate_pages(struct kiocb *iocb)
{
	if (filemap_check_errors(iocb->ki_filp->f_mapping))
		return -EIO;
	/* invalidate_inode_pages2_range() */
	iocb->ki_flushproof_direct = smp_load_acquire(&dio_choice);
	if (!iocb->ki_flushproof_direct)
		return -EBUSY;
	return 0;
}
#define kiocb_invalidate_pages(iocb, count)	flushproof_invalidate_pages(iocb)

/* mm/filemap.c: the model keeps no clean page */
#define kiocb_invalidate_post_direct_write(iocb, count)	((void)(iocb))

/*
 * block/fops.c, __blkdev_direct_IO_simple(): a bio per block (at most
 * the write's two), with the flags dio_bio_write_op() gives it, submitted
 * and waited for in turn; a failed bio fails the direct part (and
 * blkdev_direct_write() reverts the iov_iter).
 */
static ssize_t blkdev_direct_IO(struct kiocb *iocb, struct iov_iter *iter)
{
	struct bio *bio = &iocb->ki_filp->f_mapping->flushproof_bio;

	bio->bi_bdev = I_BDEV(iocb->ki_filp->f_mapping->host);
	bio->bi_opf = dio_bio_write_op(iocb);
	bio->bi_iter.bi_sector = iocb->ki_pos >> PAGE_SHIFT;
	bio->bi_iter.bi_size = PAGE_SIZE;
	bio->bi_flushproof_value = FLUSHPROOF_DATA;
	if (iocb->ki_flushproof_direct > 0) {
		if (submit_bio_wait(bio))
			return -EIO;
	}
	bio->bi_iter.bi_sector++;
	if (iocb->ki_flushproof_direct > 1) {
		if (submit_bio_wait(bio))
			return -EIO;
	}
	iov_iter_advance(iter, iocb->ki_flushproof_direct << PAGE_SHIFT);
	return iocb->ki_flushproof_direct << PAGE_SHIFT;
}

/*
 * fs/iomap/buffered-io.c: the rest of the write copied into the page
 * cache: its pages are dirty.
 */
static const struct iomap_ops blkdev_iomap_ops;

ssize_t
iomap_file_buffered_write(struct kiocb *iocb, struct iov_iter *i,
		const struct iomap_ops *ops,
		const struct iomap_write_ops *write_ops, void *private)
{
	struct address_space *mapping = iocb->ki_filp->f_mapping;
	ssize_t ret = iov_iter_count(i);

	mapping->flushproof_dirty |= 1 << (iocb->ki_pos >> PAGE_SHIFT);
	if (ret > PAGE_SIZE)
		mapping->flushproof_dirty |= 2 << (iocb->ki_pos >> PAGE_SHIFT);
	iocb->ki_pos += ret;
	iov_iter_advance(i, ret);
	return ret;
}

/* mm/truncate.c: the model keeps no clean page */
#define invalidate_mapping_pages(mapping, start, end)	((void)(mapping), 0)

/* fs/libfs.c */
ssize_t direct_write_fallback(struct kiocb *iocb, struct iov_iter *iter,
		ssize_t direct_written, ssize_t buffered_written)
{
	struct address_space *mapping = iocb->ki_filp->f_mapping;
	loff_t pos = iocb->ki_pos - buffered_written;
	loff_t end = iocb->ki_pos - 1;
	int err;

	/*
	 * If the buffered write fallback returned an error, we want to return
	 * the number of bytes which were written by direct I/O, or the error
	 * code if that was zero.
	 *
	 * Note that this differs from normal direct-io semantics, which will
	 * return -EFOO even if some bytes were written.
	 */
	if (unlikely(buffered_written < 0)) {
		if (direct_written)
			return direct_written;
		return buffered_written;
	}

	/*
	 * We need to ensure that the page cache pages are written to disk and
	 * invalidated to preserve the expected O_DIRECT semantics.
	 */
	err = filemap_write_and_wait_range(mapping, pos, end);
	if (err < 0) {
		/*
		 * We don't know how much we wrote, so just return the number of
		 * bytes which were direct-written
		 */
		iocb->ki_pos -= buffered_written;
		if (direct_written)
			return direct_written;
		return err;
	}
	invalidate_mapping_pages(mapping, pos >> PAGE_SHIFT, end >> PAGE_SHIFT);
	return direct_written + buffered_written;
}

/*
 * include/linux/blkdev.h: four blocks of 4 KiB, writable; no
 * hibernation image (kernel/power/swap.c); the device's times are not
 * modelled (fs/inode.c); the buffered path and atomic writes are never
 * taken (IOCB_DIRECT, no IOCB_ATOMIC).
 */
#define bdev_nr_bytes(bdev)		((void)(bdev), (loff_t)4 << PAGE_SHIFT)
#define bdev_read_only(bdev)		((void)(bdev), false)
#define is_hibernate_resume_dev(dev)	((void)(dev), false)
#define file_update_time(file)		((void)(file), 0)
#define inode_lock_shared(inode)	((void)(inode))
#define inode_unlock_shared(inode)	((void)(inode))
int generic_atomic_write_valid(struct kiocb *iocb, struct iov_iter *iter);

/* flushproof: block/fops.c */
static ssize_t
blkdev_direct_write(struct kiocb *iocb, struct iov_iter *from)
{
	size_t count = iov_iter_count(from);
	ssize_t written;

	written = kiocb_invalidate_pages(iocb, count);
	if (written) {
		if (written == -EBUSY)
			return 0;
		return written;
	}

	written = blkdev_direct_IO(iocb, from);
	if (written > 0) {
		kiocb_invalidate_post_direct_write(iocb, count);
		iocb->ki_pos += written;
		count -= written;
	}
	if (written != -EIOCBQUEUED)
		iov_iter_revert(from, count - iov_iter_count(from));
	return written;
}

static ssize_t blkdev_buffered_write(struct kiocb *iocb, struct iov_iter *from)
{
	return iomap_file_buffered_write(iocb, from, &blkdev_iomap_ops, NULL,
			NULL);
}

/*
 * Write data to the block device.  Only intended for the block device itself
 * and the raw driver which basically is a fake block device.
 *
 * Does not take i_mutex for the write and thus is not for general purpose
 * use.
 */
static ssize_t blkdev_write_iter(struct kiocb *iocb, struct iov_iter *from)
{
	struct file *file = iocb->ki_filp;
	struct inode *bd_inode = bdev_file_inode(file);
	struct block_device *bdev = I_BDEV(bd_inode);
	bool atomic = iocb->ki_flags & IOCB_ATOMIC;
	loff_t size = bdev_nr_bytes(bdev);
	size_t shorted = 0;
	ssize_t ret;

	if (bdev_read_only(bdev))
		return -EPERM;

	if (IS_SWAPFILE(bd_inode) && !is_hibernate_resume_dev(bd_inode->i_rdev))
		return -ETXTBSY;

	if (!iov_iter_count(from))
		return 0;

	if (iocb->ki_pos >= size)
		return -ENOSPC;

	if ((iocb->ki_flags & (IOCB_NOWAIT | IOCB_DIRECT)) == IOCB_NOWAIT)
		return -EOPNOTSUPP;

	if (atomic) {
		ret = generic_atomic_write_valid(iocb, from);
		if (ret)
			return ret;
	}

	size -= iocb->ki_pos;
	if (iov_iter_count(from) > size) {
		if (atomic)
			return -EINVAL;
		shorted = iov_iter_count(from) - size;
		iov_iter_truncate(from, size);
	}

	ret = file_update_time(file);
	if (ret)
		return ret;

	if (iocb->ki_flags & IOCB_DIRECT) {
		ret = blkdev_direct_write(iocb, from);
		if (ret >= 0 && iov_iter_count(from))
			ret = direct_write_fallback(iocb, from, ret,
					blkdev_buffered_write(iocb, from));
	} else {
		/*
		 * Take i_rwsem and invalidate_lock to avoid racing with
		 * set_blocksize changing i_blkbits/folio order and punching
		 * out the pagecache.
		 */
		inode_lock_shared(bd_inode);
		ret = blkdev_buffered_write(iocb, from);
		inode_unlock_shared(bd_inode);
	}

	if (ret > 0)
		ret = generic_write_sync(iocb, ret);
	iov_iter_reexpand(from, iov_iter_count(from) + shorted);
	return ret;
}

/* flushproof: harness */
static struct bdev_inode bdev_inode;
static struct flushproof_wb bdev_wb;

/*
 * A write() of blocks b and b + 1 to the device opened
 * O_WRONLY|O_DIRECT|O_DSYNC: what write() returns must be durable.
 */
static void odsync_write(int b)
{
	struct address_space mapping;
	struct file file = { .f_mapping = &mapping, .f_op = &def_blk_fops };
	struct kiocb iocb = {
		.ki_filp = &file,
		.ki_pos = b << PAGE_SHIFT,
		.ki_flags = IOCB_DIRECT | IOCB_DSYNC | IOCB_WRITE,
	};
	struct iov_iter from = { .count = 2 << PAGE_SHIFT };
	ssize_t ret;

	mapping.host = &bdev_inode.vfs_inode;
	mapping.flushproof_wb = &bdev_wb;
	mapping.flushproof_dirty = 0;
	ret = blkdev_write_iter(&iocb, &from);
	if (ret > 0)
		assert_durable(b, FLUSHPROOF_DATA);
	if (ret > PAGE_SIZE)
		assert_durable(b + 1, FLUSHPROOF_DATA);
}

/* Each task's range is a constant (a task's parameter is a register). */
static void writer0(void)
{
	odsync_write(0);
}

static void writer1(void)
{
	odsync_write(2);
}

/*
 * How far the direct parts get: a task that reads dio_choice before the
 * first store falls back entirely, after it writes one block direct,
 * after the second both.
 */
static void chooser(void)
{
	WRITE_ONCE(dio_choice, 1);
	WRITE_ONCE(dio_choice, 2);
}

void harness(void)
{
	spawn(writer0);
	spawn(writer1);
	spawn(chooser);
}
