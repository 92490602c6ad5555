/*
 * fsync on xfs, with the flush numbering of fs/xfs/xfs_buf.c: the code
 * that the patch "xfs: skip the fsync flush when a later flush has
 * completed" changes, as that patch finds it. Two tasks each write
 * their own block of their own file and fdatasync it, twice; flushes
 * may fail. The log force is left out (the inodes have no log item: it
 * is a no-op when no metadata needs committing).
 *
 * The patch's base tree is not public: the flush counters and
 * xfs_buftarg_flush_start() / xfs_buftarg_flush_done() come from an
 * earlier patch of its series. Every context and removed line of the
 * patch's hunks is below as the patch has it; what the hunks do not
 * show is written in the kernel's style: the log-force block of
 * xfs_file_fsync() as v6.18's fs/xfs/xfs_file.c has it (with the base's
 * "error" in place of "err2"), the bodies of the two flush functions
 * from the patch's description, and the declarations around the hunks
 * of xfs_buf.h and xfs_buf.c as v6.18 has them.
 *
 * Check it, then check it with the patch applied:
 *   flushproof check examples/xfs-flushseq/xfs-flushseq.c
 *   flushproof check -patch examples/xfs-flushseq/0002-xfs-skip-the-fsync-flush.patch examples/xfs-flushseq/xfs-flushseq.c
 *
 * Expect: safe
 * Device: cache+fua
 * Failures: flush
 */
#include <flushproof/kernel.h>

/* flushproof: harness */
/*
 * The types, with the fields the functions below use; the inode's page
 * cache is one page: the block it belongs to and what write() left in it.
 */
typedef s64 xfs_fsblock_t;
struct xfs_buftarg {
	struct block_device	*bt_bdev;
	atomic64_t		bt_flush_submitted;
	atomic64_t		bt_flush_completed;
};
struct xfs_mount {
	struct xfs_buftarg	*m_ddev_targp;
	struct xfs_buftarg	*m_logdev_targp;
	struct xfs_buftarg	*m_rtdev_targp;
};
struct inode {
	unsigned int		i_flags;
	long			i_flushproof_block;
	long			i_flushproof_data;
};
struct xfs_inode_log_item;
struct xfs_inode {
	struct xfs_mount	*i_mount;
	struct xfs_inode_log_item *i_itemp;
	struct inode		i_vnode;
};
struct address_space { struct inode *host; };
struct kiocb;
struct file { struct address_space *f_mapping; };

/* include/linux/fs.h without CONFIG_FS_DAX; fs/xfs/xfs_linux.h without CONFIG_XFS_RT */
#define S_DAX 0
#define IS_DAX(inode)		((inode)->i_flags & S_DAX)
#define XFS_IS_REALTIME_INODE(ip) (0)
#define XFS_ITRUNCATED		(1 << 5)

/* Stubs: the file system is not shut down; the inode flags are not modelled. */
static inline bool xfs_is_shutdown(struct xfs_mount *mp) { return false; }
static inline void xfs_iflags_clear(struct xfs_inode *ip, unsigned long flags) { }
static int xfs_fsync_flush_log(struct xfs_inode *ip, bool datasync, int *log_flushed);

static struct block_device bdev;

/* mm/filemap.c, for a file of one page: write it back, wait for the write. */
int file_write_and_wait_range(struct file *file, loff_t lstart, loff_t lend)
{
	struct inode *inode = file->f_mapping->host;
	struct bio bio;

	bio_init(&bio, &bdev, NULL, 0, REQ_OP_WRITE);
	bio.bi_iter.bi_sector = inode->i_flushproof_block;
	bio.bi_iter.bi_size = 4096;
	bio.bi_flushproof_value = inode->i_flushproof_data;
	return submit_bio_wait(&bio);
}

/* flushproof: fs/xfs/xfs_inode.h */
/* Convert from vfs inode to xfs inode */
static inline struct xfs_inode *XFS_I(struct inode *inode)
{
	return container_of(inode, struct xfs_inode, i_vnode);
}

/* convert from xfs inode to vfs inode */
static inline struct inode *VFS_I(struct xfs_inode *ip)
{
	return &ip->i_vnode;
}

/*
 * Return the buftarg used for data allocations on a given inode.
 */
#define xfs_inode_buftarg(ip) \
	(XFS_IS_REALTIME_INODE(ip) ? \
		(ip)->i_mount->m_rtdev_targp : (ip)->i_mount->m_ddev_targp)

/* flushproof: fs/xfs/xfs_buf.h */
/*
 *	Handling of buftargs.
 */
struct xfs_buftarg *xfs_alloc_buftarg(struct xfs_mount *mp,
		struct file *bdev_file);
extern void xfs_free_buftarg(struct xfs_buftarg *);

/* Call right before submitting a cache flush to @btp. */
static inline s64
xfs_buftarg_flush_start(
	struct xfs_buftarg	*btp)
{
	return atomic64_inc_return(&btp->bt_flush_submitted);
}

void xfs_buftarg_flush_done(struct xfs_buftarg *btp, s64 seq);
extern void xfs_buftarg_wait(struct xfs_buftarg *);
extern void xfs_buftarg_drain(struct xfs_buftarg *);
int xfs_configure_buftarg(struct xfs_buftarg *btp, unsigned int sectorsize,
		xfs_fsblock_t nr_blocks);

/* flushproof: fs/xfs/xfs_buf.c */
/*
 * Call after the flush numbered @seq completed successfully: raise the
 * completed count to @seq, unless a later flush already did.
 */
void
xfs_buftarg_flush_done(
	struct xfs_buftarg	*btp,
	s64			seq)
{
	s64			old = atomic64_read(&btp->bt_flush_completed);

	while (old < seq &&
	       !atomic64_try_cmpxchg(&btp->bt_flush_completed, &old, seq))
		;
}

struct xfs_buftarg *
xfs_alloc_buftarg(
	struct xfs_mount	*mp,
	struct file		*bdev_file);

/* flushproof: fs/xfs/xfs_file.c */
STATIC int
xfs_file_fsync(
	struct file		*file,
	loff_t			start,
	loff_t			end,
	int			datasync)
{
	struct xfs_inode	*ip = XFS_I(file->f_mapping->host);
	int			log_flushed = 0;
	int			error;

	trace_xfs_file_fsync(ip);

	error = file_write_and_wait_range(file, start, end);
	if (error)
		return error;

	if (xfs_is_shutdown(ip->i_mount))
		return -EIO;

	xfs_iflags_clear(ip, XFS_ITRUNCATED);

	/*
	 * If the inode has a inode log item attached, it may need the journal
	 * flushed to persist any changes the log item might be tracking.
	 */
	if (ip->i_itemp) {
		error = xfs_fsync_flush_log(ip, datasync, &log_flushed);
		if (error)
			return error;
	}

	/*
	 * If the log force was a no-op, we may still need to flush the
	 * file data target cache here. This can happen for fdatasync/O_DSYNC
	 * when no metadata needed to be committed.
	 *
	 * Use the inode's actual file data target rather than assuming the
	 * main data device.
	 */
	if (!log_flushed)
		return blkdev_issue_flush(xfs_inode_buftarg(ip)->bt_bdev);
	return 0;
}

static int
xfs_ilock_iocb(
	struct kiocb		*iocb,
	unsigned int		lock_mode);

/* flushproof: harness */
static struct xfs_buftarg ddev = { .bt_bdev = &bdev };
static struct xfs_mount mount = { .m_ddev_targp = &ddev, .m_logdev_targp = &ddev };

/* A task writes block b of its own file and fdatasyncs it, twice. */
static void writer(int b)
{
	struct xfs_inode xi = { .i_mount = &mount };
	struct address_space mapping = { .host = &xi.i_vnode };
	struct file file = { .f_mapping = &mapping };
	int round;

	xi.i_vnode.i_flushproof_block = b;
	for (round = 1; round <= 2; round++) {
		xi.i_vnode.i_flushproof_data = round;	/* write() */
		if (xfs_file_fsync(&file, 0, LLONG_MAX, 1) == 0)
			assert_durable(b, round);
	}
}

void harness(void)
{
	spawn(writer, 0);
	spawn(writer, 1);
}
