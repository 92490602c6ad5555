/*
 * flushproof/kernel.h: the kernel as flushproof models it, for harnesses of
 * kernel C (docs/kernel-c.md lists every name with the kernel file it
 * comes from, and what the checker does with it).
 *
 * A function declared here and defined nowhere is a primitive: the checker
 * knows what it does. Anything else a harness calls it must define itself,
 * as a stub in C. Values are integers: a register holds -32768..32767, a
 * shared location what memory.Memory holds; a value beyond is an error row,
 * never a wrapped number.
 */
#ifndef _FLUSHPROOF_KERNEL_H
#define _FLUSHPROOF_KERNEL_H

/* include/linux/types.h, include/asm-generic/int-ll64.h */
typedef signed char s8;
typedef unsigned char u8;
typedef short s16;
typedef unsigned short u16;
typedef int s32;
typedef unsigned int u32;
typedef long long s64;
typedef unsigned long long u64;
typedef _Bool bool;
#define true 1
#define false 0
#define NULL ((void *)0)
typedef long long loff_t;
typedef unsigned long long sector_t;
typedef unsigned long size_t;
typedef long ssize_t;
typedef unsigned int gfp_t;
#define LLONG_MAX 0x7fffffffffffffffLL
#define INT_MAX 0x7fffffff
#define GFP_KERNEL 0
#define GFP_NOIO 0
#define GFP_NOFS 0

/* include/linux/compiler_attributes.h, compiler_types.h, fs/xfs/xfs_linux.h */
#define __always_inline inline
#define noinline
#define __must_check
#define __maybe_unused
#define __cold
#define likely(x) (x)
#define unlikely(x) (x)
#define STATIC static
#define EXPORT_SYMBOL(sym)
#define EXPORT_SYMBOL_GPL(sym)

/* include/linux/container_of.h: resolved by the member's name */
void *__flushproof_container_of(const void *ptr, const char *member);
#define container_of(ptr, type, member) \
	((type *)__flushproof_container_of((ptr), #member))

/* include/uapi/asm-generic/errno-base.h */
#define EIO 5
#define ENOMEM 12
#define EAGAIN 11
#define EINVAL 22
#define ENOSPC 28
#define EOPNOTSUPP 95

/* include/linux/types.h: the atomic types are opaque words here */
typedef struct { int counter; } atomic_t;
typedef struct { s64 counter; } atomic64_t;
typedef struct { long counter; } atomic_long_t;
#define ATOMIC_INIT(i) { (i) }
#define ATOMIC64_INIT(i) { (i) }
#define ATOMIC_LONG_INIT(i) { (i) }

/*
 * include/asm-generic/rwonce.h, include/asm-generic/barrier.h: marked
 * accesses of any scalar; the checker reads the address it is given.
 */
long long __flushproof_read_once(const volatile void *p);
void __flushproof_write_once(volatile void *p, long long v);
long long __flushproof_load_acquire(const volatile void *p);
void __flushproof_store_release(volatile void *p, long long v);
#define READ_ONCE(x) ((__typeof__(x))__flushproof_read_once(&(x)))
#define WRITE_ONCE(x, val) __flushproof_write_once(&(x), (val))
#define smp_load_acquire(p) ((__typeof__(*(p)))__flushproof_load_acquire(p))
#define smp_store_release(p, v) __flushproof_store_release((p), (v))

/* include/asm-generic/barrier.h, include/linux/compiler.h */
void smp_mb(void);
void smp_rmb(void);
void smp_wmb(void);
void barrier(void);
void smp_mb__before_atomic(void);
void smp_mb__after_atomic(void);
void smp_mb__after_spinlock(void);

/*
 * include/linux/atomic/atomic-instrumented.h, atomic-long.h: every
 * ordering variant of Documentation/atomic_t.txt. A value-returning
 * operation without a suffix is fully ordered, one that returns nothing
 * is unordered; try_cmpxchg writes the value it found to *old on failure.
 */
#define __FLUSHPROOF_ATOMIC_ORDERED(pfx, T, V, ord)                    \
	V pfx##_add_return##ord(V i, T *v);                             \
	V pfx##_sub_return##ord(V i, T *v);                             \
	V pfx##_inc_return##ord(T *v);                                  \
	V pfx##_dec_return##ord(T *v);                                  \
	V pfx##_fetch_add##ord(V i, T *v);                              \
	V pfx##_fetch_sub##ord(V i, T *v);                              \
	V pfx##_fetch_inc##ord(T *v);                                   \
	V pfx##_fetch_dec##ord(T *v);                                   \
	V pfx##_xchg##ord(T *v, V new);                                 \
	V pfx##_cmpxchg##ord(T *v, V old, V new);                       \
	bool pfx##_try_cmpxchg##ord(T *v, V *old, V new);
#define __FLUSHPROOF_ATOMIC(pfx, T, V)                                 \
	V pfx##_read(const T *v);                                       \
	V pfx##_read_acquire(const T *v);                               \
	void pfx##_set(T *v, V i);                                      \
	void pfx##_set_release(T *v, V i);                              \
	void pfx##_add(V i, T *v);                                      \
	void pfx##_sub(V i, T *v);                                      \
	void pfx##_inc(T *v);                                           \
	void pfx##_dec(T *v);                                           \
	bool pfx##_inc_and_test(T *v);                                  \
	bool pfx##_dec_and_test(T *v);                                  \
	bool pfx##_sub_and_test(V i, T *v);                             \
	__FLUSHPROOF_ATOMIC_ORDERED(pfx, T, V, )                        \
	__FLUSHPROOF_ATOMIC_ORDERED(pfx, T, V, _relaxed)                \
	__FLUSHPROOF_ATOMIC_ORDERED(pfx, T, V, _acquire)                \
	__FLUSHPROOF_ATOMIC_ORDERED(pfx, T, V, _release)
__FLUSHPROOF_ATOMIC(atomic, atomic_t, int)
__FLUSHPROOF_ATOMIC(atomic64, atomic64_t, s64)
__FLUSHPROOF_ATOMIC(atomic_long, atomic_long_t, long)

/*
 * include/asm-generic/bitops/atomic.h, lock.h, instrumented-atomic.h:
 * the atomic bit operations on a word, ordered as
 * Documentation/atomic_bitops.txt says.
 */
bool test_bit(long nr, const volatile unsigned long *addr);
void set_bit(long nr, volatile unsigned long *addr);
void clear_bit(long nr, volatile unsigned long *addr);
void clear_bit_unlock(long nr, volatile unsigned long *addr);
bool test_and_set_bit(long nr, volatile unsigned long *addr);
bool test_and_clear_bit(long nr, volatile unsigned long *addr);
bool test_and_set_bit_lock(long nr, volatile unsigned long *addr);

/* include/linux/spinlock.h, include/linux/mutex.h */
typedef struct { int __flushproof_lock; } spinlock_t;
struct mutex { int __flushproof_lock; };
#define DEFINE_SPINLOCK(x) spinlock_t x
#define DEFINE_MUTEX(x) struct mutex x
void spin_lock_init(spinlock_t *lock);
void spin_lock(spinlock_t *lock);
void spin_unlock(spinlock_t *lock);
void spin_lock_irq(spinlock_t *lock);
void spin_unlock_irq(spinlock_t *lock);
#define spin_lock_irqsave(lock, flags) do { (flags) = 0; spin_lock(lock); } while (0)
#define spin_unlock_irqrestore(lock, flags) do { (void)(flags); spin_unlock(lock); } while (0)
void mutex_init(struct mutex *lock);
void mutex_lock(struct mutex *lock);
void mutex_unlock(struct mutex *lock);

/*
 * include/linux/llist.h: a lock-less list of the file-scope objects of
 * one struct type (at most 3) that hold its node, kept as a stack of
 * their numbers (docs/kernel-c.md).
 */
struct llist_node { struct llist_node *next; };
struct llist_head { long __flushproof_llist; };
#define LLIST_HEAD(name) struct llist_head name
bool llist_add(struct llist_node *new, struct llist_head *head);
struct llist_node *llist_del_all(struct llist_head *head);
bool llist_empty(const struct llist_head *head);
struct llist_node *llist_reverse_order(struct llist_node *head);
void __flushproof_llist_each(void *pos, struct llist_node *node, const char *member);
#define llist_for_each_entry(pos, node, member) \
	for (__flushproof_llist_each(&(pos), (node), #member); ; )
#define llist_for_each_entry_safe(pos, n, node, member) \
	for (__flushproof_llist_each(&(pos), (node), #member); ; )

/* include/linux/completion.h */
struct completion { unsigned int done; };
#define DECLARE_COMPLETION(work) struct completion work
void init_completion(struct completion *x);
void reinit_completion(struct completion *x);
void complete(struct completion *x);
void complete_all(struct completion *x);
void wait_for_completion(struct completion *x);

/* include/linux/wait.h: the condition is re-read by its one marked load */
struct wait_queue_head { int __flushproof_wq; };
typedef struct wait_queue_head wait_queue_head_t;
#define DECLARE_WAIT_QUEUE_HEAD(name) wait_queue_head_t name
void init_waitqueue_head(wait_queue_head_t *wq);
void __flushproof_wait_event(wait_queue_head_t *wq, long long cond);
#define wait_event(wq, cond) __flushproof_wait_event(&(wq), (cond))
void wake_up(wait_queue_head_t *wq);
void wake_up_all(wait_queue_head_t *wq);

/*
 * include/linux/blk_types.h, include/linux/bio.h, block/bio.c,
 * block/blk-flush.c. One device; a bio writes bi_flushproof_value to the
 * block bi_iter.bi_sector. The flag values are flushproof's, not the
 * kernel's: only their names mean anything.
 */
typedef unsigned int blk_opf_t;
typedef unsigned char blk_status_t;
#define BLK_STS_OK 0
#define BLK_STS_IOERR 10
#define REQ_OP_MASK 0xff
#define REQ_OP_READ 0
#define REQ_OP_WRITE 1
#define REQ_OP_FLUSH 2
#define REQ_FUA (1u << 8)
#define REQ_PREFLUSH (1u << 9)
#define REQ_SYNC (1u << 10)
#define REQ_META (1u << 11)
#define REQ_IDLE (1u << 12)
struct block_device { int __flushproof_bdev; };
struct bvec_iter { sector_t bi_sector; unsigned int bi_size; };
struct bio;
typedef void (bio_end_io_t)(struct bio *);
struct bio {
	struct block_device *bi_bdev;
	blk_opf_t bi_opf;
	blk_status_t bi_status;
	struct bvec_iter bi_iter;
	bio_end_io_t *bi_end_io;
	void *bi_private;
	long bi_flushproof_value; /* the data the bio writes */
};
void bio_init(struct bio *bio, struct block_device *bdev, void *table,
	      unsigned short max_vecs, blk_opf_t opf);
int submit_bio_wait(struct bio *bio);
int blkdev_issue_flush(struct block_device *bdev);
long __flushproof_read_block(struct block_device *bdev, sector_t block);
#define read_block(bdev, block) __flushproof_read_block((bdev), (block))
int blk_status_to_errno(blk_status_t status);

/* flushproof's own: the obligations and the harness's threads */
void assert_durable(long block, long value);
void assert(long cond);
void spawn(void *fn, ...);
void spawn_daemon(void *fn, ...);

#endif /* _FLUSHPROOF_KERNEL_H */
