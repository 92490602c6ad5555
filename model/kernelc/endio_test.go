package kernelc_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/durable"
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/kernelc"
	"github.com/flushproof/flushproof/model/verdict"
)

// asyncWrite is a harness whose tasks submit their block's write with
// submit_bio() and the flags %s; the bi_end_io records the status and
// completes the task's completion, which the task waits for (%s) before
// asserting its block durable if the status was good.
const asyncWrite = `/*
 * Device: cache+fua, no-cache
 * Models: SC, LKMM
 * Failures: write
 */
#include <flushproof/kernel.h>

struct wctx {
	int status;
	struct completion done;
};

static struct block_device bdev;
static struct wctx ctx0, ctx1;

static void write_end_io(struct bio *bio)
{
	struct wctx *c = bio->bi_private;

	WRITE_ONCE(c->status, bio->bi_status);
	complete(&c->done);
}

static void writer(int b, struct wctx *c)
{
	struct bio bio;

	bio_init(&bio, &bdev, NULL, 0, REQ_OP_WRITE | %s);
	bio.bi_iter.bi_sector = b;
	bio.bi_iter.bi_size = 4096;
	bio.bi_flushproof_value = 1;
	bio.bi_end_io = write_end_io;
	bio.bi_private = c;
	submit_bio(&bio);
	%s
	if (READ_ONCE(c->status) == BLK_STS_OK)
		assert_durable(b, 1);
}

void harness(void)
{
	spawn(writer, 0, &ctx0);
	spawn(writer, 1, &ctx1);
}
`

// TestAsyncBios: submit_bio() returns at once and the bio's bi_end_io runs
// as an actor of its own once the device ended the bio, with bi_status
// set from the device's result.
func TestAsyncBios(t *testing.T) {
	wait := "wait_for_completion(&c->done);"
	for _, tc := range []struct {
		name, flags, wait string
		want              map[string]verdict.Outcome
	}{
		{"FUA, waited for", "REQ_FUA", wait, map[string]verdict.Outcome{
			"SC cache+fua": verdict.Safe, "SC no-cache": verdict.Safe, "LKMM cache+fua": verdict.Safe, "LKMM no-cache": verdict.Safe}},
		{"no FUA: in the cache when the end_io runs", "0", wait, map[string]verdict.Outcome{
			"SC cache+fua": verdict.Unsafe, "SC no-cache": verdict.Safe, "LKMM cache+fua": verdict.Unsafe, "LKMM no-cache": verdict.Safe}},
		{"not waited for: still in flight", "REQ_FUA", "", map[string]verdict.Outcome{
			"SC cache+fua": verdict.Unsafe, "SC no-cache": verdict.Unsafe, "LKMM cache+fua": verdict.Unsafe, "LKMM no-cache": verdict.Unsafe}},
	} {
		assert.Equal(t, tc.want, verdicts(t, fmt.Sprintf(asyncWrite, tc.flags, tc.wait)), tc.name)
	}
}

// TestAsyncFlush: an empty REQ_PREFLUSH bio sent with submit_bio() is a
// cache flush whose end is seen by its bi_end_io: a write that completed
// before it is durable once the end_io reports success, and one asserted
// before the end_io ran is not.
func TestAsyncFlush(t *testing.T) {
	src := `/*
 * Device: cache+fua
 * Models: SC
 * Failures: flush
 */
#include <flushproof/kernel.h>

static struct block_device bdev;
static int flushed;
static DECLARE_WAIT_QUEUE_HEAD(wq);

static void flush_end_io(struct bio *bio)
{
	smp_store_release(&flushed, bio->bi_status == BLK_STS_OK ? 1 : 2);
	wake_up(&wq);
}

static void task(void)
{
	struct bio bio, flush;

	bio_init(&bio, &bdev, NULL, 0, REQ_OP_WRITE);
	bio.bi_iter.bi_sector = 0;
	bio.bi_iter.bi_size = 4096;
	bio.bi_flushproof_value = 1;
	if (submit_bio_wait(&bio))
		return;
	bio_init(&flush, &bdev, NULL, 0, REQ_OP_WRITE | REQ_PREFLUSH);
	flush.bi_end_io = flush_end_io;
	submit_bio(&flush);
	%s
}

void harness(void)
{
	spawn(task);
}
`
	assert.Equal(t, map[string]verdict.Outcome{"SC cache+fua": verdict.Safe},
		verdicts(t, fmt.Sprintf(src, "wait_event(wq, smp_load_acquire(&flushed) != 0);\n\tif (smp_load_acquire(&flushed) == 1)\n\t\tassert_durable(0, 1);")))
	assert.Equal(t, map[string]verdict.Outcome{"SC cache+fua": verdict.Unsafe},
		verdicts(t, fmt.Sprintf(src, "wait_event(wq, smp_load_acquire(&flushed) != 0);\n\tassert_durable(0, 1);")), "a failed flush")
	assert.Equal(t, map[string]verdict.Outcome{"SC cache+fua": verdict.Unsafe},
		verdicts(t, fmt.Sprintf(src, "assert_durable(0, 1);")), "not waited for")
}

// TestAsyncBioLimits: what the actor of a bi_end_io cannot do is an error
// at the line, and a second bio from one submit_bio call while the first's
// bi_end_io has not run is an error of the search.
func TestAsyncBioLimits(t *testing.T) {
	for _, tc := range []struct {
		name, from, to, err string
	}{
		{"no bi_end_io", "\tbio.bi_end_io = write_end_io;\n", "", "h.c:33:2: submit_bio of a bio whose bi_end_io is not set to a function of the file"},
		{"a field known only at run time", "\tWRITE_ONCE(c->status, bio->bi_status);", "\tWRITE_ONCE(c->status, bio->bi_iter.bi_sector);", "bio.bi_iter.bi_sector in a bi_end_io: its value at the submit_bio is known only at run time"},
		{"bi_private to a local", "\tbio.bi_private = c;", "\tstruct wctx mine;\n\tbio.bi_private = &mine;", "bio.bi_private in a bi_end_io: it points to mine, a local of the submitting task"},
	} {
		src := fmt.Sprintf(asyncWrite, "REQ_FUA", "wait_for_completion(&c->done);")
		require.Contains(t, src, tc.from, tc.name)
		_, err := kernelc.Parse("h.c", []byte(strings.Replace(src, tc.from, tc.to, 1)))
		assert.ErrorContains(t, err, tc.err, tc.name)
	}

	// Two rounds from one call: the second submit while the first's
	// bio has not been reaped.
	src := fmt.Sprintf(asyncWrite, "REQ_FUA", "wait_for_completion(&c->done);")
	src = strings.Replace(src, "\tbio_init(&bio,", "\tfor (int i = 0; i < 2; i++) {\n\tbio_init(&bio,", 1)
	src = strings.Replace(src, "\tsubmit_bio(&bio);\n", "\tsubmit_bio(&bio);\n\t}\n", 1)
	tt, err := kernelc.Parse("h.c", []byte(src))
	require.NoError(t, err)
	d, err := durable.Read("h.c", tt)
	require.NoError(t, err)
	for _, r := range d.Rows(nil, false) {
		_, err := r.Check(explore.Options{MaxStates: 2_000_000, Liveness: true})
		assert.ErrorContains(t, err, "a bio submitted while the one this submit_bio sent before has not ended and run its bi_end_io", r.Name())
	}
}
