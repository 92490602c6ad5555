/*
 * The jbd2 journal commit (Linux v6.18.5, fs/jbd2/commit.c) and its
 * recovery (fs/jbd2/recovery.c, do_one_pass()) as a harness: kjournald2
 * commits two transactions one after the other, each a descriptor
 * block, one metadata copy and a commit block; the machine crashes
 * anywhere, and recovery() replays the log and asserts what must
 * hold. It is the bound of model/jbd2's rows (docs/jbd2.md: "jbd2
 * <variant> <device> 2 transactions x 2 journal blocks, EIO").
 *
 * The default mount: JBD2_BARRIER, no async_commit, no journal
 * checksum: the commit block is written with REQ_PREFLUSH | REQ_FUA
 * once the journal blocks completed. model/jbd2's barrier rows, SAFE
 * on every device. The other variants are patches (docs/jbd2.md,
 * "Variants"):
 *   nobarrier.patch                 -o nobarrier: the harness's mount
 *   async-commit.patch              -o journal_async_commit: the same
 *   async-commit.patch, then
 *     async-commit-no-eio.patch     the same, no command failing
 *   mutant-drop-preflush.patch      commit.c: REQ_FUA, no REQ_PREFLUSH
 *   mutant-async-commit-no-checksum.patch
 *                                   async_commit, no journal checksum
 *
 *   flushproof check examples/jbd2-commit/jbd2-commit.c
 *   flushproof check -patch examples/jbd2-commit/async-commit.patch examples/jbd2-commit/jbd2-commit.c
 *
 * Expect: safe
 * Device: all
 * Failures: flush,write
 * Crash: any
 *
 * The obligation (model/jbd2 recovery.go): after a crash anywhere and
 * recovery, a transaction recovery replays is whole, and one whose
 * commit returned is replayed. The log is blocks 0 to 5: T1 owns 0
 * (descriptor), 1 (metadata copy), 2 (commit block), T2 owns 3, 4, 5.
 * Ti logs one metadata buffer, file system block 5 + i, whose new
 * content is i; recovery copies it there (PASS_REPLAY) and asserts
 * that every transaction it replayed left i in block 5 + i, and that
 * it replayed every transaction whose commit returned, as the task
 * recorded it in jbd2_flushproof_committed (shared memory as the
 * crash left it).
 *
 * What is the kernel's, unchanged (v6.18.5): the sections marked with a
 * kernel file. include/linux/jbd2.h: the on-disk header, commit block
 * and tags, the feature bits and predicates, the journal flags,
 * is_journal_aborted(), tid_geq(), the jbd2 buffer state bits.
 * include/linux/buffer_head.h: the state bits, BUFFER_FNS(),
 * set_buffer_uptodate(), clear_buffer_uptodate(), buffer_uptodate(),
 * wait_on_buffer(), trylock_buffer(), lock_buffer(). fs/jbd2/commit.c:
 * journal_end_buffer_io_sync(), jbd2_commit_block_csum_set(),
 * journal_submit_commit_record(), journal_wait_on_commit_record().
 *
 * What is written here, in the harness sections, and why:
 *  - jbd2_journal_commit_transaction() (fs/jbd2/commit.c) is 700 lines
 *    of lists, locks and accounting; its phases that write the log
 *    (2b to 5) are written out below for a transaction of one metadata
 *    buffer, as commit.c has them where they touch a buffer or the
 *    device.
 *  - The types carry only the fields the code reads. A block holds one
 *    value here (a page in the kernel): a journal block's header
 *    (h_blocktype, h_sequence) and 3 bits of what follows it (a
 *    descriptor's one tag: the block it logs; a commit block's
 *    h_chksum[0]), a metadata copy its buffer's content. 0, every
 *    block's initial content, is no journal block.
 *  - crc32_be() is the low 3 bits of crc ^ the block's value: a lost
 *    metadata copy (0 in place of i) changes it, as crc32 would (the
 *    model takes crc32 never to collide). h_chksum_type and
 *    h_chksum_size are not in a block's value: recovery compares the
 *    checksum alone (every commit block of a journal with the feature
 *    carries one).
 *  - The buffer heads are the committer's own locals: their b_state is a
 *    word of its own (plain C bit operations here, which the checker
 *    keeps in a register; its test_bit() and friends are for shared
 *    memory). put_bh() and the BH_Shadow hand-off of the original
 *    buffer (b_private) are left out: nothing else uses these buffers.
 *    The metadata copy shares its buffer's data (no frozen copy, no
 *    escaping), as jbd2_journal_write_metadata_buffer() does then.
 *  - The block layer. commit.c submits the journal blocks with
 *    submit_bh() and waits for them only after it submitted all of them
 *    (and, with async_commit, the commit block): those bios are in
 *    flight together, and the device may complete and persist them in
 *    any order. A harness has no asynchronous bio, so a daemon task per
 *    journal block, P1 (descriptor) and P2 (metadata copy), is the
 *    block layer's side: submit_bh() hands it the bio (block and data,
 *    published with a release), it sends the write and publishes its
 *    status, and wait_on_buffer() waits for that and runs the buffer's
 *    b_end_io, journal_end_buffer_io_sync(), in the committer (its only
 *    reader). The commit block's bio is sent by the committer itself
 *    with submit_bio_wait(): commit.c submits nothing after it before
 *    waiting for it (with async_commit it waits for the journal blocks
 *    first, which are in flight beside it either way), so the same bios
 *    are in flight together.
 *  - jbd2_journal_abort() (fs/jbd2/journal.c) sets JBD2_ABORT; after it
 *    the kernel's commit writes nothing more to the log
 *    (journal_submit_commit_record() returns at once) and no later
 *    transaction commits. Here the commit returns to kjournald2, which
 *    ends, right after the call, so no code runs with JBD2_ABORT set and
 *    the stub leaves j_flags alone: the lowering keeps j_flags a
 *    constant, and the commit block's bi_opf, which JBD2_BARRIER
 *    decides, must be known where the bio is submitted. What the kernel
 *    still does after an abort with async_commit (wait for the commit
 *    block, blkdev_issue_flush()) can only make more blocks durable, of
 *    a transaction whose commit does not return.
 *  - ext4's mount (fs/ext4/super.c): ext4_init_journal_params() sets
 *    JBD2_BARRIER unless -o nobarrier; set_journal_csum_feature_set()
 *    sets JBD2_FEATURE_COMPAT_CHECKSUM and
 *    JBD2_FEATURE_INCOMPAT_ASYNC_COMMIT for -o journal_async_commit
 *    (without metadata_csum). Recovery's journal reads the same
 *    features (jbd2_journal_load() from the superblock, not modelled).
 *  - What the checker's limits ask (docs/kernel-c.md; a thread names at
 *    most 64 registers and holds 8 at once): kjournald2 commits in a
 *    loop, which inlines the commit once, and states the mount again
 *    at each turn (a loop forgets the fields of a local whose address
 *    is taken); a field the lowering must know where it is read is
 *    stored first in the task (one an inlined function stores first is
 *    not known after it returns); the bit operations, the checksum, the
 *    features the harness's own code tests and
 *    jbd2_journal_has_csum_v2or3() are macros (an inlined function's
 *    result takes a register name at each call); BH_JWrite, bit 18, is
 *    not set (a value no register holds).
 *
 * Left out, as in model/jbd2: revoke blocks, the v2/v3 per-tag
 * checksums, the j_fs_dev != j_dev flush, the data writeout
 * (journal_submit_data_buffers()), the journal superblock and log tail.
 */
#include <flushproof/kernel.h>

/* flushproof: harness */
/* include/uapi/linux/types.h, include/linux/byteorder: byte order is not modelled */
typedef u32 __u32;
typedef u64 __u64;
typedef u16 __be16;
typedef u32 __be32;
typedef u64 __be64;
typedef unsigned char __u8;
#define cpu_to_be16(x)	(x)
#define cpu_to_be32(x)	(x)
#define cpu_to_be64(x)	(x)
#define be16_to_cpu(x)	(x)
#define be32_to_cpu(x)	(x)
typedef unsigned int tid_t;			/* include/linux/journal-head.h */
#define BUFFER_TRACE(bh, info)	do {} while (0)	/* include/linux/jbd2.h without CONFIG_JBD2_DEBUG */
#define might_sleep()	do {} while (0)

typedef struct journal_s	journal_t;	/* Journal control structure */

/* flushproof: include/linux/jbd2.h */
#define JBD2_MAGIC_NUMBER 0xc03b3998U /* The first 4 bytes of /dev/random! */

/*
 * On-disk structures
 */

/*
 * Descriptor block types:
 */

#define JBD2_DESCRIPTOR_BLOCK	1
#define JBD2_COMMIT_BLOCK	2
#define JBD2_SUPERBLOCK_V1	3
#define JBD2_SUPERBLOCK_V2	4
#define JBD2_REVOKE_BLOCK	5

/*
 * Standard header for all descriptor blocks:
 */
typedef struct journal_header_s
{
	__be32		h_magic;
	__be32		h_blocktype;
	__be32		h_sequence;
} journal_header_t;

/*
 * Checksum types.
 */
#define JBD2_CRC32_CHKSUM   1
#define JBD2_MD5_CHKSUM     2
#define JBD2_SHA1_CHKSUM    3
#define JBD2_CRC32C_CHKSUM  4

#define JBD2_CRC32_CHKSUM_SIZE 4

#define JBD2_CHECKSUM_BYTES (32 / sizeof(u32))
/*
 * Commit block header for storing transactional checksums:
 *
 * NOTE: If FEATURE_COMPAT_CHECKSUM (checksum v1) is set, the h_chksum*
 * fields are used to store a checksum of the descriptor and data blocks.
 *
 * If FEATURE_INCOMPAT_CSUM_V2 (checksum v2) is set, then the h_chksum
 * field is used to store crc32c(uuid+commit_block).  Each journal metadata
 * block gets its own checksum, and data block checksums are stored in
 * journal_block_tag (in the descriptor).  The other h_chksum* fields are
 * not used.
 *
 * If FEATURE_INCOMPAT_CSUM_V3 is set, the descriptor block uses
 * journal_block_tag3_t to store a full 32-bit checksum.  Everything else
 * is the same as v2.
 *
 * Checksum v1, v2, and v3 are mutually exclusive features.
 */
struct commit_header {
	__be32		h_magic;
	__be32          h_blocktype;
	__be32          h_sequence;
	unsigned char   h_chksum_type;
	unsigned char   h_chksum_size;
	unsigned char 	h_padding[2];
	__be32 		h_chksum[JBD2_CHECKSUM_BYTES];
	__be64		h_commit_sec;
	__be32		h_commit_nsec;
};

/*
 * The block tag: used to describe a single buffer in the journal.
 * t_blocknr_high is only used if INCOMPAT_64BIT is set, so this
 * raw struct shouldn't be used for pointer math or sizeof() - use
 * journal_tag_bytes(journal) instead to compute this.
 */
typedef struct journal_block_tag3_s
{
	__be32		t_blocknr;	/* The on-disk block number */
	__be32		t_flags;	/* See below */
	__be32		t_blocknr_high; /* most-significant high 32bits. */
	__be32		t_checksum;	/* crc32c(uuid+seq+block) */
} journal_block_tag3_t;

typedef struct journal_block_tag_s
{
	__be32		t_blocknr;	/* The on-disk block number */
	__be16		t_checksum;	/* truncated crc32c(uuid+seq+block) */
	__be16		t_flags;	/* See below */
	__be32		t_blocknr_high; /* most-significant high 32bits. */
} journal_block_tag_t;

/* Definitions for the journal tag flags word: */
#define JBD2_FLAG_ESCAPE		1	/* on-disk block is escaped */
#define JBD2_FLAG_SAME_UUID	2	/* block has same uuid as previous */
#define JBD2_FLAG_DELETED	4	/* block deleted by this transaction */
#define JBD2_FLAG_LAST_TAG	8	/* last tag in this descriptor block */

#define JBD2_FEATURE_COMPAT_CHECKSUM		0x00000001

#define JBD2_FEATURE_INCOMPAT_REVOKE		0x00000001
#define JBD2_FEATURE_INCOMPAT_64BIT		0x00000002
#define JBD2_FEATURE_INCOMPAT_ASYNC_COMMIT	0x00000004
#define JBD2_FEATURE_INCOMPAT_CSUM_V2		0x00000008
#define JBD2_FEATURE_INCOMPAT_CSUM_V3		0x00000010
#define JBD2_FEATURE_INCOMPAT_FAST_COMMIT	0x00000020

/* flushproof: include/linux/buffer_head.h */
enum bh_state_bits {
	BH_Uptodate,	/* Contains valid data */
	BH_Dirty,	/* Is dirty */
	BH_Lock,	/* Is locked */
	BH_Req,		/* Has been submitted for I/O */

	BH_Mapped,	/* Has a disk mapping */
	BH_New,		/* Disk mapping was newly created by get_block */
	BH_Async_Read,	/* Is under end_buffer_async_read I/O */
	BH_Async_Write,	/* Is under end_buffer_async_write I/O */
	BH_Delay,	/* Buffer is not yet allocated on disk */
	BH_Boundary,	/* Block is followed by a discontiguity */
	BH_Write_EIO,	/* I/O error on write */
	BH_Unwritten,	/* Buffer is allocated on disk but not written */
	BH_Quiet,	/* Buffer Error Prinks to be quiet */
	BH_Meta,	/* Buffer contains metadata */
	BH_Prio,	/* Buffer should be submitted with REQ_PRIO */
	BH_Defer_Completion, /* Defer AIO completion to workqueue */
	BH_Migrate,     /* Buffer is being migrated (norefs) */

	BH_PrivateStart,/* not a state bit, but the first bit available
			 * for private allocation by other entities
			 */
};

/* flushproof: harness */
/*
 * The types, with the fields the code reads. A buffer head's b_data
 * points to its block's content: a struct commit_header, a descriptor,
 * or a metadata buffer's one value; b_flushproof_value gives the value
 * a bio carries for it, b_flushproof_queue the daemon that sends its
 * bio (NULL: the submitter sends it, with submit_bio_wait()).
 */
struct buffer_head;
typedef void (bh_end_io_t)(struct buffer_head *bh, int uptodate);
struct blk_flushproof_queue;
struct buffer_head {
	unsigned long b_state;		/* buffer state bitmap (see above) */
	sector_t b_blocknr;		/* start block number */
	char *b_data;			/* pointer to data within the page */
	struct block_device *b_bdev;
	bh_end_io_t *b_end_io;		/* I/O completion */
	void *b_private;		/* reserved for b_end_io */
	long (*b_flushproof_value)(struct buffer_head *bh);
	struct blk_flushproof_queue *b_flushproof_queue;
};

/* A descriptor block: journal_header_t, then its one tag. */
struct jbd2_flushproof_descriptor {
	__be32		h_magic;
	__be32		h_blocktype;
	__be32		h_sequence;
	journal_block_tag_t d_tag;
};

typedef struct journal_superblock_s {
	journal_header_t s_header;
	__be32	s_sequence;		/* first commit ID expected in log */
	__be32	s_start;		/* blocknr of start of log */
	__be32	s_feature_compat;	/* compatible feature set */
	__be32	s_feature_incompat;	/* incompatible feature set */
	__be32	s_feature_ro_compat;	/* readonly-compatible feature set */
} journal_superblock_t;

struct journal_head {
	struct buffer_head *b_bh;
};

typedef struct transaction_s {
	journal_t *t_journal;
	tid_t t_tid;
	struct journal_head *t_buffers;	/* the one metadata buffer */
} transaction_t;

struct journal_s {
	unsigned long j_flags;
	journal_superblock_t *j_superblock;
	struct block_device *j_dev;
	struct block_device *j_fs_dev;
	transaction_t *j_running_transaction;
	unsigned long j_head;
	unsigned long j_first;
	unsigned long j_last;
	int j_blocksize;
	__u32 j_csum_seed;
	/*
	 * The buffers of a transaction's log blocks and their content
	 * (__getblk() and jbd2_journal_write_metadata_buffer()'s
	 * alloc_buffer_head() in the kernel): each transaction takes them
	 * once the one before it is done with them.
	 */
	struct buffer_head j_flushproof_descriptor_bh;
	struct buffer_head j_flushproof_copy_bh;
	struct buffer_head j_flushproof_commit_bh;
	struct jbd2_flushproof_descriptor j_flushproof_descriptor;
	struct commit_header j_flushproof_commit;
};

/* flushproof: include/linux/jbd2.h */
/*
 * We can support any known requested features iff the
 * superblock is not in version 1.  Otherwise we fail to support any
 * extended sb features.
 */
static inline bool jbd2_format_support_feature(journal_t *j)
{
	return j->j_superblock->s_header.h_blocktype !=
					cpu_to_be32(JBD2_SUPERBLOCK_V1);
}

/* journal feature predicate functions */
#define JBD2_FEATURE_COMPAT_FUNCS(name, flagname) \
static inline bool jbd2_has_feature_##name(journal_t *j) \
{ \
	return (jbd2_format_support_feature(j) && \
		((j)->j_superblock->s_feature_compat & \
		 cpu_to_be32(JBD2_FEATURE_COMPAT_##flagname)) != 0); \
} \
static inline void jbd2_set_feature_##name(journal_t *j) \
{ \
	(j)->j_superblock->s_feature_compat |= \
		cpu_to_be32(JBD2_FEATURE_COMPAT_##flagname); \
} \
static inline void jbd2_clear_feature_##name(journal_t *j) \
{ \
	(j)->j_superblock->s_feature_compat &= \
		~cpu_to_be32(JBD2_FEATURE_COMPAT_##flagname); \
}

#define JBD2_FEATURE_INCOMPAT_FUNCS(name, flagname) \
static inline bool jbd2_has_feature_##name(journal_t *j) \
{ \
	return (jbd2_format_support_feature(j) && \
		((j)->j_superblock->s_feature_incompat & \
		 cpu_to_be32(JBD2_FEATURE_INCOMPAT_##flagname)) != 0); \
} \
static inline void jbd2_set_feature_##name(journal_t *j) \
{ \
	(j)->j_superblock->s_feature_incompat |= \
		cpu_to_be32(JBD2_FEATURE_INCOMPAT_##flagname); \
} \
static inline void jbd2_clear_feature_##name(journal_t *j) \
{ \
	(j)->j_superblock->s_feature_incompat &= \
		~cpu_to_be32(JBD2_FEATURE_INCOMPAT_##flagname); \
}

JBD2_FEATURE_COMPAT_FUNCS(checksum,		CHECKSUM)

JBD2_FEATURE_INCOMPAT_FUNCS(revoke,		REVOKE)
JBD2_FEATURE_INCOMPAT_FUNCS(64bit,		64BIT)
JBD2_FEATURE_INCOMPAT_FUNCS(async_commit,	ASYNC_COMMIT)
JBD2_FEATURE_INCOMPAT_FUNCS(csum2,		CSUM_V2)
JBD2_FEATURE_INCOMPAT_FUNCS(csum3,		CSUM_V3)
JBD2_FEATURE_INCOMPAT_FUNCS(fast_commit,	FAST_COMMIT)

/* Journal high priority write IO operation flags */
#define JBD2_JOURNAL_REQ_FLAGS		(REQ_META | REQ_SYNC | REQ_IDLE)

/*
 * Journal flag definitions
 */
#define JBD2_UNMOUNT	0x001	/* Journal thread is being destroyed */
#define JBD2_ABORT	0x002	/* Journaling has been aborted for errors. */
#define JBD2_ACK_ERR	0x004	/* The errno in the sb has been acked */
#define JBD2_FLUSHED	0x008	/* The journal superblock has been flushed */
#define JBD2_LOADED	0x010	/* The journal superblock has been loaded */
#define JBD2_BARRIER	0x020	/* Use IDE barriers */

static inline int is_journal_aborted(journal_t *journal)
{
	return journal->j_flags & JBD2_ABORT;
}

static inline int tid_geq(tid_t x, tid_t y)
{
	int difference = (x - y);
	return (difference >= 0);
}

/* flushproof: harness */
/*
 * The feature tests of the harness's own code, and
 * jbd2_journal_has_csum_v2or3() (include/linux/jbd2.h), as macros over
 * the superblock's feature bits: an inlined function's result takes a
 * register name at each call, and a thread names at most 64.
 */
#define jbd2_flushproof_has_checksum(j)	\
	((j)->j_superblock->s_feature_compat & JBD2_FEATURE_COMPAT_CHECKSUM)
#define jbd2_flushproof_has_async_commit(j)	\
	((j)->j_superblock->s_feature_incompat & JBD2_FEATURE_INCOMPAT_ASYNC_COMMIT)
#define jbd2_journal_has_csum_v2or3(j)	\
	((j)->j_superblock->s_feature_incompat & \
	 (JBD2_FEATURE_INCOMPAT_CSUM_V2 | JBD2_FEATURE_INCOMPAT_CSUM_V3))

/*
 * include/asm-generic/bitops, on a buffer head's b_state, a word of the
 * committer's own (see the header): plain C, as macros (an inlined
 * function's result takes a register name at each call).
 */
#define test_bit(nr, addr)		((*(addr) >> (nr)) & 1)
#define test_bit_acquire(nr, addr)	test_bit(nr, addr)
#define set_bit(nr, addr)		(*(addr) |= 1UL << (nr))
#define clear_bit(nr, addr)		(*(addr) -= *(addr) & (1UL << (nr)))
#define clear_bit_unlock(nr, addr)	clear_bit(nr, addr)
#define test_and_set_bit_lock(nr, addr)	(test_bit(nr, addr) || (set_bit(nr, addr), 0))
#define wake_up_bit(word, bit)		do {} while (0)

static void __wait_on_buffer(struct buffer_head *bh);
static inline void __lock_buffer(struct buffer_head *bh)
{
}

/* flushproof: include/linux/buffer_head.h */
/*
 * macro tricks to expand the set_buffer_foo(), clear_buffer_foo()
 * and buffer_foo() functions.
 * To avoid reset buffer flags that are already set, because that causes
 * a costly cache line transition, check the flag first.
 */
#define BUFFER_FNS(bit, name)						\
static __always_inline void set_buffer_##name(struct buffer_head *bh)	\
{									\
	if (!test_bit(BH_##bit, &(bh)->b_state))			\
		set_bit(BH_##bit, &(bh)->b_state);			\
}									\
static __always_inline void clear_buffer_##name(struct buffer_head *bh)	\
{									\
	clear_bit(BH_##bit, &(bh)->b_state);				\
}									\
static __always_inline int buffer_##name(const struct buffer_head *bh)	\
{									\
	return test_bit(BH_##bit, &(bh)->b_state);			\
}

BUFFER_FNS(Dirty, dirty)
BUFFER_FNS(Lock, locked)

static __always_inline void set_buffer_uptodate(struct buffer_head *bh)
{
	/*
	 * If somebody else already set this uptodate, they will
	 * have done the memory barrier, and a reader will thus
	 * see *some* valid buffer state.
	 *
	 * Any other serialization (with IO errors or whatever that
	 * might clear the bit) has to come from other state (eg BH_Lock).
	 */
	if (test_bit(BH_Uptodate, &bh->b_state))
		return;

	/*
	 * make it consistent with folio_mark_uptodate
	 * pairs with smp_load_acquire in buffer_uptodate
	 */
	smp_mb__before_atomic();
	set_bit(BH_Uptodate, &bh->b_state);
}

static __always_inline void clear_buffer_uptodate(struct buffer_head *bh)
{
	clear_bit(BH_Uptodate, &bh->b_state);
}

static __always_inline int buffer_uptodate(const struct buffer_head *bh)
{
	/*
	 * make it consistent with folio_test_uptodate
	 * pairs with smp_mb__before_atomic in set_buffer_uptodate
	 */
	return test_bit_acquire(BH_Uptodate, &bh->b_state);
}

static inline void wait_on_buffer(struct buffer_head *bh)
{
	might_sleep();
	if (buffer_locked(bh))
		__wait_on_buffer(bh);
}

static inline int trylock_buffer(struct buffer_head *bh)
{
	return likely(!test_and_set_bit_lock(BH_Lock, &bh->b_state));
}

static inline void lock_buffer(struct buffer_head *bh)
{
	might_sleep();
	if (!trylock_buffer(bh))
		__lock_buffer(bh);
}

/* flushproof: include/linux/jbd2.h */
enum jbd_state_bits {
	BH_JBD			/* Has an attached ext3 journal_head */
	  = BH_PrivateStart,
	BH_JWrite,		/* Being written to log (@@@ DEBUGGING) */
	BH_Freed,		/* Has been freed (truncated) */
	BH_Revoked,		/* Has been revoked from the log */
	BH_RevokeValid,		/* Revoked flag is valid */
	BH_JBDDirty,		/* Is dirty but journaled */
	BH_JournalHead,		/* Pins bh->b_private and jh->b_bh */
	BH_Shadow,		/* IO on shadow buffer is running */
	BH_Verified,		/* Metadata block has been verified ok */
	BH_JBDPrivateStart,	/* First bit available for private use by FS */
};

BUFFER_FNS(JBD, jbd)
BUFFER_FNS(JWrite, jwrite)
BUFFER_FNS(JBDDirty, jbddirty)

/* flushproof: harness */
static struct block_device bdev;

/*
 * The block layer's side of a journal block's bio (see the header): 0,
 * idle; b + 1, a write of block b handed over, its data in q_value;
 * BLK_FLUSHPROOF_DONE or BLK_FLUSHPROOF_EIO once it ended.
 */
#define BLK_FLUSHPROOF_DONE	(-1)
#define BLK_FLUSHPROOF_EIO	(-2)
struct blk_flushproof_queue {
	int q_sector;
	int q_value;
	wait_queue_head_t q_wait;
};
static struct blk_flushproof_queue blk_flushproof_q0, blk_flushproof_q1;

/* The last transaction whose commit returned with the journal not aborted. */
static tid_t jbd2_flushproof_committed;

/* A block's one value: its journal header and 3 bits after it (see the header). */
#define JBD2_FLUSHPROOF_VALUE(type, seq, rest)	((type) << 5 | (seq) << 3 | (rest))
#define jbd2_flushproof_blocktype(v)		((v) >> 5)
#define jbd2_flushproof_sequence(v)		(((v) >> 3) & 3)
#define jbd2_flushproof_rest(v)			((v) & 7)
/* Ti's metadata buffer: file system block 5 + i, with i in it. */
#define JBD2_FLUSHPROOF_HOME(tid)		(5 + (tid))

static long jbd2_flushproof_descriptor_value(struct buffer_head *bh)
{
	struct jbd2_flushproof_descriptor *d = (struct jbd2_flushproof_descriptor *)bh->b_data;

	return JBD2_FLUSHPROOF_VALUE(be32_to_cpu(d->h_blocktype),
				     be32_to_cpu(d->h_sequence),
				     be32_to_cpu(d->d_tag.t_blocknr));
}

static long jbd2_flushproof_commit_value(struct buffer_head *bh)
{
	struct commit_header *h = (struct commit_header *)bh->b_data;

	return JBD2_FLUSHPROOF_VALUE(be32_to_cpu(h->h_blocktype),
				     be32_to_cpu(h->h_sequence),
				     be32_to_cpu(h->h_chksum[0]));
}

static long jbd2_flushproof_data_value(struct buffer_head *bh)
{
	return *(long *)bh->b_data;
}

/*
 * lib/crc32.c: crc32_be() of a block's one value (see the header); and
 * fs/jbd2/commit.c's jbd2_checksum_data() of a journal block's buffer.
 * Macros: an inlined function's result takes a register name at each
 * call.
 */
#define jbd2_flushproof_crc32_be(crc, value)	(((crc) ^ (value)) & 7)
#define jbd2_checksum_data(crc32_sum, bh)	\
	jbd2_flushproof_crc32_be(crc32_sum, (bh)->b_flushproof_value(bh))

__u32 jbd2_chksum(__u32 crc, const void *address, unsigned int length);

/*
 * include/linux/timekeeping.h: the time is not modelled. A macro: a
 * field of a local that an inlined function stores first is not known
 * after it returns, and would hold a register.
 */
struct timespec64 {
	long long tv_sec;
	long tv_nsec;
};
#define ktime_get_coarse_real_ts64(ts)			\
	do {						\
		(ts)->tv_sec = 0;			\
		(ts)->tv_nsec = 0;			\
	} while (0)

/* fs/buffer.c */
static void unlock_buffer(struct buffer_head *bh)
{
	clear_bit_unlock(BH_Lock, &bh->b_state);
	smp_mb__after_atomic();
	wake_up_bit(&bh->b_state, BH_Lock);
}

/* include/linux/buffer_head.h: b_count is not modelled (see the header). */
static inline void put_bh(struct buffer_head *bh)
{
}

/*
 * fs/buffer.c: submit_bh() -> submit_bh_wbc() builds the bio, whose
 * end_bio_bh_io_sync() calls b_end_io with !bi_status. A journal
 * block's bio goes to its daemon (published with a release, as the
 * block layer orders a submission before its completion); the commit
 * block's is sent here and waited for (see the header).
 */
static void submit_bh(blk_opf_t opf, struct buffer_head *bh)
{
	struct blk_flushproof_queue *q = bh->b_flushproof_queue;
	struct bio bio;

	if (q) {
		WRITE_ONCE(q->q_value, bh->b_flushproof_value(bh));
		smp_store_release(&q->q_sector, bh->b_blocknr + 1);
		return;
	}
	bio_init(&bio, bh->b_bdev, NULL, 0, opf);
	bio.bi_iter.bi_sector = bh->b_blocknr;
	bio.bi_iter.bi_size = 4096;
	bio.bi_flushproof_value = bh->b_flushproof_value(bh);
	bh->b_end_io(bh, !submit_bio_wait(&bio));
}

/*
 * fs/buffer.c: __wait_on_buffer() sleeps until BH_Lock is clear, which
 * b_end_io does at the bio's end (wait_on_bit_io(): prepare_to_wait()'s
 * set_current_state() is an smp_mb()): here the wait for the daemon's
 * status, then b_end_io.
 */
static void __wait_on_buffer(struct buffer_head *bh)
{
	struct blk_flushproof_queue *q = bh->b_flushproof_queue;

	if (!q)
		return;
	smp_mb();	/* set_current_state() */
	wait_event(q->q_wait, smp_load_acquire(&q->q_sector) < 0);
	/*
	 * The wait is a loop, which forgets what the lowering knew of the
	 * committer's locals; b_state is what submit left (locked,
	 * uptodate, clean: nothing else touches it while the bio is in
	 * flight), stated again so that no register holds it meanwhile.
	 */
	bh->b_state = 1UL << BH_Lock | 1UL << BH_Uptodate;
	bh->b_end_io(bh, smp_load_acquire(&q->q_sector) == BLK_FLUSHPROOF_DONE);
}

/*
 * Tasks 1 and 2, daemons: the block layer's side of the descriptor's
 * (q0) and the metadata copy's (q1) bio of each transaction: the write
 * lands, then its status is published.
 */
static void blk_flushproof_dispatch(struct blk_flushproof_queue *q)
{
	struct bio bio;
	int n;

	for (n = 0; n < 2; n++) {
		wait_event(q->q_wait, smp_load_acquire(&q->q_sector) > 0);
		bio_init(&bio, &bdev, NULL, 0, REQ_OP_WRITE | JBD2_JOURNAL_REQ_FLAGS);
		bio.bi_iter.bi_sector = smp_load_acquire(&q->q_sector) - 1;
		bio.bi_iter.bi_size = 4096;
		bio.bi_flushproof_value = READ_ONCE(q->q_value);
		if (submit_bio_wait(&bio))
			smp_store_release(&q->q_sector, BLK_FLUSHPROOF_EIO);
		else
			smp_store_release(&q->q_sector, BLK_FLUSHPROOF_DONE);
		wake_up(&q->q_wait);
	}
}

/*
 * fs/jbd2/journal.c: jbd2_journal_next_log_block(): j_head, then the
 * next (jbd2_journal_bmap() maps the log linearly: a journal device of
 * its own; the two transactions fill the log, so j_head never wraps
 * before the last block is taken; the error, for a failed bmap of a
 * journal inode, is left out, as is its register).
 */
static void jbd2_journal_next_log_block(journal_t *journal, unsigned long long *retp)
{
	*retp = journal->j_head;
	journal->j_head++;
}

/*
 * fs/jbd2/journal.c: jbd2_journal_get_descriptor_buffer(): the next log
 * block's buffer (__getblk(): the journal's buffer for the kind of
 * block asked for), its header filled in.
 */
static struct buffer_head *
jbd2_journal_get_descriptor_buffer(transaction_t *transaction, int type)
{
	journal_t *journal = transaction->t_journal;
	struct buffer_head *bh;
	journal_header_t *header;

	if (type == JBD2_COMMIT_BLOCK) {
		bh = &journal->j_flushproof_commit_bh;
		bh->b_data = (char *)&journal->j_flushproof_commit;
		bh->b_flushproof_value = jbd2_flushproof_commit_value;
		bh->b_flushproof_queue = NULL;
		/* memset(bh->b_data, 0, ...), of what is read */
		journal->j_flushproof_commit.h_chksum[0] = 0;
	} else {
		bh = &journal->j_flushproof_descriptor_bh;
		bh->b_data = (char *)&journal->j_flushproof_descriptor;
		bh->b_flushproof_value = jbd2_flushproof_descriptor_value;
		bh->b_flushproof_queue = &blk_flushproof_q0;
	}
	bh->b_state = 0;
	jbd2_journal_next_log_block(journal, &bh->b_blocknr);
	bh->b_bdev = journal->j_dev;
	bh->b_private = NULL;
	/* lock_buffer(bh): the committer's own buffer (see the header) */
	header = (journal_header_t *)bh->b_data;
	header->h_magic = cpu_to_be32(JBD2_MAGIC_NUMBER);
	header->h_blocktype = cpu_to_be32(type);
	header->h_sequence = cpu_to_be32(transaction->t_tid);
	set_buffer_uptodate(bh);
	/* unlock_buffer(bh); */
	BUFFER_TRACE(bh, "return this buffer");
	return bh;
}

/*
 * fs/jbd2/journal.c: jbd2_journal_write_metadata_buffer(): a new buffer
 * for log block blocknr over the metadata buffer's data (no frozen
 * copy, no escaping: its data is no journal block, so the result, the
 * escape flag, is left out).
 */
static void jbd2_journal_write_metadata_buffer(transaction_t *transaction,
					       struct journal_head *jh_in,
					       struct buffer_head **bh_out,
					       sector_t blocknr)
{
	journal_t *journal = transaction->t_journal;
	struct buffer_head *new_bh = &journal->j_flushproof_copy_bh;

	new_bh->b_state = 0;
	new_bh->b_data = jh_in->b_bh->b_data;	/* no frozen data: bh_in's folio */
	new_bh->b_flushproof_value = jbd2_flushproof_data_value;
	new_bh->b_flushproof_queue = &blk_flushproof_q1;
	new_bh->b_bdev = journal->j_dev;
	new_bh->b_blocknr = blocknr;
	new_bh->b_private = NULL;	/* the BH_Shadow hand-off: see the header */
	*bh_out = new_bh;
}

/* fs/jbd2/journal.c: see the header. */
#define jbd2_journal_abort(journal, errno)	do {} while (0)

/* flushproof: fs/jbd2/commit.c */
/*
 * IO end handler for temporary buffer_heads handling writes to the journal.
 */
static void journal_end_buffer_io_sync(struct buffer_head *bh, int uptodate)
{
	struct buffer_head *orig_bh = bh->b_private;

	BUFFER_TRACE(bh, "");
	if (uptodate)
		set_buffer_uptodate(bh);
	else
		clear_buffer_uptodate(bh);
	if (orig_bh) {
		clear_bit_unlock(BH_Shadow, &orig_bh->b_state);
		smp_mb__after_atomic();
		wake_up_bit(&orig_bh->b_state, BH_Shadow);
	}
	unlock_buffer(bh);
}

static void jbd2_commit_block_csum_set(journal_t *j, struct buffer_head *bh)
{
	struct commit_header *h;
	__u32 csum;

	if (!jbd2_journal_has_csum_v2or3(j))
		return;

	h = (struct commit_header *)(bh->b_data);
	h->h_chksum_type = 0;
	h->h_chksum_size = 0;
	h->h_chksum[0] = 0;
	csum = jbd2_chksum(j->j_csum_seed, bh->b_data, j->j_blocksize);
	h->h_chksum[0] = cpu_to_be32(csum);
}

/*
 * Done it all: now submit the commit record.  We should have
 * cleaned up our previous buffers by now, so if we are in abort
 * mode we can now just skip the rest of the journal write
 * entirely.
 *
 * Returns 1 if the journal needs to be aborted or 0 on success
 */
static int journal_submit_commit_record(journal_t *journal,
					transaction_t *commit_transaction,
					struct buffer_head **cbh,
					__u32 crc32_sum)
{
	struct commit_header *tmp;
	struct buffer_head *bh;
	struct timespec64 now;
	blk_opf_t write_flags = REQ_OP_WRITE | JBD2_JOURNAL_REQ_FLAGS;

	*cbh = NULL;

	if (is_journal_aborted(journal))
		return 0;

	bh = jbd2_journal_get_descriptor_buffer(commit_transaction,
						JBD2_COMMIT_BLOCK);
	if (!bh)
		return 1;

	tmp = (struct commit_header *)bh->b_data;
	ktime_get_coarse_real_ts64(&now);
	tmp->h_commit_sec = cpu_to_be64(now.tv_sec);
	tmp->h_commit_nsec = cpu_to_be32(now.tv_nsec);

	if (jbd2_has_feature_checksum(journal)) {
		tmp->h_chksum_type 	= JBD2_CRC32_CHKSUM;
		tmp->h_chksum_size 	= JBD2_CRC32_CHKSUM_SIZE;
		tmp->h_chksum[0] 	= cpu_to_be32(crc32_sum);
	}
	jbd2_commit_block_csum_set(journal, bh);

	BUFFER_TRACE(bh, "submit commit block");
	lock_buffer(bh);
	clear_buffer_dirty(bh);
	set_buffer_uptodate(bh);
	bh->b_end_io = journal_end_buffer_io_sync;

	if (journal->j_flags & JBD2_BARRIER &&
	    !jbd2_has_feature_async_commit(journal))
		write_flags |= REQ_PREFLUSH | REQ_FUA;

	submit_bh(write_flags, bh);
	*cbh = bh;
	return 0;
}

/*
 * This function along with journal_submit_commit_record
 * allows to write the commit record asynchronously.
 */
static int journal_wait_on_commit_record(journal_t *journal,
					 struct buffer_head *bh)
{
	int ret = 0;

	clear_buffer_dirty(bh);
	wait_on_buffer(bh);

	if (unlikely(!buffer_uptodate(bh)))
		ret = -EIO;
	put_bh(bh);            /* One for getblk() */

	return ret;
}

/* flushproof: harness */
/*
 * fs/jbd2/commit.c: jbd2_journal_commit_transaction(), phases 2b to 5,
 * for a transaction of one metadata buffer (see the header). It returns
 * the error it aborted the journal with, or 0: the commit returned.
 */
static int jbd2_journal_commit_transaction(journal_t *journal)
{
	transaction_t *commit_transaction = journal->j_running_transaction;
	struct journal_head *jh = commit_transaction->t_buffers;
	struct buffer_head *descriptor;
	struct buffer_head *wbuf[2];
	struct jbd2_flushproof_descriptor *tagp;
	struct buffer_head *cbh = NULL; /* For transactional checksums */
	__u32 crc32_sum = ~0;
	unsigned long long blocknr;
	int err;

	/*
	 * Phases 1 to 2a, left out, take j_state_lock and other locks:
	 * locked instructions, a full barrier on x86 (TSO, whose store
	 * buffer the last commit's stores would otherwise still fill).
	 * Under LKMM it orders more than those locks do: the last
	 * commit's record before this commit's first bio, which makes
	 * the record only sooner visible to recovery().
	 */
	smp_mb();

	/*
	 * Phase 2b, under blk_start_plug() (nothing waits before
	 * blk_finish_plug()): a descriptor, then the copy of the metadata
	 * buffer in the next log block, tagged in the descriptor.
	 */
	descriptor = jbd2_journal_get_descriptor_buffer(commit_transaction,
						JBD2_DESCRIPTOR_BLOCK);
	tagp = (struct jbd2_flushproof_descriptor *)descriptor->b_data;
	/*
	 * set_buffer_jwrite(descriptor): BH_JWrite is bit 18, a value no
	 * register holds, and nothing here reads it.
	 */
	set_buffer_dirty(descriptor);
	wbuf[0] = descriptor;
	/*
	 * write_tag_block(), before the copy is made (commit.c tags it
	 * after: the same, as nothing is sent before blk_finish_plug(), and
	 * the home block's register ends sooner); the one tag is the last
	 * (JBD2_FLAG_LAST_TAG: t_flags is not read here).
	 */
	tagp->d_tag.t_blocknr = cpu_to_be32(jh->b_bh->b_blocknr);
	jbd2_journal_next_log_block(journal, &blocknr);
	jbd2_journal_write_metadata_buffer(commit_transaction, jh, &wbuf[1], blocknr);

	/* start_journal_io: for each of wbuf[] */
	if (jbd2_flushproof_has_checksum(journal)) {
		crc32_sum = jbd2_checksum_data(crc32_sum, wbuf[0]);
		crc32_sum = jbd2_checksum_data(crc32_sum, wbuf[1]);
	}
	lock_buffer(wbuf[0]);
	clear_buffer_dirty(wbuf[0]);
	set_buffer_uptodate(wbuf[0]);
	wbuf[0]->b_end_io = journal_end_buffer_io_sync;
	submit_bh(REQ_OP_WRITE | JBD2_JOURNAL_REQ_FLAGS, wbuf[0]);
	lock_buffer(wbuf[1]);
	clear_buffer_dirty(wbuf[1]);
	set_buffer_uptodate(wbuf[1]);
	wbuf[1]->b_end_io = journal_end_buffer_io_sync;
	submit_bh(REQ_OP_WRITE | JBD2_JOURNAL_REQ_FLAGS, wbuf[1]);

	/* journal_finish_inode_data_buffers(): no data buffers */
	err = 0;

	/* Done it all: now write the commit record asynchronously. */
	if (jbd2_flushproof_has_async_commit(journal)) {
		err = journal_submit_commit_record(journal, commit_transaction,
						 &cbh, crc32_sum);
		if (err) {
			jbd2_journal_abort(journal, err);
			return err;
		}
	}

	/* blk_finish_plug(&plug); */

	/* Phase 3: io_bufs, the metadata copy */
	wait_on_buffer(wbuf[1]);
	if (unlikely(!buffer_uptodate(wbuf[1])))
		err = -EIO;

	/* Phase 4: log_bufs, the descriptor */
	wait_on_buffer(wbuf[0]);
	if (unlikely(!buffer_uptodate(wbuf[0])))
		err = -EIO;

	if (err) {
		jbd2_journal_abort(journal, err);
		return err;
	}

	/* Phase 5 */
	if (!jbd2_flushproof_has_async_commit(journal)) {
		err = journal_submit_commit_record(journal, commit_transaction,
						&cbh, crc32_sum);
		if (err) {
			jbd2_journal_abort(journal, err);
			return err;
		}
	}
	if (cbh)
		err = journal_wait_on_commit_record(journal, cbh);
	if (jbd2_flushproof_has_async_commit(journal) &&
	    journal->j_flags & JBD2_BARRIER) {
		blkdev_issue_flush(journal->j_dev);
	}

	if (err) {
		jbd2_journal_abort(journal, err);
		return err;
	}

	/* j_commit_sequence = commit_transaction->t_tid */
	return 0;
}

/*
 * The journal as ext4 mounted it (fs/ext4/super.c, see the header), its
 * superblock v2 (jbd2_format_support_feature()).
 */
static void ext4_flushproof_mount(journal_t *journal, journal_superblock_t *sb)
{
	sb->s_header.h_blocktype = cpu_to_be32(JBD2_SUPERBLOCK_V2);
	/* set_journal_csum_feature_set(): no journal checksum, no async_commit */
	sb->s_feature_compat = 0;
	sb->s_feature_incompat = 0;
	journal->j_superblock = sb;
	journal->j_dev = &bdev;
	journal->j_fs_dev = &bdev;
	/* ext4_init_journal_params(): -o barrier, the default */
	journal->j_flags = JBD2_BARRIER;
}

#define jbd2_flushproof_name_fields(journal, sb)			\
	do {								\
		(sb)->s_header.h_blocktype = 0;				\
		(sb)->s_feature_compat = 0;				\
		(sb)->s_feature_incompat = 0;				\
		(journal)->j_flags = 0;					\
	} while (0)
#define jbd2_flushproof_name_buffers(journal)				\
	do {								\
		(journal)->j_flushproof_descriptor_bh.b_state = 0;	\
		(journal)->j_flushproof_copy_bh.b_state = 0;		\
		(journal)->j_flushproof_commit_bh.b_state = 0;		\
		(journal)->j_flushproof_descriptor.h_blocktype = 0;	\
		(journal)->j_flushproof_commit.h_blocktype = 0;		\
	} while (0)

/*
 * Task 0: kjournald2 (fs/jbd2/journal.c) commits T1, then T2; an
 * aborted journal commits nothing more (see the header). Ti logs
 * block 5 + i, with i in it.
 */
static void kjournald2(void)
{
	journal_superblock_t sb;
	journal_t journal;
	transaction_t transaction;
	struct journal_head jh;
	struct buffer_head bh;

	/*
	 * A field of a local that an inlined function stores first is not
	 * known after it returns: those the lowering must know are
	 * stored here first.
	 */
	jbd2_flushproof_name_fields(&journal, &sb);
	jbd2_flushproof_name_buffers(&journal);
	journal.j_head = 0;
	for (transaction.t_tid = 1; transaction.t_tid <= 2; transaction.t_tid++) {
		/*
		 * The mount, stated again at each commit: nothing changes
		 * it, but the lowering forgets at a loop's head every field
		 * of a local whose address is taken, and the commit needs
		 * j_flags and the features known (a bio's flags must be
		 * known where it is submitted).
		 */
		ext4_flushproof_mount(&journal, &sb);
		bh.b_blocknr = JBD2_FLUSHPROOF_HOME(transaction.t_tid);
		bh.b_data = (char *)&transaction.t_tid;	/* its new content: i */
		jh.b_bh = &bh;
		transaction.t_journal = &journal;
		transaction.t_buffers = &jh;
		journal.j_running_transaction = &transaction;
		if (jbd2_journal_commit_transaction(&journal))
			return;
		WRITE_ONCE(jbd2_flushproof_committed, transaction.t_tid);
	}
}

void harness(void)
{
	spawn(kjournald2);
	spawn_daemon(blk_flushproof_dispatch, &blk_flushproof_q0);
	spawn_daemon(blk_flushproof_dispatch, &blk_flushproof_q1);
}

/*
 * fs/jbd2/recovery.c: do_one_pass() for PASS_SCAN and PASS_REPLAY, over
 * the blocks' values (see the header): jread() is read_block(),
 * calc_chksums() and jbd2_do_replay() are written out for the one tag
 * of a descriptor, revoke blocks, fast commits and the v2/v3 checksums
 * are left out.
 */
enum passtype {PASS_SCAN, PASS_REVOKE, PASS_REPLAY};

/*
 * jbd2_do_replay()'s copy of a logged block to its place: __getblk(),
 * memcpy(), mark_buffer_dirty(), written by sync_blockdev() at the end
 * of jbd2_journal_recover(); here a write waited for.
 */
static void jbd2_flushproof_write_block(struct block_device *bdev, unsigned long blocknr, long v)
{
	struct bio bio;

	bio_init(&bio, bdev, NULL, 0, REQ_OP_WRITE);
	bio.bi_iter.bi_sector = blocknr;
	bio.bi_iter.bi_size = 4096;
	bio.bi_flushproof_value = v;
	submit_bio_wait(&bio);
}

struct recovery_info {
	tid_t start_transaction;
	tid_t end_transaction;
};

static int do_one_pass(journal_t *journal,
			struct recovery_info *info, enum passtype pass)
{
	unsigned int next_commit_ID;
	unsigned long next_log_block;
	long v;
	unsigned long blocknr;
	__u32 crc32_sum = ~0; /* Transactional Checksums */

	next_commit_ID = be32_to_cpu(journal->j_superblock->s_sequence);
	next_log_block = be32_to_cpu(journal->j_superblock->s_start);
	if (pass == PASS_SCAN)
		info->start_transaction = next_commit_ID;

	while (1) {
		if (pass != PASS_SCAN)
			if (tid_geq(next_commit_ID, info->end_transaction))
				break;

		v = read_block(journal->j_dev, next_log_block);
		next_log_block++;
		if (next_log_block >= journal->j_last)	/* wrap() */
			next_log_block -= journal->j_last - journal->j_first;

		/* h_magic: 0 is no journal block */
		if (jbd2_flushproof_blocktype(v) == 0)
			break;
		if (jbd2_flushproof_sequence(v) != next_commit_ID)
			break;

		if (jbd2_flushproof_blocktype(v) == JBD2_DESCRIPTOR_BLOCK) {
			if (pass != PASS_REPLAY) {
				if (pass == PASS_SCAN &&
				    jbd2_has_feature_checksum(journal) &&
				    !info->end_transaction) {
					/* calc_chksums() */
					crc32_sum = jbd2_flushproof_crc32_be(crc32_sum, v);
					crc32_sum = jbd2_flushproof_crc32_be(crc32_sum,
						read_block(journal->j_dev, next_log_block));
				}
				next_log_block++;	/* count_tags(): one tag */
				continue;
			}
			/* jbd2_do_replay(): the tag's block gets its copy */
			blocknr = jbd2_flushproof_rest(v);
			v = read_block(journal->j_dev, next_log_block);
			next_log_block++;
			jbd2_flushproof_write_block(journal->j_fs_dev, blocknr, v);
			continue;
		}
		if (jbd2_flushproof_blocktype(v) == JBD2_COMMIT_BLOCK) {
			if (pass != PASS_SCAN) {
				next_commit_ID++;
				continue;
			}
			if (jbd2_has_feature_checksum(journal)) {
				if (info->end_transaction)
					continue;	/* break; out of the switch */
				/* Neither checksum match nor unused? */
				if (crc32_sum != jbd2_flushproof_rest(v)) {
					/* chksum_error: */
					info->end_transaction = next_commit_ID;
					if (!jbd2_has_feature_async_commit(journal))
						continue;	/* break; out of the switch */
				} else {
					crc32_sum = ~0;
				}
			}
			/* chksum_ok: */
			next_commit_ID++;
			continue;
		}
		break;	/* default: goto done */
	}

	if (pass == PASS_SCAN) {
		if (!info->end_transaction)
			info->end_transaction = next_commit_ID;
	}
	return 0;
}

/*
 * After the crash: jbd2_journal_recover() scans the log and replays it;
 * every transaction it replayed left its metadata buffer's new content
 * in its block (none was replayed in part), and it replayed every
 * transaction whose commit returned.
 */
void recovery(void)
{
	journal_superblock_t sb;
	journal_t journal;
	struct recovery_info info;
	tid_t tid;

	jbd2_flushproof_name_fields(&journal, &sb);
	ext4_flushproof_mount(&journal, &sb);
	/* jbd2_journal_load(): the log, 0 to 5, starts at T1 */
	sb.s_sequence = cpu_to_be32(1);
	sb.s_start = 0;
	journal.j_first = 0;
	journal.j_last = 6;
	info.start_transaction = 0;
	info.end_transaction = 0;
	do_one_pass(&journal, &info, PASS_SCAN);
	do_one_pass(&journal, &info, PASS_REPLAY);

	for (tid = 1; tid < info.end_transaction; tid++)
		assert(read_block(&bdev, JBD2_FLUSHPROOF_HOME(tid)) == tid);
	assert(READ_ONCE(jbd2_flushproof_committed) < info.end_transaction);
}
