/*
 * A flush daemon fed by an llist (TestLlistFlushDaemon): each task writes
 * its block, queues its request and waits until the daemon marks it done;
 * the daemon takes the whole list, flushes, and marks what it took.
 * The EARLY and LATE comments below are where the test puts the marking.
 *
 * Device: cache+fua
 * Models: SC, TSO, LKMM
 */
#include <flushproof/kernel.h>

struct flush_req {
	int done;
	struct llist_node node;
};

static struct block_device bdev;
static struct flush_req reqs[2];
static LLIST_HEAD(pending);
static DECLARE_WAIT_QUEUE_HEAD(wq);

static void flush_daemon(void)
{
	struct llist_node *list;
	struct flush_req *req, *tmp;

	for (;;) {
		wait_event(wq, !llist_empty(&pending));
		list = llist_del_all(&pending);
		list = llist_reverse_order(list);
		/* EARLY */
		if (blkdev_issue_flush(&bdev))
			continue;
		/* LATE */
	}
}

static void submitter(int b, struct flush_req *rq)
{
	struct bio bio;

	bio_init(&bio, &bdev, NULL, 0, REQ_OP_WRITE);
	bio.bi_iter.bi_sector = b;
	bio.bi_iter.bi_size = 4096;
	bio.bi_flushproof_value = 1;
	if (submit_bio_wait(&bio))
		return;
	llist_add(&rq->node, &pending);
	wake_up(&wq);
	wait_event(wq, smp_load_acquire(&rq->done) == 1);
	assert_durable(b, 1);
}

void harness(void)
{
	spawn(submitter, 0, &reqs[0]);
	spawn(submitter, 1, &reqs[1]);
	spawn_daemon(flush_daemon);
}
