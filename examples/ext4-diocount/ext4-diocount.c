/*
 * Direct writes and truncate on ext4 (v4.6), with the direct-I/O count
 * of include/linux/fs.h: the code that the patch "ext4: Add
 * DIO_SKIP_DIO_COUNT flag to dax_do_io()" changes, as that patch finds
 * it. A DAX writer and an AIO writer each overwrite one block of the
 * same file with direct I/O while a third task truncates the file to 0.
 * It is the bound of model/diocount's rows "diocount <variant>
 * dax+aio-dio/<memory model> 2 writers x 1 I/O, truncate, overwrite"
 * (docs/diocount.md) and of examples/litmus/diocount/.
 *
 * Check it, then check it with the patch applied:
 *   flushproof check examples/ext4-diocount/ext4-diocount.c
 *   flushproof check -patch examples/ext4-diocount/0001-ext4-add-DIO_SKIP_DIO_COUNT-flag-to-dax_do_io.patch examples/ext4-diocount/ext4-diocount.c
 *
 * Expect: safe
 * Device: no-cache
 * Crash: end
 * Models: SC, TSO
 *
 * The obligation: no direct write lands in a block after truncate freed
 * it. How it is said, as the litmus files say it: right after the free,
 * truncate writes -1 to each freed block with REQ_FUA, standing for the
 * block's next owner (the allocator may hand the block to another file
 * as soon as ext4_free_blocks() returned); no direct write carries -1.
 * The machine crashes once every task has finished (Crash: end; the AIO
 * completion task, a daemon, need not), and recovery() asserts that both
 * blocks hold -1 and that i_dio_count is 0. A block can hold a direct
 * write's 1 after the crash only if that write had not completed when
 * the -1 write was submitted (docs/semantics.md, rule 6): it was in
 * flight at the free, or submitted after it through a mapping taken
 * before; and a write that may land after the free may also complete
 * after the -1 write. The device has no volatile cache, so the crash
 * loses no completed write.
 *
 * Memory models: SC and TSO. Relaxed has no lock, and i_mutex is one.
 * -model lkmm: SAFE too, at 597,956 states (SC: 1,993; 12 s and 3 GiB
 * here): ext4_ext_direct_IO() reads i_size, then raises i_dio_count
 * with atomic_inc() after the if that tested the read, not in an arm,
 * and inode_unlock() releases i_mutex with that read pending: each task
 * runs ahead of its loads past both (load buffering), in every order.
 * The litmus files make that read an acquire.
 *
 * What is the kernel's, byte for byte (Linux v4.6, from a v4.6.2 tree
 * whose fs/ext4/indirect.c is the patch's base blob 3027fa6 and whose
 * fs/ext4/inode.c takes the patch's hunks 4 lines down, without fuzz):
 * the sections marked with a kernel file. include/linux/fs.h: struct kiocb,
 * is_sync_kiocb(), inode_lock(), inode_unlock(), i_size_read(),
 * i_size_write(), the DIO_* flags, blockdev_direct_IO(),
 * inode_dio_begin() and inode_dio_end(). fs/inode.c: inode_dio_wait().
 * fs/dax.c: dax_do_io(). fs/ext4/indirect.c: ext4_ind_direct_IO().
 * fs/ext4/inode.c: ext4_dio_get_block_overwrite(), ext4_ext_direct_IO()
 * and ext4_direct_IO().
 *
 * What is a stub, in the harness sections, and why:
 *  - The types carry only the fields the code reads. Sizes are in
 *    blocks of one byte (a shared location holds values within 128 of
 *    its initial one): the file is 2 bytes long, block b of the file is
 *    disk block b.
 *  - ext4_file_write_iter() (fs/ext4/file.c) and the VFS between it and
 *    ext4_direct_IO(): inode_lock(), iocb->private = &overwrite, the
 *    overwrite check (the write lies inside i_size and its block is
 *    mapped: under i_mutex, which truncate holds from its
 *    i_size_write() to after the free, the two agree, and the stub
 *    reads i_size), the direct write, inode_unlock(). A write that finds
 *    its block past i_size (truncate came first) extends the file into
 *    a newly allocated block, which no mapping taken before the free
 *    reaches; it is left out, as model/diocount's BeyondEOF step.
 *  - IS_DAX(): the inode's S_DAX in the kernel. model/diocount's rows put
 *    a DAX writer and a block-DIO writer on one inode (one count, one
 *    truncate), so here each write says which path it takes, in its
 *    kiocb (IOCB_FLUSHPROOF_DAX): every IS_DAX() of the code below has
 *    its iocb at hand.
 *  - _ext4_get_block(): ext4_map_blocks() looks the block up in the
 *    extent tree under i_data_sem (a spinlock here: readers excluding
 *    each other changes no outcome); the tree is one word,
 *    i_flushproof_extents, 1 while the file's blocks are mapped, 0 once
 *    ext4_truncate() freed them.
 *  - dax_io() (fs/dax.c): get_block, then the CPU stores the data into
 *    persistent memory, a write the task waits for.
 *  - __blockdev_direct_IO() (fs/direct-io.c, do_blockdev_direct_IO()
 *    for one block): inode_dio_begin() unless DIO_SKIP_DIO_COUNT,
 *    get_block, the bio; a synchronous kiocb waits for it
 *    (dio_await_completion()) and runs dio_complete(); an asynchronous
 *    one hands the bio to its completion side and returns -EIOCBQUEUED.
 *    An asynchronous bio outlives its submitter's code, and a harness
 *    has no completion handler: a daemon task is the bio's completion
 *    side. dio_bio_submit() publishes the dio (its flags and its
 *    submission in one word, with a release; the completion side waits
 *    with an acquire, for the block layer orders a submission before
 *    its completion); the daemon sends the write to the device (it
 *    lands and completes), then runs dio_bio_end_aio() ->
 *    dio_complete(), whose inode_dio_end() is the callee's unless
 *    DIO_SKIP_DIO_COUNT. dio->refcount is left out: dio_complete()
 *    always runs on the completion side, as in model/diocount. Without a
 *    bio (a hole: only a mutant gets there) dio_complete() runs in the
 *    submitter.
 *  - ext4_end_io_dio() (fs/ext4/inode.c): it converts unwritten extents
 *    through the io_end that get_block allocated for them; an overwrite
 *    allocates none, and with no io_end it returns 0 (its first lines).
 *    The rest of it dereferences io_end, which the checker cannot lower
 *    even where it is never reached.
 *  - ext4_ind_direct_IO(): the kernel's text is in its section, compiled
 *    under another name, so that the patch's hunk for it applies and is
 *    type-checked; what runs is a stub. ext4_ext_direct_IO() calls it
 *    for a write past i_size, which no run here makes (the writer
 *    checked i_size under i_mutex, which it still holds); the kernel's
 *    function needs i_disksize and i_nlink besides, and a harness holds
 *    at most 6 shared locations. The patch's change to it is on the
 *    dioread_nolock read path, which model/diocount leaves out.
 *  - Truncate: do_truncate() -> ext4_setattr() (ATTR_SIZE, shrinking
 *    to 0): inode_lock(), i_size_write(), inode_dio_wait(), then
 *    ext4_truncate() frees the blocks under i_data_sem, inode_unlock().
 *    The journal, the orphan list and the page cache are left out, and
 *    so are ext4_inode_block_unlocked_dio()'s set_bit() and smp_mb()
 *    (they matter to dioread_nolock reads), as in model/diocount.
 *  - __inode_dio_wait() (fs/inode.c): prepare_to_wait() (whose
 *    set_current_state() is an smp_mb()), then sleep until i_dio_count
 *    reads 0; the checker's wait_event() is that loop.
 *  - wake_up_bit() (kernel/sched/wait.c): wake_up() of the one wait
 *    queue.
 *
 * Not modelled, as in model/diocount: direct reads (dioread_nolock),
 * the unwritten-extent conversion of ext4_end_io_dio(), and the block
 * allocator's reuse of freed blocks (the -1 write stands for it).
 */
#include <flushproof/kernel.h>

/* flushproof: harness */
#define CONFIG_BLOCK 1

/*
 * include/linux/fs.h, include/linux/uio.h, include/linux/buffer_head.h,
 * fs/ext4/ext4.h: the fields the code uses. i_mapping, i_nlink and
 * i_disksize are there for code that is type-checked and never lowered
 * (dax_do_io()'s read path, ext4_ind_direct_IO()).
 */
struct super_block {
	struct block_device	*s_bdev;
};
struct inode {
	struct super_block	*i_sb;
	struct address_space	*i_mapping;
	unsigned long		i_state;
	unsigned int		i_nlink;
	loff_t			i_size;
	struct mutex		i_mutex;
	atomic_t		i_dio_count;
};
struct rw_semaphore {
	spinlock_t		flushproof_lock;
};
struct ext4_inode_info {
	struct rw_semaphore	i_data_sem;
	loff_t			i_disksize;
	int			i_flushproof_extents;	/* the extent tree (see the header) */
	struct inode		vfs_inode;
};
struct address_space {
	struct inode		*host;
};
struct file {
	struct address_space	*f_mapping;
};
struct iov_iter {
	int			type;
	size_t			count;
};
struct buffer_head {
	unsigned long		b_state;
	struct block_device	*b_bdev;
	sector_t		b_blocknr;
	size_t			b_size;
	void			*b_private;
};

/* include/linux/fs.h: i_state's bit; the READ/WRITE of an iov_iter */
#define __I_DIO_WAKEUP		9
#define RW_MASK			1
#define READ			0
#define WRITE			RW_MASK

/* fs/ext4/ext4.h */
#define EXT4_INODE_EXTENTS	19
#define EXT4_STATE_DIO_UNWRITTEN 4
#define EXT4_STATE_DIOREAD_LOCK	5
#define EXT4_HT_INODE		4
typedef struct ext4_io_end ext4_io_end_t;
typedef struct handle_s handle_t;

/* Declared for code that is type-checked and never lowered (see above). */
int filemap_write_and_wait_range(struct address_space *mapping,
				 loff_t lstart, loff_t lend);

/* include/linux/fs.h: the write's kind, per kiocb (see the header) */
#define IOCB_FLUSHPROOF_DAX	(1 << 8)
#define IS_DAX(inode)		(iocb->ki_flags & IOCB_FLUSHPROOF_DAX)

/* include/linux/uio.h */
#define iov_iter_rw(i) ((0 ? (struct iov_iter *)0 : (i))->type & RW_MASK)
static inline size_t iov_iter_count(struct iov_iter *i)
{
	return i->count;
}

/* include/asm-generic/bug.h, fs/ext4/ext4.h: no checks, no messages */
#define BUG()			assert(0)
#define BUG_ON(condition)	do { if (unlikely(condition)) BUG(); } while (0)
#define WARN_ON_ONCE(condition)	(0)
#define ext4_debug(fmt, ...)	do { } while (0)
#define ext_debug(fmt, ...)	do { } while (0)

/* kernel/sched/wait.c: the one wait queue, i_dio_count's */
static wait_queue_head_t dio_wait;

static void wake_up_bit(void *word, int bit)
{
	wake_up(&dio_wait);
}

/* flushproof: include/linux/fs.h */
struct buffer_head;
typedef int (get_block_t)(struct inode *inode, sector_t iblock,
			struct buffer_head *bh_result, int create);
typedef int (dio_iodone_t)(struct kiocb *iocb, loff_t offset,
			ssize_t bytes, void *private);

#define IOCB_EVENTFD		(1 << 0)
#define IOCB_APPEND		(1 << 1)
#define IOCB_DIRECT		(1 << 2)
#define IOCB_HIPRI		(1 << 3)

struct kiocb {
	struct file		*ki_filp;
	loff_t			ki_pos;
	void (*ki_complete)(struct kiocb *iocb, long ret, long ret2);
	void			*private;
	int			ki_flags;
};

static inline bool is_sync_kiocb(struct kiocb *kiocb)
{
	return kiocb->ki_complete == NULL;
}

static inline void inode_lock(struct inode *inode)
{
	mutex_lock(&inode->i_mutex);
}

static inline void inode_unlock(struct inode *inode)
{
	mutex_unlock(&inode->i_mutex);
}

/*
 * NOTE: in a 32bit arch with a preemptable kernel and
 * an UP compile the i_size_read/write must be atomic
 * with respect to the local cpu (unlike with preempt disabled),
 * but they don't need to be atomic with respect to other cpus like in
 * true SMP (so they need either to either locally disable irq around
 * the read or for example on x86 they can be still implemented as a
 * cmpxchg8b without the need of the lock prefix). For SMP compiles
 * and 64bit archs it makes no difference if preempt is enabled or not.
 */
static inline loff_t i_size_read(const struct inode *inode)
{
#if BITS_PER_LONG==32 && defined(CONFIG_SMP)
	loff_t i_size;
	unsigned int seq;

	do {
		seq = read_seqcount_begin(&inode->i_size_seqcount);
		i_size = inode->i_size;
	} while (read_seqcount_retry(&inode->i_size_seqcount, seq));
	return i_size;
#elif BITS_PER_LONG==32 && defined(CONFIG_PREEMPT)
	loff_t i_size;

	preempt_disable();
	i_size = inode->i_size;
	preempt_enable();
	return i_size;
#else
	return inode->i_size;
#endif
}

/*
 * NOTE: unlike i_size_read(), i_size_write() does need locking around it
 * (normally i_mutex), otherwise on 32bit/SMP an update of i_size_seqcount
 * can be lost, resulting in subsequent i_size_read() calls spinning forever.
 */
static inline void i_size_write(struct inode *inode, loff_t i_size)
{
#if BITS_PER_LONG==32 && defined(CONFIG_SMP)
	preempt_disable();
	write_seqcount_begin(&inode->i_size_seqcount);
	inode->i_size = i_size;
	write_seqcount_end(&inode->i_size_seqcount);
	preempt_enable();
#elif BITS_PER_LONG==32 && defined(CONFIG_PREEMPT)
	preempt_disable();
	inode->i_size = i_size;
	preempt_enable();
#else
	inode->i_size = i_size;
#endif
}

#ifdef CONFIG_BLOCK
typedef void (dio_submit_t)(int rw, struct bio *bio, struct inode *inode,
			    loff_t file_offset);

enum {
	/* need locking between buffered and direct access */
	DIO_LOCKING	= 0x01,

	/* filesystem does not support filling holes */
	DIO_SKIP_HOLES	= 0x02,

	/* filesystem can handle aio writes beyond i_size */
	DIO_ASYNC_EXTEND = 0x04,

	/* inode/fs/bdev does not need truncate protection */
	DIO_SKIP_DIO_COUNT = 0x08,
};

void dio_end_io(struct bio *bio, int error);

ssize_t __blockdev_direct_IO(struct kiocb *iocb, struct inode *inode,
			     struct block_device *bdev, struct iov_iter *iter,
			     loff_t offset, get_block_t get_block,
			     dio_iodone_t end_io, dio_submit_t submit_io,
			     int flags);

static inline ssize_t blockdev_direct_IO(struct kiocb *iocb,
					 struct inode *inode,
					 struct iov_iter *iter, loff_t offset,
					 get_block_t get_block)
{
	return __blockdev_direct_IO(iocb, inode, inode->i_sb->s_bdev, iter,
				    offset, get_block, NULL, NULL,
				    DIO_LOCKING | DIO_SKIP_HOLES);
}
#endif

void inode_dio_wait(struct inode *inode);

/*
 * inode_dio_begin - signal start of a direct I/O requests
 * @inode: inode the direct I/O happens on
 *
 * This is called once we've finished processing a direct I/O request,
 * and is used to wake up callers waiting for direct I/O to be quiesced.
 */
static inline void inode_dio_begin(struct inode *inode)
{
	atomic_inc(&inode->i_dio_count);
}

/*
 * inode_dio_end - signal finish of a direct I/O requests
 * @inode: inode the direct I/O happens on
 *
 * This is called once we've finished processing a direct I/O request,
 * and is used to wake up callers waiting for direct I/O to be quiesced.
 */
static inline void inode_dio_end(struct inode *inode)
{
	if (atomic_dec_and_test(&inode->i_dio_count))
		wake_up_bit(&inode->i_state, __I_DIO_WAKEUP);
}

/* flushproof: harness */
/* The device, the file system, the file. */
static struct block_device bdev;
static struct super_block sb = { .s_bdev = &bdev };
static struct ext4_inode_info ext4_inode = {
	.i_flushproof_extents = 1,
	.vfs_inode = { .i_sb = &sb, .i_size = 2 },
};
static struct address_space mapping = { .host = &ext4_inode.vfs_inode };
static struct file file = { .f_mapping = &mapping };

/* fs/ext4/ext4.h */
static inline struct ext4_inode_info *EXT4_I(struct inode *inode)
{
	return container_of(inode, struct ext4_inode_info, vfs_inode);
}

/* include/linux/rwsem.h: a spinlock (see the header) */
static void down_read(struct rw_semaphore *sem) { spin_lock(&sem->flushproof_lock); }
static void up_read(struct rw_semaphore *sem) { spin_unlock(&sem->flushproof_lock); }
static void down_write(struct rw_semaphore *sem) { spin_lock(&sem->flushproof_lock); }
static void up_write(struct rw_semaphore *sem) { spin_unlock(&sem->flushproof_lock); }

/* lib/string.c, for the one kind of object the code clears: a buffer_head */
void *memset(void *s, int c, size_t n)
{
	struct buffer_head *bh = s;

	bh->b_state = 0;
	bh->b_bdev = NULL;
	bh->b_blocknr = 0;
	bh->b_size = 0;
	bh->b_private = NULL;
	return s;
}

/* include/linux/buffer_head.h */
#define BH_Mapped	5
static inline int buffer_mapped(const struct buffer_head *bh)
{
	return (bh->b_state >> BH_Mapped) & 1;
}
static inline void map_bh(struct buffer_head *bh, struct super_block *sb, sector_t block)
{
	bh->b_state |= 1 << BH_Mapped;
	bh->b_bdev = sb->s_bdev;
	bh->b_blocknr = block;
	bh->b_size = 1;
}

/* A write of val to a disk block, waited for: a bio and submit_bio_wait(). */
static int write_block(struct block_device *bdev, sector_t block, long val, blk_opf_t flags)
{
	struct bio bio;

	bio_init(&bio, bdev, NULL, 0, REQ_OP_WRITE | flags);
	bio.bi_iter.bi_sector = block;
	bio.bi_iter.bi_size = 4096;
	bio.bi_flushproof_value = val;
	return submit_bio_wait(&bio);
}

/* fs/inode.c: prepare_to_wait() is an smp_mb(); then sleep until the count is 0. */
static void __inode_dio_wait(struct inode *inode)
{
	smp_mb();
	wait_event(dio_wait, atomic_read(&inode->i_dio_count) == 0);
}

/* flushproof: fs/inode.c */
/**
 * inode_dio_wait - wait for outstanding DIO requests to finish
 * @inode: inode to wait for
 *
 * Waits for all pending direct I/O requests to finish so that we can
 * proceed with a truncate or equivalent operation.
 *
 * Must be called under a lock that serializes taking new references
 * to i_dio_count, usually by inode->i_mutex.
 */
void inode_dio_wait(struct inode *inode)
{
	if (atomic_read(&inode->i_dio_count))
		__inode_dio_wait(inode);
}
EXPORT_SYMBOL(inode_dio_wait);

/* flushproof: harness */
/* fs/dax.c, for one block (see the header) */
static ssize_t dax_io(struct inode *inode, struct iov_iter *iter,
		      loff_t start, loff_t end, get_block_t get_block,
		      struct buffer_head *bh)
{
	int rw = iov_iter_rw(iter);
	int rc;

	bh->b_size = end - start;
	rc = get_block(inode, start, bh, rw == WRITE);
	if (rc)
		return rc;
	/* a hole (only a mutant gets there): nothing is written */
	if (buffer_mapped(bh))
		write_block(bh->b_bdev, bh->b_blocknr, 1, 0);
	return end - start;
}

/* flushproof: fs/dax.c */
/**
 * dax_do_io - Perform I/O to a DAX file
 * @iocb: The control block for this I/O
 * @inode: The file which the I/O is directed at
 * @iter: The addresses to do I/O from or to
 * @pos: The file offset where the I/O starts
 * @get_block: The filesystem method used to translate file offsets to blocks
 * @end_io: A filesystem callback for I/O completion
 * @flags: See below
 *
 * This function uses the same locking scheme as do_blockdev_direct_IO:
 * If @flags has DIO_LOCKING set, we assume that the i_mutex is held by the
 * caller for writes.  For reads, we take and release the i_mutex ourselves.
 * If DIO_LOCKING is not set, the filesystem takes care of its own locking.
 * As with do_blockdev_direct_IO(), we increment i_dio_count while the I/O
 * is in progress.
 */
ssize_t dax_do_io(struct kiocb *iocb, struct inode *inode,
		  struct iov_iter *iter, loff_t pos, get_block_t get_block,
		  dio_iodone_t end_io, int flags)
{
	struct buffer_head bh;
	ssize_t retval = -EINVAL;
	loff_t end = pos + iov_iter_count(iter);

	memset(&bh, 0, sizeof(bh));
	bh.b_bdev = inode->i_sb->s_bdev;

	if ((flags & DIO_LOCKING) && iov_iter_rw(iter) == READ) {
		struct address_space *mapping = inode->i_mapping;
		inode_lock(inode);
		retval = filemap_write_and_wait_range(mapping, pos, end - 1);
		if (retval) {
			inode_unlock(inode);
			goto out;
		}
	}

	/* Protects against truncate */
	if (!(flags & DIO_SKIP_DIO_COUNT))
		inode_dio_begin(inode);

	retval = dax_io(inode, iter, pos, end, get_block, &bh);

	if ((flags & DIO_LOCKING) && iov_iter_rw(iter) == READ)
		inode_unlock(inode);

	if (end_io) {
		int err;

		err = end_io(iocb, pos, retval, bh.b_private);
		if (err)
			retval = err;
	}

	if (!(flags & DIO_SKIP_DIO_COUNT))
		inode_dio_end(inode);
 out:
	return retval;
}
EXPORT_SYMBOL_GPL(dax_do_io);

/* flushproof: harness */
/*
 * fs/direct-io.c: the dio of the AIO write, shared with its completion
 * side. flags holds the dio's flags and its submission, in one word
 * (see the header).
 */
#define DIO_FLUSHPROOF_SUBMITTED 0x40
#define EIOCBQUEUED 529
struct dio {
	int flags;
};
static struct dio aio_dio;
static wait_queue_head_t aio_wait;

/* fs/direct-io.c: dio_complete() */
static void dio_complete(struct inode *inode, int flags)
{
	if (!(flags & DIO_SKIP_DIO_COUNT))
		inode_dio_end(inode);
}

/* fs/direct-io.c: do_blockdev_direct_IO() for one block (see the header) */
ssize_t __blockdev_direct_IO(struct kiocb *iocb, struct inode *inode,
			     struct block_device *bdev, struct iov_iter *iter,
			     loff_t offset, get_block_t get_block,
			     dio_iodone_t end_io, dio_submit_t submit_io,
			     int flags)
{
	struct buffer_head bh;
	size_t count = iov_iter_count(iter);
	int ret;

	memset(&bh, 0, sizeof(bh));
	/*
	 * Will be decremented at I/O completion time.
	 */
	if (!(flags & DIO_SKIP_DIO_COUNT))
		inode_dio_begin(inode);
	/* do_direct_IO() -> get_more_blocks() */
	bh.b_size = count;
	ret = get_block(inode, offset, &bh, iov_iter_rw(iter) == WRITE);
	if (ret == 0 && buffer_mapped(&bh)) {
		if (is_sync_kiocb(iocb)) {
			/* dio_bio_submit(), dio_await_completion() */
			ret = write_block(bdev, bh.b_blocknr, 1, 0);
		} else {
			/* dio_bio_submit(): the bio is the completion side's now */
			smp_store_release(&aio_dio.flags, flags | DIO_FLUSHPROOF_SUBMITTED);
			wake_up(&aio_wait);
			return -EIOCBQUEUED;
		}
	}
	/* a synchronous dio, or no bio: dio_complete() here */
	dio_complete(inode, flags);
	return ret ? ret : count;
}

/* fs/ext4/inode.c: the extent lookup of ext4_map_blocks() (see the header) */
static int _ext4_get_block(struct inode *inode, sector_t iblock,
			   struct buffer_head *bh, int flags)
{
	struct ext4_inode_info *ei = EXT4_I(inode);
	int mapped;

	down_read(&ei->i_data_sem);
	mapped = READ_ONCE(ei->i_flushproof_extents);
	up_read(&ei->i_data_sem);
	if (mapped)
		map_bh(bh, inode->i_sb, iblock);
	return 0;
}

/* fs/ext4/inode.c: no io_end without unwritten extents (see the header) */
static int ext4_end_io_dio(struct kiocb *iocb, loff_t offset,
			    ssize_t size, void *private)
{
	return 0;
}

/* fs/ext4: the file is extent-mapped, in data=ordered mode, without inline data */
static inline int ext4_test_inode_flag(struct inode *inode, int bit) { return bit == EXT4_INODE_EXTENTS; }
static inline int ext4_test_inode_state(struct inode *inode, int bit) { return 0; }
static inline void ext4_clear_inode_state(struct inode *inode, int bit) { }
static inline int ext4_should_journal_data(struct inode *inode) { return 0; }
static inline int ext4_should_dioread_nolock(struct inode *inode) { return 0; }
static inline int ext4_has_inline_data(struct inode *inode) { return 0; }
int ext4_dio_get_block(struct inode *inode, sector_t iblock,
		       struct buffer_head *bh, int create);
static int ext4_dio_get_block_unwritten_async(struct inode *inode,
		sector_t iblock, struct buffer_head *bh_result, int create);
static int ext4_dio_get_block_unwritten_sync(struct inode *inode,
		sector_t iblock, struct buffer_head *bh_result, int create);
/* fs/ext4/extents.c: an overwrite has no unwritten extent to convert */
static int ext4_convert_unwritten_extents(handle_t *handle, struct inode *inode,
					  loff_t offset, ssize_t len)
{
	return 0;
}
handle_t *ext4_journal_start(struct inode *inode, int type, int nblocks);
int ext4_journal_stop(handle_t *handle);
long IS_ERR(const void *ptr);
long PTR_ERR(const void *ptr);
int ext4_orphan_add(handle_t *handle, struct inode *inode);
int ext4_orphan_del(handle_t *handle, struct inode *inode);
int ext4_mark_inode_dirty(handle_t *handle, struct inode *inode);
void ext4_truncate_failed_write(struct inode *inode);
int ext4_should_retry_alloc(struct super_block *sb, int *retries);
void trace_ext4_direct_IO_enter(struct inode *inode, loff_t offset, unsigned long len, int rw);
void trace_ext4_direct_IO_exit(struct inode *inode, loff_t offset, unsigned long len, int rw, int ret);

/* The kernel's ext4_ind_direct_IO(), compiled under another name (see the header). */
#define ext4_ind_direct_IO flushproof_pasted_ext4_ind_direct_IO

/* flushproof: fs/ext4/indirect.c */
/*
 * O_DIRECT for ext3 (or indirect map) based files
 *
 * If the O_DIRECT write will extend the file then add this inode to the
 * orphan list.  So recovery will truncate it back to the original size
 * if the machine crashes during the write.
 *
 * If the O_DIRECT write is intantiating holes inside i_size and the machine
 * crashes then stale disk data _may_ be exposed inside the file. But current
 * VFS code falls back into buffered path in that case so we are safe.
 */
ssize_t ext4_ind_direct_IO(struct kiocb *iocb, struct iov_iter *iter,
			   loff_t offset)
{
	struct file *file = iocb->ki_filp;
	struct inode *inode = file->f_mapping->host;
	struct ext4_inode_info *ei = EXT4_I(inode);
	handle_t *handle;
	ssize_t ret;
	int orphan = 0;
	size_t count = iov_iter_count(iter);
	int retries = 0;

	if (iov_iter_rw(iter) == WRITE) {
		loff_t final_size = offset + count;

		if (final_size > inode->i_size) {
			/* Credits for sb + inode write */
			handle = ext4_journal_start(inode, EXT4_HT_INODE, 2);
			if (IS_ERR(handle)) {
				ret = PTR_ERR(handle);
				goto out;
			}
			ret = ext4_orphan_add(handle, inode);
			if (ret) {
				ext4_journal_stop(handle);
				goto out;
			}
			orphan = 1;
			ei->i_disksize = inode->i_size;
			ext4_journal_stop(handle);
		}
	}

retry:
	if (iov_iter_rw(iter) == READ && ext4_should_dioread_nolock(inode)) {
		/*
		 * Nolock dioread optimization may be dynamically disabled
		 * via ext4_inode_block_unlocked_dio(). Check inode's state
		 * while holding extra i_dio_count ref.
		 */
		inode_dio_begin(inode);
		smp_mb();
		if (unlikely(ext4_test_inode_state(inode,
						    EXT4_STATE_DIOREAD_LOCK))) {
			inode_dio_end(inode);
			goto locked;
		}
		if (IS_DAX(inode))
			ret = dax_do_io(iocb, inode, iter, offset,
					ext4_dio_get_block, NULL, 0);
		else
			ret = __blockdev_direct_IO(iocb, inode,
						   inode->i_sb->s_bdev, iter,
						   offset, ext4_dio_get_block,
						   NULL, NULL, 0);
		inode_dio_end(inode);
	} else {
locked:
		if (IS_DAX(inode))
			ret = dax_do_io(iocb, inode, iter, offset,
					ext4_dio_get_block, NULL, DIO_LOCKING);
		else
			ret = blockdev_direct_IO(iocb, inode, iter, offset,
						 ext4_dio_get_block);

		if (unlikely(iov_iter_rw(iter) == WRITE && ret < 0)) {
			loff_t isize = i_size_read(inode);
			loff_t end = offset + count;

			if (end > isize)
				ext4_truncate_failed_write(inode);
		}
	}
	if (ret == -ENOSPC && ext4_should_retry_alloc(inode->i_sb, &retries))
		goto retry;

	if (orphan) {
		int err;

		/* Credits for sb + inode write */
		handle = ext4_journal_start(inode, EXT4_HT_INODE, 2);
		if (IS_ERR(handle)) {
			/* This is really bad luck. We've written the data
			 * but cannot extend i_size. Bail out and pretend
			 * the write failed... */
			ret = PTR_ERR(handle);
			if (inode->i_nlink)
				ext4_orphan_del(NULL, inode);

			goto out;
		}
		if (inode->i_nlink)
			ext4_orphan_del(handle, inode);
		if (ret > 0) {
			loff_t end = offset + ret;
			if (end > inode->i_size) {
				ei->i_disksize = end;
				i_size_write(inode, end);
				/*
				 * We're going to return a positive `ret'
				 * here due to non-zero-length I/O, so there's
				 * no way of reporting error returns from
				 * ext4_mark_inode_dirty() to userspace.  So
				 * ignore it.
				 */
				ext4_mark_inode_dirty(handle, inode);
			}
		}
		err = ext4_journal_stop(handle);
		if (ret == 0)
			ret = err;
	}
out:
	return ret;
}

/* flushproof: harness */
#undef ext4_ind_direct_IO

/*
 * A write past i_size, which ext4_ext_direct_IO() sends here: it extends
 * the file into newly allocated blocks (model/diocount's BeyondEOF); no
 * run here makes one (see the header).
 */
static ssize_t ext4_ind_direct_IO(struct kiocb *iocb, struct iov_iter *iter,
				  loff_t offset)
{
	return 0;
}

/* flushproof: fs/ext4/inode.c */
static int ext4_dio_get_block_overwrite(struct inode *inode, sector_t iblock,
		   struct buffer_head *bh_result, int create)
{
	int ret;

	ext4_debug("ext4_dio_get_block_overwrite: inode %lu, create flag %d\n",
		   inode->i_ino, create);
	/* We don't expect handle for direct IO */
	WARN_ON_ONCE(ext4_journal_current_handle());

	ret = _ext4_get_block(inode, iblock, bh_result, 0);
	/*
	 * Blocks should have been preallocated! ext4_file_write_iter() checks
	 * that.
	 */
	WARN_ON_ONCE(!buffer_mapped(bh_result) || buffer_unwritten(bh_result));

	return ret;
}


/*
 * For ext4 extent files, ext4 will do direct-io write to holes,
 * preallocated extents, and those write extend the file, no need to
 * fall back to buffered IO.
 *
 * For holes, we fallocate those blocks, mark them as unwritten
 * If those blocks were preallocated, we mark sure they are split, but
 * still keep the range to write as unwritten.
 *
 * The unwritten extents will be converted to written when DIO is completed.
 * For async direct IO, since the IO may still pending when return, we
 * set up an end_io call back function, which will do the conversion
 * when async direct IO completed.
 *
 * If the O_DIRECT write will extend the file then add this inode to the
 * orphan list.  So recovery will truncate it back to the original size
 * if the machine crashes during the write.
 *
 */
static ssize_t ext4_ext_direct_IO(struct kiocb *iocb, struct iov_iter *iter,
				  loff_t offset)
{
	struct file *file = iocb->ki_filp;
	struct inode *inode = file->f_mapping->host;
	ssize_t ret;
	size_t count = iov_iter_count(iter);
	int overwrite = 0;
	get_block_t *get_block_func = NULL;
	int dio_flags = 0;
	loff_t final_size = offset + count;

	/* Use the old path for reads and writes beyond i_size. */
	if (iov_iter_rw(iter) != WRITE || final_size > inode->i_size)
		return ext4_ind_direct_IO(iocb, iter, offset);

	BUG_ON(iocb->private == NULL);

	/*
	 * Make all waiters for direct IO properly wait also for extent
	 * conversion. This also disallows race between truncate() and
	 * overwrite DIO as i_dio_count needs to be incremented under i_mutex.
	 */
	if (iov_iter_rw(iter) == WRITE)
		inode_dio_begin(inode);

	/* If we do a overwrite dio, i_mutex locking can be released */
	overwrite = *((int *)iocb->private);

	if (overwrite)
		inode_unlock(inode);

	/*
	 * We could direct write to holes and fallocate.
	 *
	 * Allocated blocks to fill the hole are marked as unwritten to prevent
	 * parallel buffered read to expose the stale data before DIO complete
	 * the data IO.
	 *
	 * As to previously fallocated extents, ext4 get_block will just simply
	 * mark the buffer mapped but still keep the extents unwritten.
	 *
	 * For non AIO case, we will convert those unwritten extents to written
	 * after return back from blockdev_direct_IO. That way we save us from
	 * allocating io_end structure and also the overhead of offloading
	 * the extent convertion to a workqueue.
	 *
	 * For async DIO, the conversion needs to be deferred when the
	 * IO is completed. The ext4 end_io callback function will be
	 * called to take care of the conversion work.  Here for async
	 * case, we allocate an io_end structure to hook to the iocb.
	 */
	iocb->private = NULL;
	if (overwrite)
		get_block_func = ext4_dio_get_block_overwrite;
	else if (is_sync_kiocb(iocb)) {
		get_block_func = ext4_dio_get_block_unwritten_sync;
		dio_flags = DIO_LOCKING;
	} else {
		get_block_func = ext4_dio_get_block_unwritten_async;
		dio_flags = DIO_LOCKING;
	}
#ifdef CONFIG_EXT4_FS_ENCRYPTION
	BUG_ON(ext4_encrypted_inode(inode) && S_ISREG(inode->i_mode));
#endif
	if (IS_DAX(inode))
		ret = dax_do_io(iocb, inode, iter, offset, get_block_func,
				ext4_end_io_dio, dio_flags);
	else
		ret = __blockdev_direct_IO(iocb, inode,
					   inode->i_sb->s_bdev, iter, offset,
					   get_block_func,
					   ext4_end_io_dio, NULL, dio_flags);

	if (ret > 0 && !overwrite && ext4_test_inode_state(inode,
						EXT4_STATE_DIO_UNWRITTEN)) {
		int err;
		/*
		 * for non AIO case, since the IO is already
		 * completed, we could do the conversion right here
		 */
		err = ext4_convert_unwritten_extents(NULL, inode,
						     offset, ret);
		if (err < 0)
			ret = err;
		ext4_clear_inode_state(inode, EXT4_STATE_DIO_UNWRITTEN);
	}

	if (iov_iter_rw(iter) == WRITE)
		inode_dio_end(inode);
	/* take i_mutex locking again if we do a ovewrite dio */
	if (overwrite)
		inode_lock(inode);

	return ret;
}

static ssize_t ext4_direct_IO(struct kiocb *iocb, struct iov_iter *iter,
			      loff_t offset)
{
	struct file *file = iocb->ki_filp;
	struct inode *inode = file->f_mapping->host;
	size_t count = iov_iter_count(iter);
	ssize_t ret;

#ifdef CONFIG_EXT4_FS_ENCRYPTION
	if (ext4_encrypted_inode(inode) && S_ISREG(inode->i_mode))
		return 0;
#endif

	/*
	 * If we are doing data journalling we don't support O_DIRECT
	 */
	if (ext4_should_journal_data(inode))
		return 0;

	/* Let buffer I/O handle the inline data case. */
	if (ext4_has_inline_data(inode))
		return 0;

	trace_ext4_direct_IO_enter(inode, offset, count, iov_iter_rw(iter));
	if (ext4_test_inode_flag(inode, EXT4_INODE_EXTENTS))
		ret = ext4_ext_direct_IO(iocb, iter, offset);
	else
		ret = ext4_ind_direct_IO(iocb, iter, offset);
	trace_ext4_direct_IO_exit(inode, offset, count, iov_iter_rw(iter), ret);
	return ret;
}

/* flushproof: harness */
/* fs/ext4/file.c: ext4_file_write_iter() for a direct write (see the header) */
static ssize_t ext4_file_write_iter(struct kiocb *iocb, struct iov_iter *from)
{
	struct file *file = iocb->ki_filp;
	struct inode *inode = file->f_mapping->host;
	int overwrite = 0;
	ssize_t ret = 0;

	inode_lock(inode);
	iocb->private = &overwrite;
	/* check whether we do a DIO overwrite or not */
	if (iocb->ki_pos + iov_iter_count(from) <= i_size_read(inode)) {
		overwrite = 1;
		/* __generic_file_write_iter() -> generic_file_direct_write() */
		ret = ext4_direct_IO(iocb, from, iocb->ki_pos);
	}
	inode_unlock(inode);
	return ret;
}

/* fs/aio.c: the kiocb of an AIO */
static void aio_complete(struct kiocb *iocb, long res, long res2)
{
}

/* Task 0: a DAX direct overwrite of file block 0 (disk block 0). */
static void dax_writer(void)
{
	struct kiocb iocb = { .ki_filp = &file, .ki_pos = 0, .ki_flags = IOCB_DIRECT | IOCB_FLUSHPROOF_DAX };
	struct iov_iter iter = { .type = WRITE, .count = 1 };

	ext4_file_write_iter(&iocb, &iter);
}

/* Task 1: an AIO direct overwrite of file block 1 (disk block 1). */
static void aio_writer(void)
{
	struct kiocb iocb = { .ki_filp = &file, .ki_pos = 1, .ki_complete = aio_complete, .ki_flags = IOCB_DIRECT };
	struct iov_iter iter = { .type = WRITE, .count = 1 };

	ext4_file_write_iter(&iocb, &iter);
}

/*
 * Task 3, a daemon: the AIO write's bio, once submitted, lands in disk
 * block 1; then dio_bio_end_aio() -> dio_complete() (see the header).
 */
static void aio_bio_completion(void)
{
	int flags;

	wait_event(aio_wait, smp_load_acquire(&aio_dio.flags) != 0);
	flags = READ_ONCE(aio_dio.flags);
	write_block(&bdev, 1, 1, 0);
	dio_complete(&ext4_inode.vfs_inode, flags);
}

/* fs/ext4/inode.c: ext4_truncate() frees the blocks under i_data_sem */
static void ext4_truncate(struct inode *inode)
{
	struct ext4_inode_info *ei = EXT4_I(inode);

	down_write(&ei->i_data_sem);
	WRITE_ONCE(ei->i_flushproof_extents, 0);
	up_write(&ei->i_data_sem);
	/* not truncate's: the freed blocks' next owner writes -1 to them */
	write_block(&bdev, 0, -1, REQ_FUA);
	write_block(&bdev, 1, -1, REQ_FUA);
}

/* Task 2: truncate to 0 (do_truncate() -> ext4_setattr(); see the header). */
static void truncater(void)
{
	struct inode *inode = &ext4_inode.vfs_inode;

	inode_lock(inode);
	i_size_write(inode, 0);
	/*
	 * Blocks are going to be removed from the inode. Wait
	 * for dio in flight.
	 */
	inode_dio_wait(inode);
	ext4_truncate(inode);
	inode_unlock(inode);
}

void harness(void)
{
	spawn(dax_writer);
	spawn(aio_writer);
	spawn(truncater);
	spawn_daemon(aio_bio_completion);
}

/* After the crash: the freed blocks hold their next owner's data, and no direct I/O is counted. */
void recovery(void)
{
	assert(read_block(&bdev, 0) == -1);
	assert(read_block(&bdev, 1) == -1);
	assert(atomic_read(&ext4_inode.vfs_inode.i_dio_count) == 0);
}
