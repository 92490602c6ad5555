/*
 * The flush sequencing of block/blk-flush.c: how concurrent REQ_PREFLUSH
 * requests share one cache flush. Two tasks each write their own block,
 * then send an empty REQ_PREFLUSH request through the flush queue and,
 * when it ends without error, count their block durable. A daemon stands
 * for the driver: it issues each flush the queue kicked and ends it
 * (flush_end_io()). Flushes may fail.
 *
 * This is a model of the sequencing in the kernel's style, not the
 * kernel's text. What it keeps from blk-flush.c (the comment at its top,
 * blk_kick_flush(), flush_end_io()):
 *   - a request that needs a preflush is queued on the pending list, and
 *     the flush is kicked under mq_flush_lock;
 *   - C1: at most one flush is in flight; pending_idx != running_idx
 *     says one is;
 *   - blk_kick_flush() issues a flush for the requests pending when it
 *     runs, and a new, empty pending list takes the requests that come
 *     while it is in flight: they wait for the next flush, which
 *     flush_end_io() kicks when this one ends;
 *   - flush_end_io() ends the requests of the running list, with the
 *     flush's error.
 * What it changes:
 *   - the two list banks (flush_queue[2], indexed by a one-bit
 *     flush_pending_idx / flush_running_idx) are generation numbers that
 *     count up instead of toggling, so that a request remembers the
 *     flush it waits for (in the kernel it is on that flush's list); the
 *     pending list is not empty while flush_queued_idx, one past the
 *     generation of the last request queued, is above flush_pending_idx;
 *     the error of the last flush that failed is kept by its generation;
 *   - the requests wait for their generation with an acquire load, which
 *     the flush's completion gives them in the kernel;
 *   - the daemon (the driver's dispatch and completion) is told which
 *     generation it issued, and has smp_mb__after_spinlock() after
 *     taking mq_flush_lock: the checker's LKMM does not count an unlock
 *     then a lock of mq_flush_lock as ordering the loads of one critical
 *     section before the stores of the next (LKMM does), and refuses its
 *     loop otherwise;
 *   - C2 and C3 (flush_data_in_flight, flush_pending_since) only delay a
 *     kick: the requests here have no data step, so they are left out.
 *
 * On cache+fua only: without a volatile cache every completed write is
 * durable and the mutant is harmless (SAFE), with emulated FUA the rows
 * are those of cache+fua (no write here has FUA). Two tasks: with a
 * third, the LKMM row passes the checker's bound of 8 stores to
 * mq_flush_lock that a thread may still read.
 *
 *   flushproof check examples/blk-flush-seq/blk-flush-seq.c
 *   flushproof check -patch examples/blk-flush-seq/mutant-join-running-flush.patch examples/blk-flush-seq/blk-flush-seq.c
 *
 * Expect: safe
 * Device: cache+fua
 * Failures: flush
 */
#include <flushproof/kernel.h>

/* flushproof: harness */
struct request {
	unsigned int		flush_seq;	/* the generation it waits for */
};

/* flushproof: block/blk.h */
struct blk_flush_queue {
	spinlock_t		mq_flush_lock;
	unsigned int		flush_pending_idx;
	unsigned int		flush_running_idx;
	unsigned int		flush_queued_idx;
	unsigned int		flush_error_idx;
};

/* flushproof: harness */
static struct block_device bdev;
static struct blk_flush_queue fq;
static DECLARE_WAIT_QUEUE_HEAD(flush_wq);

/* flushproof: block/blk-flush.c */
/*
 * Issue a flush for the pending requests, if there are any and no flush
 * is in flight (C1): the pending list becomes the running one and a new
 * pending list starts. Called with mq_flush_lock held.
 */
static void blk_kick_flush(struct blk_flush_queue *fq)
{
	/* C1 described at the top of this file */
	if (fq->flush_pending_idx == fq->flush_running_idx) {
		if (fq->flush_queued_idx > fq->flush_pending_idx) {
			/* issue flush and toggle pending_idx */
			fq->flush_pending_idx++;
			wake_up(&flush_wq);
		}
	}
}

/*
 * Queue @rq for the next flush: the one blk_kick_flush() issues for the
 * pending list, never the one in flight, which may have been issued
 * before the data @rq's preflush must cover had completed.
 */
static void blk_insert_flush(struct blk_flush_queue *fq, struct request *rq)
{
	spin_lock_irq(&fq->mq_flush_lock);
	rq->flush_seq = fq->flush_pending_idx;
	fq->flush_queued_idx = rq->flush_seq + 1;
	blk_kick_flush(fq);
	spin_unlock_irq(&fq->mq_flush_lock);
}

/*
 * The flush of generation @seq ended: end the requests it ran, with its
 * error, and kick the next flush for what pended meanwhile. Called with
 * mq_flush_lock held; the requests wait without it, so the error is
 * recorded before the generation is published.
 */
static void flush_end_io(struct blk_flush_queue *fq, unsigned int seq,
			 int error)
{
	if (error)
		fq->flush_error_idx = seq;
	smp_store_release(&fq->flush_running_idx, seq);
	wake_up_all(&flush_wq);

	blk_kick_flush(fq);
}

/* Wait for the flush @rq was queued for; its error is @rq's. */
static int blk_flush_wait(struct blk_flush_queue *fq, struct request *rq)
{
	wait_event(flush_wq,
		   smp_load_acquire(&fq->flush_running_idx) > rq->flush_seq);
	if (READ_ONCE(fq->flush_error_idx) > rq->flush_seq)
		return -EIO;
	return 0;
}

/* flushproof: harness */
/* The driver: issue each flush the queue kicked, end it, for ever. */
static void flush_daemon(void)
{
	unsigned int issued = 0;
	int error;

	for (;;) {
		wait_event(flush_wq,
			   smp_load_acquire(&fq.flush_pending_idx) > issued);
		issued++;
		error = blkdev_issue_flush(&bdev);

		spin_lock_irq(&fq.mq_flush_lock);
		smp_mb__after_spinlock();
		flush_end_io(&fq, issued, error);
		spin_unlock_irq(&fq.mq_flush_lock);
	}
}

/* A task writes block b, then asks for a preflush and waits for it. */
static void submitter(int b)
{
	struct bio bio;
	struct request rq = { 0 };

	bio_init(&bio, &bdev, NULL, 0, REQ_OP_WRITE);
	bio.bi_iter.bi_sector = b;
	bio.bi_iter.bi_size = 4096;
	bio.bi_flushproof_value = 1;
	if (submit_bio_wait(&bio))
		return;

	blk_insert_flush(&fq, &rq);
	if (blk_flush_wait(&fq, &rq) == 0)
		assert_durable(b, 1);
}

void harness(void)
{
	spawn(submitter, 0);
	spawn(submitter, 1);
	spawn_daemon(flush_daemon);
}
