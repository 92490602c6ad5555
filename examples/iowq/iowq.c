/*
 * io-wq workers issuing direct writes to one file: io_prep_async_work()
 * of io_uring/io_uring.c, which the patch "io_uring: avoid hashing
 * O_DIRECT writes if the filesystem doesn't need it" changes, pasted as
 * the v6.3 cycle has it in its io_uring/io_uring.c section; the harness
 * sections hold io-wq's worker, the file system's direct write path and
 * the device, as stubs.
 *
 * Check it, then with the patch applied (the writes are then no longer
 * hashed, for ext4 sets FMODE_DIO_PARALLEL_WRITE):
 *   flushproof check examples/iowq/iowq.c
 *   flushproof check -patch examples/iowq/0002-io_uring-avoid-hashing-O_DIRECT-writes.patch examples/iowq/iowq.c
 * The file system is ext4; xfs.patch makes it xfs, noflag.patch one
 * without FMODE_DIO_PARALLEL_WRITE (the patch keeps hashing its writes),
 * mutant-ext4-2011-shared-unwritten.patch the ext4 of the 2011
 * corruption, and hashed-/unhashed-mutant-ext4-2011-shared-unwritten-
 * sync.patch that mutant with synchronous kiocbs (each patch's Subject
 * says what to apply it after).
 *
 * Expect: safe
 * Device: no-cache
 * Crash: any
 * Models: SC, TSO
 *
 * The bound of model/iowq's rows "iowq <hashed|unhashed> <fs>, async DIO
 * 2 workers, 2 writes (A: s0; B: s1), layout U, i_size 2"
 * (iowq.Race2011Config, docs/iowq.md): a file of one block b0 of two
 * sectors, s0 and s1
 * (disk blocks 0 and 1), preallocated and unwritten (its extent reads as
 * zeros, its sectors still hold another file's data), i_size at its end.
 * Two io_uring write requests, each one unaligned O_DIRECT write of one
 * sector, were punted to io-wq (io_queue_iowq() -> io_prep_async_link()
 * -> io_prep_async_work()): io-wq worker P0 (A) writes s0 with 1, worker
 * P1 (B) writes s1 with 2. P2 and P3 carry A's data bio and zeroing bio,
 * P4 and P5 B's.
 *
 * The obligation, model/iowq's: every sector a linearizable register of
 * the file's contents. At this bound each sector has one writer, and it
 * is what recovery() asserts on every crash image (Crash: any): once A's
 * write completed (its dio reads DIO_COMPLETED: the CQE is posted), b0's
 * extent is written and s0 holds 1; the same for B and s1; and once b0 is
 * written, neither sector holds the other file's stale data (0). Values
 * on the disk: 0, the device's initial content, is the stale data; 3 is
 * the zeros of iomap_dio_zero(). A block holds one small integer, so each
 * sector is a disk block of its own: the sub-block zeroing and the data
 * are writes to different blocks, landing in any order, as model/iowq's
 * disk lands them. The device has no volatile cache: a completed write
 * is on the media, a write in flight may or may not have landed. So a
 * crash image shows a completed write's sector zeroed exactly when
 * model/iowq can land that zeroing after the write's end_io, the lost
 * write it reports.
 *
 * What is the kernel's: io_prep_async_work(), byte for byte as an
 * io_uring/io_uring.c of the v6.3 cycle has it (io_issue_defs, the
 * cancel_seq line, io_req_ffs_set()): the copy of that file the public
 * code index holds with io_queue_iowq(req, bool *dont_use) and
 * io_aux_cqe(). OpenMPDK/linux's (commit 0c226e92, v6.2) has the same
 * lines but the first (io_op_defs), and SamsungDS/linux's (commit
 * 47ae06a0, v6.4) has the patch's added lines as the patch has them
 * ("req->file &&" added to the test of REQ_F_ISREG by a later patch).
 * Every removed line and every context line of the patch's hunk is that
 * text but the hunk's first, "\t}": where the patch has it, every copy
 * found has the line before the blank, "req->flags |=
 * io_file_get_flags(req->file) << REQ_F_SUPPORT_NOWAIT_BIT;". The
 * patch's base (the io_uring tree of March 2023) is in no copy found, so
 * the hunk is placed with one line of fuzz, which the check reports. The
 * flag the patch tests, FMODE_DIO_PARALLEL_WRITE, is the previous patch
 * of its series' ("fs: add FMODE_DIO_PARALLEL_WRITE flag"), which also
 * sets it in ext4_file_open() and xfs_file_open(): the harness is that
 * tree.
 *
 * What is a stub, in the harness sections, and why:
 *  - The types carry only the fields the code uses, and the flag values
 *    are the harness's own (a register holds -32768..32767): only their
 *    names mean anything.
 *  - The request, its file and its ring are locals of the worker task:
 *    the task reads their fields, nobody writes them while the workers
 *    run, and a file-scope object would be a shared location (the checker
 *    holds 6, and the file system needs them all). For the same reason
 *    io_issue_defs, the opcode table of io_uring/opdef.c, is the
 *    request's own copy (the macro io_issue_defs names it for the pasted
 *    function), and the ring's cancel_seq, which no task advances (no
 *    cancellation here), is a plain int that atomic_read() reads in the
 *    pasted function (a macro for its section only: the checker takes no
 *    atomic_t in a local). get_current_cred() gives the worker's cred;
 *    io_req_ffs_set() is false (no fixed file); io_file_get_flags() says
 *    what io_uring/io_uring.c's says of a regular file of ext4 or xfs:
 *    FFS_ISREG | FFS_NOWAIT.
 *  - io_wq_hash_work() (io_uring/io-wq.h) sets IO_WQ_WORK_HASHED; the
 *    hash key (hash_ptr() of the inode) is left out: one inode, one
 *    bucket. io-wq (io_uring/io-wq.c): io_worker_handle_work() runs a
 *    hashed work while no other worker runs one of its hash (the bit of
 *    wq->hash->map that io_get_next_work() tests and sets, cleared when
 *    the work is done and its waiters woken): here a spinlock of the
 *    harness's own, io_wq_hash_lock, held for the work item. An unhashed
 *    work takes nothing. io_wq_submit_work() -> io_issue_sqe() ->
 *    io_write() (io_uring/rw.c): the kiocb of the request, asynchronous
 *    (ki_complete = io_complete_rw, IOCB_DIRECT from O_DIRECT), then the
 *    file's ->write_iter(); -EIOCBQUEUED ends the work item while the
 *    write is in flight, as io_write() ends the issue.
 *  - The file system (fs/ext4/file.c, fs/xfs/xfs_file.c):
 *    ext4_file_open() and
 *    xfs_file_open() set FMODE_DIO_PARALLEL_WRITE (and FMODE_NOWAIT);
 *    the direct write path takes i_rwsem shared or exclusive by the
 *    write's alignment and the extent's state, waits for the direct I/O
 *    in flight (inode_dio_wait()) where the kernel does, and sets
 *    IOMAP_DIO_FORCE_WAIT. ext4_dio_write_checks() runs as the kernel's:
 *    under the shared lock first, then, upgraded, again under the
 *    exclusive one; its other clauses (!IS_NOSEC, taken as false;
 *    extending; IOCB_NOWAIT) are false at this bound and left out, as are
 *    file_modified(), the orphan list and i_size updates (no write
 *    extends the file). xfs_file_dio_write_unaligned(): A's write (s0,
 *    ending before i_size) takes the lock shared with
 *    IOMAP_DIO_OVERWRITE_ONLY, which xfs_direct_write_iomap_begin()
 *    refuses with -EAGAIN while b0 is unwritten (after inode_dio_begin(),
 *    which iomap_dio_complete() then undoes), and retries exclusive with
 *    inode_dio_wait() and IOMAP_DIO_FORCE_WAIT; B's write (s1, ending at
 *    i_size) goes exclusive at once. xfs_file_write_checks() has nothing
 *    to do at this bound; reflink and IOCB_NOWAIT are left out. The
 *    file system without the flag (noflag.patch) takes i_rwsem
 *    exclusive for every direct write, as generic_file_write_iter()
 *    takes inode_lock(), with ext4's drain and wait rules.
 *  - i_rwsem (kernel/locking/rwsem.c) is one atomic_t, readers counted
 *    and RWSEM_WRITER_LOCKED (8) for the writer, with the kernel's fast
 *    paths (an acquire add or cmpxchg to take it, a release sub to drop
 *    it); a blocked down_read() sleeps, its bias kept, until it is handed
 *    the lock, down_write() until it may try again. No writer preference.
 *  - The extent's state is one word, b0_extent.written, read with
 *    smp_load_acquire() and set with smp_store_release(), for
 *    ext4_map_blocks() and ext4_convert_unwritten_extents() take
 *    i_data_sem (xfs: the ILOCK).
 *  - fs/iomap/direct-io.c: the dio is one word per write (dios[0],
 *    dios[1]): bits 0-2 are dio->ref (1 for the submitter, 1 per bio),
 *    IOMAP_DIO_UNWRITTEN (and so the zeroing bio of iomap_dio_zero()),
 *    dio->wait_for_completion, the bios' submission, and DIO_COMPLETED
 *    alone once the write completed. __iomap_dio_rw() publishes it with
 *    one release store, where the kernel takes a reference per
 *    submit_bio(). A bio outlives its submitter's code and a harness has
 *    no completion handler, so each bio is a task: it waits for the
 *    submission (an acquire), sends its write (submit_bio_wait(): it
 *    lands and completes), and drops its reference in
 *    iomap_dio_bio_end_io(); whoever drops the last runs
 *    iomap_dio_complete() (the workqueue's iomap_dio_complete_work() runs
 *    in the bio's task), or, if the submitter waits, the submitter does.
 *    The zeroing bio's task, finding no zeroing to do, returns.
 *    iomap_dio_complete(): the file system's end_io converts the extent
 *    (ext4_dio_write_end_io(), xfs_dio_write_end_io()), inode_dio_end(),
 *    ki_complete() (the CQE).
 *  - wake_up_bit() and the rwsem's and io-wq's wake-ups are wake_up() of
 *    one wait queue.
 *
 * Memory models: SC and TSO (the Models: line), as the litmus files.
 * model/iowq has no memory model: both rows map to its row. Relaxed has
 * no spinlock, acquire or unordered RMW. LKMM answers the i_rwsem
 * upgrade (down_write()'s cmpxchg reads up_read()'s store, both left
 * pending) and the reader handed the lock (an acquire of the writer's
 * release; a retry that read the reader's own store would miss it, as
 * the kernel did before "lcoking/rwsem: Add missing ACQUIRE to
 * read_slowpath sleep loop"). It is not on the Models: line for the
 * mutant's LKMM searches: 1.2 million states hashed, and unhashed more
 * than memory holds here (props/examples_kernelc_iowq_test.go).
 *
 * Left out, as at model/iowq's bound: readers, i_size growth, holes, and
 * the standard bound (three workers, aligned and extending writes, a
 * reader), where model/iowq also has the mutant xfs-no-dio-wait: its
 * bug needs an aligned write in flight when an unaligned one zeroes,
 * which this bound has not (both writes here are unaligned).
 */
#include <flushproof/kernel.h>

/* flushproof: harness */
/* include/linux/types.h, include/linux/fs.h, include/uapi/asm-generic/fcntl.h */
typedef unsigned short umode_t;
typedef unsigned int fmode_t;
#define S_IFMT		00170000
#define S_IFREG		0100000
#define S_IFBLK		0060000
#define S_ISREG(m)	(((m) & S_IFMT) == S_IFREG)
#define S_ISBLK(m)	(((m) & S_IFMT) == S_IFBLK)
#define O_WRONLY	00000001
#define O_DIRECT	00040000
#define FMODE_NOWAIT			((fmode_t)(1 << 9))
#define FMODE_DIO_PARALLEL_WRITE	((fmode_t)(1 << 10))
#define IOCB_DIRECT	(1 << 2)
#define EIOCBQUEUED	529

struct cred {
	int			usage;
};
struct rw_semaphore {
	atomic_t		count;
};
struct inode {
	umode_t			i_mode;
	struct rw_semaphore	i_rwsem;
	atomic_t		i_dio_count;
};
struct file;
struct kiocb;
struct iomap_dio;
struct file_operations {
	ssize_t (*write_iter)(struct kiocb *);
	int (*open)(struct inode *, struct file *);
};
struct file {
	struct inode		*f_inode;
	const struct file_operations *f_op;
	unsigned int		f_flags;
	fmode_t			f_mode;
};
struct kiocb {
	struct file		*ki_filp;
	loff_t			ki_pos;		/* the sector written */
	void (*ki_complete)(struct kiocb *iocb, long ret);
	int			ki_flags;
	/* the dio __iomap_dio_rw() allocates for it (see the header) */
	struct iomap_dio	*flushproof_dio;
};

static inline struct inode *file_inode(const struct file *f)
{
	return f->f_inode;
}

static inline bool is_sync_kiocb(struct kiocb *kiocb)
{
	return kiocb->ki_complete == NULL;
}

/* io_uring/io-wq.h */
enum {
	IO_WQ_WORK_CANCEL	= 1,
	IO_WQ_WORK_HASHED	= 2,
	IO_WQ_WORK_UNBOUND	= 4,
	IO_WQ_WORK_CONCURRENT	= 16,
};
struct io_wq_work_node {
	struct io_wq_work_node *next;
};
struct io_wq_work {
	struct io_wq_work_node	list;
	unsigned		flags;
	int			cancel_seq;
};

static inline void io_wq_hash_work(struct io_wq_work *work, void *val)
{
	work->flags |= IO_WQ_WORK_HASHED;
}

static inline bool io_wq_is_hashed(struct io_wq_work *work)
{
	return work->flags & IO_WQ_WORK_HASHED;
}

/* include/uapi/linux/io_uring.h, io_uring/opdef.h, include/linux/io_uring_types.h */
#define IORING_SETUP_IOPOLL	(1U << 0)
enum io_uring_op {
	IORING_OP_WRITE,
	IORING_OP_LAST,
};
struct io_issue_def {
	unsigned		hash_reg_file;
	unsigned		unbound_nonreg_file;
};
#define REQ_F_FIXED_FILE		(1 << 0)
#define REQ_F_FORCE_ASYNC		(1 << 4)
#define REQ_F_CREDS			(1 << 6)
#define REQ_F_SUPPORT_NOWAIT_BIT	8
#define REQ_F_SUPPORT_NOWAIT		(1 << REQ_F_SUPPORT_NOWAIT_BIT)
#define REQ_F_ISREG			(1 << 9)
#define FFS_NOWAIT			0x1
#define FFS_ISREG			0x2
struct io_ring_ctx {
	unsigned int		flags;
	int			cancel_seq;	/* see the header */
};
struct io_rw {
	struct kiocb		kiocb;
};
struct io_kiocb {
	struct file		*file;
	struct io_rw		rw;
	u8			opcode;
	unsigned int		flags;
	struct io_ring_ctx	*ctx;
	const struct cred	*creds;
	struct io_wq_work	work;
	/* io_issue_defs, the request's copy (see the header) */
	struct io_issue_def	flushproof_issue_defs[IORING_OP_LAST];
};

/* include/linux/cred.h: the worker's credentials */
static struct cred worker_cred;
static inline const struct cred *get_current_cred(void)
{
	return &worker_cred;
}

/* io_uring/io_uring.h, io_uring/io_uring.c (see the header) */
static inline bool io_req_ffs_set(struct io_kiocb *req)
{
	return req->flags & REQ_F_FIXED_FILE;
}
static inline unsigned int io_file_get_flags(struct file *file)
{
	return FFS_ISREG | FFS_NOWAIT;
}

/* For the pasted io_prep_async_work() only (see the header). */
#define io_issue_defs	req->flushproof_issue_defs
#define atomic_read(v)	(*(v))

/* flushproof: io_uring/io_uring.c */
static void io_prep_async_work(struct io_kiocb *req)
{
	const struct io_issue_def *def = &io_issue_defs[req->opcode];
	struct io_ring_ctx *ctx = req->ctx;

	if (!(req->flags & REQ_F_CREDS)) {
		req->flags |= REQ_F_CREDS;
		req->creds = get_current_cred();
	}

	req->work.list.next = NULL;
	req->work.flags = 0;
	req->work.cancel_seq = atomic_read(&ctx->cancel_seq);
	if (req->flags & REQ_F_FORCE_ASYNC)
		req->work.flags |= IO_WQ_WORK_CONCURRENT;

	if (req->file && !io_req_ffs_set(req))
		req->flags |= io_file_get_flags(req->file) << REQ_F_SUPPORT_NOWAIT_BIT;

	if (req->flags & REQ_F_ISREG) {
		if (def->hash_reg_file || (ctx->flags & IORING_SETUP_IOPOLL))
			io_wq_hash_work(&req->work, file_inode(req->file));
	} else if (!req->file || !S_ISBLK(file_inode(req->file)->i_mode)) {
		if (def->unbound_nonreg_file)
			req->work.flags |= IO_WQ_WORK_UNBOUND;
	}
}

/* flushproof: harness */
#undef io_issue_defs
#undef atomic_read

/* The device, and what its blocks hold (see the header). */
static struct block_device bdev;
#define STALE	0	/* another file's data: the device's initial content */
#define ZEROES	3	/* iomap_dio_zero()'s */

/* The file: one inode, b0 preallocated and unwritten, i_size 2 sectors. */
static struct inode inode = { .i_mode = S_IFREG };
static struct {
	int written;
} b0_extent;

/* One wait queue for every sleep (see the header). */
static wait_queue_head_t wq;

/* kernel/locking/rwsem.c (see the header) */
#define RWSEM_READER_BIAS	1
#define RWSEM_WRITER_LOCKED	8

static void down_read(struct rw_semaphore *sem)
{
	/* rwsem_read_trylock(): atomic_long_add_return_acquire() */
	if (atomic_fetch_add_acquire(RWSEM_READER_BIAS, &sem->count) < RWSEM_WRITER_LOCKED)
		return;
	/* a writer holds it: rwsem_down_read_slowpath() sleeps until it is
	 * handed the lock (rwsem_mark_wake() adds the reader's bias, then
	 * smp_store_release(&waiter->task, NULL); the sleeper leaves on
	 * smp_load_acquire(&waiter.task)): here the bias stays and the
	 * sleeper's acquire reads the writer's release of the count */
	wait_event(wq, atomic_read_acquire(&sem->count) < RWSEM_WRITER_LOCKED);
}

static void up_read(struct rw_semaphore *sem)
{
	atomic_fetch_sub_release(RWSEM_READER_BIAS, &sem->count);
	wake_up(&wq);
}

static void down_write(struct rw_semaphore *sem)
{
	/* rwsem_write_trylock(): atomic_long_try_cmpxchg_acquire(0, RWSEM_WRITER_LOCKED);
	 * rwsem_down_write_slowpath(): sleep until it is free */
	while (atomic_cmpxchg_acquire(&sem->count, 0, RWSEM_WRITER_LOCKED) != 0)
		wait_event(wq, atomic_read(&sem->count) == 0);
}

static void up_write(struct rw_semaphore *sem)
{
	atomic_fetch_sub_release(RWSEM_WRITER_LOCKED, &sem->count);
	wake_up(&wq);
}

/* include/linux/fs.h */
static inline void inode_lock(struct inode *inode) { down_write(&inode->i_rwsem); }
static inline void inode_unlock(struct inode *inode) { up_write(&inode->i_rwsem); }
static inline void inode_lock_shared(struct inode *inode) { down_read(&inode->i_rwsem); }
static inline void inode_unlock_shared(struct inode *inode) { up_read(&inode->i_rwsem); }

static inline void inode_dio_begin(struct inode *inode)
{
	atomic_inc(&inode->i_dio_count);
}

static inline void inode_dio_end(struct inode *inode)
{
	if (atomic_dec_and_test(&inode->i_dio_count))
		wake_up(&wq);	/* wake_up_bit(&inode->i_state, __I_DIO_WAKEUP) */
}

/* fs/inode.c: sleep until no direct I/O is in flight */
static void inode_dio_wait(struct inode *inode)
{
	wait_event(wq, atomic_read(&inode->i_dio_count) == 0);
}

/* A write of val to a disk block, waited for: a bio and submit_bio_wait(). */
static int write_block(struct block_device *bdev, sector_t block, long val)
{
	struct bio bio;

	bio_init(&bio, bdev, NULL, 0, REQ_OP_WRITE);
	bio.bi_iter.bi_sector = block;
	bio.bi_iter.bi_size = 4096;
	bio.bi_flushproof_value = val;
	return submit_bio_wait(&bio);
}

/* fs/iomap/direct-io.c: the dio of each write, one word (see the header) */
#define IOMAP_DIO_FORCE_WAIT		(1 << 0)
#define IOMAP_DIO_OVERWRITE_ONLY	(1 << 1)
#define DIO_REF_MASK			7
#define IOMAP_DIO_UNWRITTEN		8
#define DIO_WAIT_FOR_COMPLETION		16
#define DIO_SUBMITTED			32
#define DIO_COMPLETED			64
struct iomap_dio {
	atomic_t		state;
};
static struct iomap_dio dios[2];

/*
 * iomap_dio_complete(): the file system's end_io converts the unwritten
 * extent (ext4_dio_write_end_io(), xfs_dio_write_end_io()),
 * inode_dio_end(), then ki_complete() posts the CQE and the dio is freed.
 */
static void iomap_dio_complete(struct iomap_dio *dio, int flags)
{
	if (flags & IOMAP_DIO_UNWRITTEN)
		smp_store_release(&b0_extent.written, 1);
	inode_dio_end(&inode);
	atomic_set_release(&dio->state, DIO_COMPLETED);
}

/*
 * __iomap_dio_rw() for one sector: inode_dio_begin(), the mapping
 * (iomap_iter() -> ->iomap_begin()), the data bio and, into an unwritten
 * block, the zeroing of the rest of it (iomap_dio_bio_iter(),
 * iomap_dio_zero()); then the submitter drops its reference and waits
 * if it must. Returns -EAGAIN for IOMAP_DIO_OVERWRITE_ONLY on an
 * unwritten block, else -EIOCBQUEUED or the completed write.
 */
static ssize_t iomap_dio_rw(struct kiocb *iocb, unsigned int dio_flags)
{
	struct iomap_dio *dio = iocb->flushproof_dio;
	bool wait_for_completion = is_sync_kiocb(iocb) || (dio_flags & IOMAP_DIO_FORCE_WAIT);
	int v, c;

	inode_dio_begin(&inode);
	if (!smp_load_acquire(&b0_extent.written)) {
		if (dio_flags & IOMAP_DIO_OVERWRITE_ONLY) {
			/* -EAGAIN, no bio: iomap_dio_complete() with the
			 * error, no conversion: inode_dio_end() */
			inode_dio_end(&inode);
			return -EAGAIN;
		}
		v = DIO_SUBMITTED + 2 + IOMAP_DIO_UNWRITTEN + 1;
	} else {
		v = DIO_SUBMITTED + 2;
	}
	if (wait_for_completion)
		v += DIO_WAIT_FOR_COMPLETION;
	atomic_set_release(&dio->state, v);
	/* if (!atomic_dec_and_test(&dio->ref)) { if
	 * (!dio->wait_for_completion) return -EIOCBQUEUED; sleep until
	 * the last bio clears dio->submit.waiter } */
	c = atomic_dec_return(&dio->state);
	if ((c & DIO_REF_MASK) && !wait_for_completion)
		return -EIOCBQUEUED;
	if (c & DIO_REF_MASK)
		wait_event(wq, (atomic_read_acquire(&dio->state) & DIO_REF_MASK) == 0);
	iomap_dio_complete(dio, v);
	return 1;
}

/*
 * A bio of write w, a task of its own (see the header): the data bio
 * lands on sector w, the zeroing bio, if the write has one, on the other
 * sector of b0; then iomap_dio_bio_end_io().
 */
static void iomap_dio_bio(int w, bool zero)
{
	struct iomap_dio *dio = &dios[w];
	int v;

	wait_event(wq, atomic_read_acquire(&dio->state) != 0);
	if (zero) {
		if (!(atomic_read(&dio->state) & IOMAP_DIO_UNWRITTEN))
			return;	/* a written extent: no zeroing */
		write_block(&bdev, 1 - w, ZEROES);
	} else {
		write_block(&bdev, w, w + 1);
	}
	/* if (atomic_dec_and_test(&dio->ref)) */
	v = atomic_dec_return(&dio->state);
	if (!(v & DIO_REF_MASK) && !(v & DIO_WAIT_FOR_COMPLETION))
		iomap_dio_complete(dio, v);	/* iomap_dio_complete_work() */
	/* else the submitter is woken and completes it */
}

/*
 * fs/ext4/file.c: ext4_dio_write_iter() for one unaligned sector of b0,
 * inside i_size, with ext4_dio_write_checks() (see the header).
 */
static ssize_t ext4_dio_write_iter(struct kiocb *iocb)
{
	struct inode *inode = file_inode(iocb->ki_filp);
	bool ilock_shared = true;
	unsigned int dio_flags = 0;
	int written;
	ssize_t ret;

	inode_lock_shared(inode);
	for (;;) {
		/* restart: ext4_dio_write_checks(): ext4_unaligned_io(): yes;
		 * ext4_extending_io(): no; ext4_overwrite_io(): b0 is
		 * allocated and inside i_size, *unwritten from ext4_map_blocks() */
		written = smp_load_acquire(&b0_extent.written);
		/* if (*ilock_shared && (... || (unaligned_io && *unwritten))) */
		if (!ilock_shared || written)
			break;
		/* inode_unlock_shared(); *ilock_shared = false; inode_lock();
		 * goto restart */
		inode_unlock_shared(inode);
		ilock_shared = false;
		inode_lock(inode);
	}
	if (!ilock_shared) {
		/* !*ilock_shared && unaligned_io: if (unaligned_io &&
		 * (!overwrite || *unwritten)) inode_dio_wait(); and
		 * *dio_flags = IOMAP_DIO_FORCE_WAIT */
		if (!written)
			inode_dio_wait(inode);
		dio_flags = IOMAP_DIO_FORCE_WAIT;
	}
	ret = iomap_dio_rw(iocb, dio_flags);
	if (ilock_shared)
		inode_unlock_shared(inode);
	else
		inode_unlock(inode);
	return ret;
}

static int ext4_file_open(struct inode *inode, struct file *filp)
{
	filp->f_mode |= FMODE_NOWAIT | FMODE_DIO_PARALLEL_WRITE;
	return 0;
}

static const struct file_operations ext4_file_operations = {
	.write_iter	= ext4_dio_write_iter,
	.open		= ext4_file_open,
};

/*
 * fs/xfs/xfs_file.c: xfs_file_dio_write_unaligned() for one sector of b0
 * (see the header): A's write (s0) ends before i_size, B's (s1) at it.
 */
static ssize_t xfs_file_dio_write_unaligned(struct kiocb *iocb)
{
	struct inode *inode = file_inode(iocb->ki_filp);
	bool excl = false;
	unsigned int flags;
	ssize_t ret;

	/* if (iocb->ki_pos + iov_iter_count(from) >= isize) goto retry_exclusive */
	if (iocb->ki_pos + 1 >= 2)
		excl = true;
	for (;;) {
		/* xfs_ilock_iocb_for_write(iocb, &iolock) */
		if (excl) {
			/* retry_exclusive: XFS_IOLOCK_EXCL, IOMAP_DIO_FORCE_WAIT */
			inode_lock(inode);
			flags = IOMAP_DIO_FORCE_WAIT;
		} else {
			/* XFS_IOLOCK_SHARED, IOMAP_DIO_OVERWRITE_ONLY */
			inode_lock_shared(inode);
			flags = IOMAP_DIO_OVERWRITE_ONLY;
		}
		/* xfs_file_write_checks(): nothing to do at this bound;
		 * if (flags & IOMAP_DIO_FORCE_WAIT) inode_dio_wait() */
		if (excl)
			inode_dio_wait(inode);
		ret = iomap_dio_rw(iocb, flags);
		if (ret != -EAGAIN || excl)
			break;
		/* ret == -EAGAIN && !(iolock & XFS_IOLOCK_EXCL):
		 * xfs_iunlock(ip, iolock); goto retry_exclusive */
		inode_unlock_shared(inode);
		excl = true;
	}
	/* xfs_iunlock(ip, iolock) */
	if (excl)
		inode_unlock(inode);
	else
		inode_unlock_shared(inode);
	return ret;
}

static int xfs_file_open(struct inode *inode, struct file *file)
{
	file->f_mode |= FMODE_NOWAIT | FMODE_DIO_PARALLEL_WRITE;
	return 0;
}

static const struct file_operations xfs_file_operations = {
	.write_iter	= xfs_file_dio_write_unaligned,
	.open		= xfs_file_open,
};

/*
 * A file system without FMODE_DIO_PARALLEL_WRITE: i_rwsem exclusive for
 * every direct write, with ext4's drain and wait rules for an unaligned
 * write (see the header).
 */
static ssize_t noflag_dio_write_iter(struct kiocb *iocb)
{
	struct inode *inode = file_inode(iocb->ki_filp);
	ssize_t ret;

	inode_lock(inode);
	if (!smp_load_acquire(&b0_extent.written))
		inode_dio_wait(inode);
	ret = iomap_dio_rw(iocb, IOMAP_DIO_FORCE_WAIT);
	inode_unlock(inode);
	return ret;
}

static int noflag_file_open(struct inode *inode, struct file *file)
{
	return 0;
}

static const struct file_operations noflag_file_operations = {
	.write_iter	= noflag_dio_write_iter,
	.open		= noflag_file_open,
};

/* io_uring/rw.c: the request's completion, io_complete_rw() (the CQE) */
static void io_complete_rw(struct kiocb *kiocb, long res)
{
}

/*
 * io_uring/rw.c: io_write() -> io_rw_init_file() (IOCB_DIRECT from
 * O_DIRECT), the kiocb asynchronous (ki_complete), then the file's
 * ->write_iter(): -EIOCBQUEUED ends the issue with the write in flight.
 */
static int io_write(struct io_kiocb *req, int sector)
{
	struct kiocb *kiocb = &req->rw.kiocb;
	struct file *file = req->file;

	kiocb->ki_filp = file;
	kiocb->ki_pos = sector;
	kiocb->ki_flags = (file->f_flags & O_DIRECT) ? IOCB_DIRECT : 0;
	kiocb->ki_complete = io_complete_rw;
	kiocb->flushproof_dio = &dios[sector];
	return file->f_op->write_iter(kiocb);
}

/* io-wq's hash of the file's inode (see the header) */
static DEFINE_SPINLOCK(io_wq_hash_lock);

/*
 * io_uring/io-wq.c: io_worker_handle_work() for one work item:
 * io_get_next_work() runs a hashed work while no other worker runs one
 * of its hash; io_wq_submit_work() -> io_issue_sqe() -> io_write(); then
 * the hash is released and its waiters woken.
 */
static void io_worker_handle_work(struct io_wq_work *work, int sector)
{
	struct io_kiocb *req = container_of(work, struct io_kiocb, work);
	bool hashed = io_wq_is_hashed(work);

	if (hashed)
		spin_lock(&io_wq_hash_lock);
	io_write(req, sector);
	if (hashed)
		spin_unlock(&io_wq_hash_lock);
}

/*
 * An io-wq worker with one request: a direct write of one sector of the
 * file, opened O_WRONLY | O_DIRECT (do_dentry_open() calls the file
 * system's ->open()), prepared by io_prep_async_work() when it was
 * punted, then run. The file system is ext4.
 */
static void iowq_write(int sector)
{
	struct io_ring_ctx ctx = { .flags = 0 };
	struct file file = {
		.f_inode = &inode,
		.f_op = &ext4_file_operations,
		.f_flags = O_WRONLY | O_DIRECT,
	};
	struct io_kiocb req = {
		.file = &file,
		.opcode = IORING_OP_WRITE,
		.ctx = &ctx,
		/* io_uring/opdef.c: [IORING_OP_WRITE] */
		.flushproof_issue_defs = {
			[IORING_OP_WRITE] = { .hash_reg_file = 1, .unbound_nonreg_file = 1 },
		},
	};

	file.f_op->open(&inode, &file);
	io_prep_async_work(&req);
	io_worker_handle_work(&req.work, sector);
}

/* P0 (A) and P1 (B): the io-wq workers */
static void worker_a(void)
{
	iowq_write(0);
}

static void worker_b(void)
{
	iowq_write(1);
}

/* P2 .. P5: each write's data bio and zeroing bio */
static void bio_a(void)
{
	iomap_dio_bio(0, false);
}

static void zero_a(void)
{
	iomap_dio_bio(0, true);
}

static void bio_b(void)
{
	iomap_dio_bio(1, false);
}

static void zero_b(void)
{
	iomap_dio_bio(1, true);
}

void harness(void)
{
	spawn(worker_a);
	spawn(worker_b);
	spawn(bio_a);
	spawn(zero_a);
	spawn(bio_b);
	spawn(zero_b);
}

/*
 * On every crash image: a completed write's sector holds its data in a
 * written extent, and a written extent shows no stale data.
 */
void recovery(void)
{
	int written = READ_ONCE(b0_extent.written);

	if (atomic_read(&dios[0].state) == DIO_COMPLETED)
		assert(written && read_block(&bdev, 0) == 1);
	if (atomic_read(&dios[1].state) == DIO_COMPLETED)
		assert(written && read_block(&bdev, 1) == 2);
	if (written) {
		assert(read_block(&bdev, 0) != STALE);
		assert(read_block(&bdev, 1) != STALE);
	}
}
