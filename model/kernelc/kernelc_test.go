package kernelc_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/durable"
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/kernelc"
	"github.com/flushproof/flushproof/model/litmus"
	"github.com/flushproof/flushproof/model/verdict"
)

// verdicts checks a harness under every row its header asks for and
// returns each row's outcome by its configuration ("SC cache+fua").
func verdicts(t *testing.T, src string) map[string]verdict.Outcome {
	t.Helper()
	tt, err := kernelc.Parse("h.c", []byte(src))
	require.NoError(t, err)
	d, err := durable.Read("h.c", tt)
	require.NoError(t, err)
	out := map[string]verdict.Outcome{}
	for _, r := range d.Rows(nil, false) {
		v, err := r.Check(explore.Options{MaxStates: 2_000_000, Liveness: true})
		require.NoError(t, err, r.Name())
		out[r.Config] = v.Outcome
	}
	return out
}

// writeFlush is a harness whose tasks write their block and then flush
// (or not, or with FUA), as the template's %s says.
const writeFlush = `/*
 * Device: cache+fua
 * Models: SC, LKMM
 */
#include <flushproof/kernel.h>

static struct block_device bdev;
static int sel;

static int write_block(struct block_device *bdev, long block, long val, blk_opf_t flags)
{
	struct bio bio;

	bio_init(&bio, bdev, NULL, 0, REQ_OP_WRITE | flags);
	bio.bi_iter.bi_sector = block;
	bio.bi_iter.bi_size = 4096;
	bio.bi_flushproof_value = val;
	return submit_bio_wait(&bio);
}

static void writer(int b)
{
	%s
}

void harness(void)
{
	spawn(writer, 0);
	spawn(writer, 1);
}
`

// rangeSwitch is a writer's body that flushes when the switch on sel
// takes the case range rng.
func rangeSwitch(sel, rng string) string {
	return fmt.Sprintf(`int err = write_block(&bdev, b, 1, 0);

	WRITE_ONCE(sel, b);
	switch (%s) {
	case %s:
		err = err ? err : blkdev_issue_flush(&bdev);
		break;
	default:
		break;
	}
	if (!err)
		assert_durable(b, 1);`, sel, rng)
}

func TestVerdicts(t *testing.T) {
	cases := []struct {
		name string
		body string
		want verdict.Outcome
	}{
		{"write then flush", `if (write_block(&bdev, b, 1, 0) == 0 && blkdev_issue_flush(&bdev) == 0)
		assert_durable(b, 1);`, verdict.Safe},
		{"write without a flush", `if (write_block(&bdev, b, 1, 0) == 0)
		assert_durable(b, 1);`, verdict.Unsafe},
		{"FUA write", `if (write_block(&bdev, b, 1, REQ_FUA) == 0)
		assert_durable(b, 1);`, verdict.Safe},
		{"an empty PREFLUSH bio is a flush", `struct bio flush;
	int err = write_block(&bdev, b, 1, 0);

	bio_init(&flush, &bdev, NULL, 0, REQ_OP_WRITE | REQ_PREFLUSH);
	if (!err && !submit_bio_wait(&flush))
		assert_durable(b, 1);`, verdict.Safe},
		{"goto to the error path skips the flush", `int err = write_block(&bdev, b, 1, 0);

	if (err)
		goto out;
	goto out;
	err = blkdev_issue_flush(&bdev);
out:
	if (!err)
		assert_durable(b, 1);`, verdict.Unsafe},
		{"switch picks the flush", `int err = write_block(&bdev, b, 1, 0);

	switch (b) {
	case 0:
	case 1:
		err = err ? err : blkdev_issue_flush(&bdev);
		break;
	default:
		return;
	}
	if (!err)
		assert_durable(b, 1);`, verdict.Safe},
		{"switch falls to the case without a flush", `int err = write_block(&bdev, b, 1, 0);

	switch (b) {
	case 0:
		err = err ? err : blkdev_issue_flush(&bdev);
		break;
	default:
		break;
	}
	if (!err)
		assert_durable(b, 1);`, verdict.Unsafe},
		{"a case range, and a label inside a case", `int err = write_block(&bdev, b, 1, 0);
	int tries = 0;

	switch (b) {
	case 0 ... 1:
again:
		tries++;
		if (tries < 2)
			goto again;
		err = err ? err : blkdev_issue_flush(&bdev);
		break;
	default:
		break;
	}
	if (!err)
		assert_durable(b, 1);`, verdict.Safe},
		{"a case range that leaves one task out", rangeSwitch("b", "0 ... 0"), verdict.Unsafe},
		{"a case range on a value read at run time", rangeSwitch("READ_ONCE(sel)", "0 ... 1"), verdict.Safe},
		{"a run-time value outside the case range", rangeSwitch("READ_ONCE(sel)", "-5 ... 0"), verdict.Unsafe},
		{"a loop of two rounds", `int round;

	for (round = 1; round <= 2; round++) {
		if (write_block(&bdev, b, round, REQ_FUA))
			continue;
		assert_durable(b, round);
	}`, verdict.Safe},
		{"do-while reads its condition after the body", `int round = 0;

	do {
		round++;
		if (write_block(&bdev, b, round, 0) == 0)
			assert_durable(b, round);
	} while (round < 2);`, verdict.Unsafe},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := verdicts(t, fmt.Sprintf(writeFlush, c.body))
			require.NotEmpty(t, got)
			for cfg, o := range got {
				assert.Equal(t, c.want, o, cfg)
			}
		})
	}
}

// flagHarness: one task sets data then a flag, the other waits for the
// flag and asserts the data, in the shape of message passing; %s are the
// writer's and the reader's orderings.
const flagHarness = `/*
 * Device: no-cache
 * Crash: none
 * Models: SC, TSO, LKMM
 */
#include <flushproof/kernel.h>

struct shared {
	int data;
	int flag;
	atomic_t count;
};
static struct shared s;

static inline void publish(struct shared *p, int v)
{
	WRITE_ONCE(p->data, v);
	%s
}

static void writer(void)
{
	publish(&s, 1);
}

static void reader(void)
{
	int f = %s;
	int d = READ_ONCE(s.data);

	if (f)
		assert(d == 1);
}

void harness(void)
{
	spawn(writer);
	spawn(reader);
}
`

// TestMemoryOrdering holds the front end's marked accesses to the memory
// models: message passing with release/acquire is SAFE everywhere, with
// plain marked accesses UNSAFE under LKMM only.
func TestMemoryOrdering(t *testing.T) {
	release := fmt.Sprintf(flagHarness, "smp_store_release(&p->flag, 1);", "smp_load_acquire(&s.flag)")
	for cfg, o := range verdicts(t, release) {
		assert.Equal(t, verdict.Safe, o, "release/acquire %s", cfg)
	}
	once := fmt.Sprintf(flagHarness, "WRITE_ONCE(p->flag, 1);", "READ_ONCE(s.flag)")
	got := verdicts(t, once)
	assert.Equal(t, verdict.Safe, got["SC no-cache"])
	assert.Equal(t, verdict.Safe, got["TSO no-cache"])
	assert.Equal(t, verdict.Unsafe, got["LKMM no-cache"])
	fenced := fmt.Sprintf(flagHarness, "smp_wmb(); WRITE_ONCE(p->flag, 1);", "READ_ONCE(s.flag); smp_rmb()")
	_ = fenced // smp_rmb after the read of the flag: written below as its own case
	rmb := strings.Replace(fmt.Sprintf(flagHarness, "smp_wmb(); WRITE_ONCE(p->flag, 1);", "READ_ONCE(s.flag)"),
		"int d = READ_ONCE(s.data);", "int d;\n\n\tsmp_rmb();\n\td = READ_ONCE(s.data);", 1)
	for cfg, o := range verdicts(t, rmb) {
		assert.Equal(t, verdict.Safe, o, "wmb/rmb %s", cfg)
	}
	// try_cmpxchg: a counter raised to a maximum by a compare-and-swap
	// loop.
	casLoop := casLoopHarness
	for cfg, o := range verdicts(t, casLoop) {
		assert.Equal(t, verdict.Safe, o, "cmpxchg max %s", cfg)
	}
	// The same with a plain store instead of the loop loses the max.
	lost := strings.Replace(casLoop, "while (old < seq && !atomic64_try_cmpxchg(&completed, &old, seq))\n\t\t;", "atomic64_set(&completed, seq);", 1)
	require.NotEqual(t, casLoop, lost)
	for cfg, o := range verdicts(t, lost) {
		assert.Equal(t, verdict.Unsafe, o, "plain store %s", cfg)
	}
}

// casLoopHarness raises a counter to a maximum by a compare-and-swap
// loop, as xfs_buftarg_flush_done() does.
const casLoopHarness = `/*
 * Device: no-cache
 * Crash: none
 * Models: SC, LKMM
 */
#include <flushproof/kernel.h>

static atomic64_t completed;

static void raise_to(s64 seq)
{
	s64 old = atomic64_read(&completed);

	while (old < seq && !atomic64_try_cmpxchg(&completed, &old, seq))
		;
}

static void task(int seq)
{
	s64 v;

	raise_to(seq);
	v = atomic64_read(&completed);
	assert(v >= seq);
}

void harness(void)
{
	spawn(task, 1);
	spawn(task, 2);
}
`

// TestCompletionsAndLocks: a completion orders a waiter after complete(),
// a spin lock makes a read-modify-write of two plain accesses atomic.
func TestCompletionsAndLocks(t *testing.T) {
	src := `/*
 * Device: no-cache
 * Crash: none
 */
#include <flushproof/kernel.h>

struct counter {
	spinlock_t lock;
	int n;
	struct completion done;
};
static struct counter c;

static void add(struct counter *p)
{
	unsigned long flags;

	spin_lock_irqsave(&p->lock, flags);
	p->n = p->n + 1;
	spin_unlock_irqrestore(&p->lock, flags);
}

static void adder(void)
{
	add(&c);
	complete(&c.done);
}

static void waiter(void)
{
	add(&c);
	wait_for_completion(&c.done);
	assert(READ_ONCE(c.n) == 2);
}

void harness(void)
{
	spawn(adder);
	spawn(waiter);
}
`
	for cfg, o := range verdicts(t, src) {
		assert.Equal(t, verdict.Safe, o, cfg)
	}
	unlocked := strings.Replace(strings.Replace(src, "spin_lock_irqsave(&p->lock, flags);", "", 1), "spin_unlock_irqrestore(&p->lock, flags);", "", 1)
	got := verdicts(t, unlocked)
	assert.Equal(t, verdict.Unsafe, got["SC no-cache"], "a lost update without the lock")
}

var errAt = regexp.MustCompile(`^h\.c:(\d+):(\d+): `)

// TestParseErrors: what the front end cannot resolve or express is an
// error at the file's line and column.
func TestParseErrors(t *testing.T) {
	head := "/*\n * Device: cache+fua\n */\n#include <flushproof/kernel.h>\n"
	tail := "\nvoid harness(void)\n{\n\tspawn(task, 0);\n}\n"
	cases := []struct {
		name, body string
		line       int // of the error, in the whole file
		msg        string
	}{
		{"undefined function", "static void task(int b)\n{\n\tfoo(b);\n}\n", 7, "foo() is neither defined in the file nor a primitive"},
		{"misspelt primitive", "static void task(int b)\n{\n\tatomic64_inc_retrun(NULL);\n}\n", 7, "atomic64_inc_retrun"},
		{"recursion", "static int f(int n)\n{\n\treturn f(n);\n}\nstatic void task(int b)\n{\n\tf(b);\n}\n", 7, "calls itself"},
		{"index at run time", "static atomic_t a[2];\nstatic void task(int b)\n{\n\tatomic_inc(&a[b]);\n}\n", 8, "an element chosen at run time"},
		{"pointer to two objects", "static atomic_t x, y;\nstatic void task(int b)\n{\n\tatomic_t *p = &x;\n\n\tif (b)\n\t\tp = &y;\n\tatomic_inc(p);\n}\n", 12, "p points to &x or &y, by the path taken"},
		{"pointer changed in a loop", "static atomic_t x, y;\nstatic void task(int b)\n{\n\tatomic_t *p = &x;\n\tint i;\n\n\tfor (i = 0; i < 2; i++) {\n\t\tatomic_inc(p);\n\t\tp = &y;\n\t}\n}\n", 11, "in this loop p points to &x, then to &y"},
		{"completion in a local", "static void task(int b)\n{\n\tstruct completion c;\n\n\tcomplete(&c);\n}\n", 9, "a local"},
		{"asynchronous bio", "static void task(int b)\n{\n\tstruct bio bio;\n\n\tbio_init(&bio, NULL, NULL, 0, REQ_OP_WRITE);\n\tsubmit_bio(&bio);\n}\n", 10, "submit_bio"},
		{"syntax error", "static void task(int b)\n{\n\tb = ;\n}\n", 7, ""},
		{"undeclared name", "static void task(int b)\n{\n\tb = c;\n}\n", 7, "c"},
		{"spawn outside harness", "static void task(int b)\n{\n\tspawn(task, 1);\n}\n", 7, "belongs in harness()"},
		{"pointer stored to shared memory", "struct s { atomic_t *p; };\nstatic struct s g;\nstatic atomic_t x;\nstatic void task(int b)\n{\n\tg.p = &x;\n}\n", 10, "pointer stored to shared memory"},
		{"fetch_or not modelled", "static atomic_t x;\nstatic void task(int b)\n{\n\tatomic_fetch_or(1, &x);\n}\n", 8, "atomic_fetch_or"},
		{"wait_event on a local", "static wait_queue_head_t wq;\nstatic void task(int b)\n{\n\twait_event(wq, b == 1);\n}\n", 8, "wait_event condition must read shared memory"},
		{"non-constant bio flags", "static struct block_device bdev;\nstatic void task(int b)\n{\n\tstruct bio bio;\n\n\tbio_init(&bio, &bdev, NULL, 0, b);\n\tbio.bi_iter.bi_size = 1;\n\tsubmit_bio_wait(&bio);\n}\n", 12, "bi_opf"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := kernelc.Parse("h.c", []byte(head+c.body+tail))
			require.Error(t, err)
			var le *litmus.Error
			require.ErrorAs(t, err, &le, "%v", err)
			m := errAt.FindStringSubmatch(err.Error())
			require.NotNil(t, m, "no file:line:col in %q", err)
			assert.Equal(t, fmt.Sprint(c.line), m[1], "%v", err)
			assert.NotEqual(t, "0", m[2], "%v", err)
			assert.Contains(t, err.Error(), c.msg)
		})
	}
	// No harness(), and a header key misspelt.
	_, err := kernelc.Parse("h.c", []byte(head+"static void task(void) { }\n"))
	assert.ErrorContains(t, err, "no harness() function")
	_, err = kernelc.Parse("h.c", []byte("/*\n * Expcet: unsafe\n */\n"+head+"static void task(int b) { }\n"+tail))
	assert.ErrorContains(t, err, "h.c:2:4: unknown header key Expcet")
}

func TestSections(t *testing.T) {
	src := "/* header */\n/* flushproof: harness */\nint a;\n/* flushproof: fs/xfs/xfs_buf.c */\nint b;\nint c;\n/* flushproof: harness */\nint d;\n/* flushproof: fs/xfs/xfs_file.c */\nint e;\n"
	got := kernelc.Sections([]byte(src))
	require.Len(t, got, 2)
	assert.Equal(t, "fs/xfs/xfs_buf.c", got[0].Path)
	assert.Equal(t, 5, got[0].First)
	assert.Equal(t, 6, got[0].Last)
	assert.Equal(t, "fs/xfs/xfs_file.c", got[1].Path)
	assert.Equal(t, 10, got[1].First)
	assert.Equal(t, 10, got[1].Last)
}

// journal is a harness whose task writes a data block and then a commit
// block with the flags %s; recovery() replays the data only when the
// commit block is there, as jbd2's do_one_pass() does.
const journal = `/*
 * Device: cache+fua, cache+emulated-fua
 */
#include <flushproof/kernel.h>

static struct block_device bdev;

static int write_block(long block, long val, blk_opf_t flags)
{
	struct bio bio;

	bio_init(&bio, &bdev, NULL, 0, REQ_OP_WRITE | flags);
	bio.bi_iter.bi_sector = block;
	bio.bi_iter.bi_size = 4096;
	bio.bi_flushproof_value = val;
	return submit_bio_wait(&bio);
}

static void commit(void)
{
	if (write_block(0, 7, 0))
		return;
	write_block(1, 1, %s);
}

void harness(void)
{
	spawn(commit);
}

void recovery(void)
{
	int i;
	long data[2];

	for (i = 0; i < 2; i++)
		data[i] = read_block(&bdev, i);
	if (data[1] == 1)
		assert(data[0] == 7);
}
`

// TestRecovery: recovery() runs on every crash image; the commit block
// needs its PREFLUSH (the data block may still be in the cache).
func TestRecovery(t *testing.T) {
	for cfg, o := range verdicts(t, fmt.Sprintf(journal, "REQ_PREFLUSH | REQ_FUA")) {
		assert.Equal(t, verdict.Safe, o, "with the preflush %s", cfg)
	}
	got := verdicts(t, fmt.Sprintf(journal, "REQ_FUA"))
	require.Len(t, got, 6)
	for cfg, o := range got {
		assert.Equal(t, verdict.Unsafe, o, "without the preflush %s", cfg)
	}
	// The counterexample is the recovery's assert, with the image.
	tt, err := kernelc.Parse("h.c", []byte(fmt.Sprintf(journal, "REQ_FUA")))
	require.NoError(t, err)
	d, err := durable.Read("h.c", tt)
	require.NoError(t, err)
	v, err := d.Rows(nil, false)[0].Check(explore.Options{})
	require.NoError(t, err)
	require.NotNil(t, v.Violation)
	assert.ErrorIs(t, v.Violation.Err, durable.ErrRecovery)
	assert.Contains(t, v.Violation.Err.Error(), "blk0=0 blk1=1")
}

// TestRecoveryRefuses: recovery() runs alone after the crash.
func TestRecoveryRefuses(t *testing.T) {
	base := fmt.Sprintf(journal, "REQ_PREFLUSH | REQ_FUA")
	cases := []struct{ name, replace, with, msg string }{
		{"assert_durable", "assert(data[0] == 7);", "assert_durable(0, 7);", "assert_durable(), which speaks"},
		{"a store to memory", "int i;", "int i;\n\tstatic_store();", "WRITE_ONCE() is not allowed"},
		{"a wait", "int i;", "int i;\n\twait_for_completion(&done);", "a wait or a wake-up is not allowed"},
		{"Crash: none", " * Device:", " * Crash: none\n * Device:", "recovery() runs after a crash"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(base, c.replace, c.with, 1)
			src = strings.Replace(src, "static struct block_device bdev;", "static struct block_device bdev;\nstatic struct completion done;\nstatic int flag;\nstatic void static_store(void) { WRITE_ONCE(flag, 1); }", 1)
			require.NotEqual(t, base, src)
			tt, err := kernelc.Parse("h.c", []byte(src))
			if err == nil {
				_, err = durable.Read("h.c", tt)
			}
			require.Error(t, err)
			m := errAt.FindStringSubmatch(err.Error())
			require.NotNil(t, m, "no file:line:col in %q", err)
			assert.Contains(t, err.Error(), c.msg)
		})
	}
}

// TestPointersFlow: a pointer is resolved along the code: given another
// object in straight-line code, set to NULL after use, not used where it
// is dead; code no path reaches is not lowered; a label only forward
// gotos reach keeps what is known; a local named like a function is the
// local; a function may return NULL.
func TestPointersFlow(t *testing.T) {
	src := `/*
 * Device: no-cache
 * Crash: none
 * Models: SC
 */
#include <flushproof/kernel.h>

struct s { int f; atomic_t *a; };
static atomic_t x, y;

static void set(struct s *p)
{
	if (!p)
		return;
	p->f = 1;
}

static struct s *none(void)
{
	return NULL;
}

static void map_bh(struct s *p) { }

static void task(int b)
{
	struct s map_bh = { .a = &x };
	struct s *q = none();
	int k = 0;

	atomic_inc(map_bh.a);
	map_bh.a = NULL;
	map_bh.a = &y;
	atomic_inc(map_bh.a);
	set(q);
	set(&map_bh);
	if (b)
		goto out;
	k = 0;
out:
	if (k)
		q->f = 2;
	assert(map_bh.f == 1);
	assert(atomic_read(&x) == 1 && atomic_read(&y) == 1);
}

void harness(void)
{
	spawn(task, 0);
}
`
	for cfg, o := range verdicts(t, src) {
		assert.Equal(t, verdict.Safe, o, cfg)
	}
}

// TestBool: a value stored to a bool, passed as one or returned as one is
// 0 or 1, as C converts it.
func TestBool(t *testing.T) {
	src := `/*
 * Device: no-cache
 * Crash: none
 * Models: SC
 */
#include <flushproof/kernel.h>

static atomic_t x = ATOMIC_INIT(5);

static bool nonzero(int v) { return v; }
static int id(bool b) { return b; }

static void task(void)
{
	bool b = atomic_read(&x);
	int n = atomic_read(&x);

	assert(b == 1);
	assert(nonzero(n) == 1);
	assert(id(n) == 1);
	assert((bool)n + (bool)n == 2);
}

void harness(void)
{
	spawn(task);
}
`
	for cfg, o := range verdicts(t, src) {
		assert.Equal(t, verdict.Safe, o, cfg)
	}
}

// TestBitops: test_and_set_bit as a lock of one bit (a second taker sees
// it set), clear_bit_unlock releasing it: mutual exclusion over a plain
// counter; with set_bit (no test) two tasks both enter. Under LKMM the
// read of the word before its compare-and-swap, then the store to the
// counter, is the load-buffering shape memory.LKMM refuses: an error.
func TestBitops(t *testing.T) {
	src := `/*
 * Device: no-cache
 * Crash: none
 * Models: SC, TSO
 */
#include <flushproof/kernel.h>

#define BUSY 2
static unsigned long flags;
static int inside;

static void task(void)
{
	if (test_and_set_bit_lock(BUSY, &flags))
		return;
	inside = inside + 1;
	assert(inside == 1);
	inside = inside - 1;
	clear_bit_unlock(BUSY, &flags);
}

void harness(void)
{
	spawn(task);
	spawn(task);
}
`
	for cfg, o := range verdicts(t, src) {
		assert.Equal(t, verdict.Safe, o, cfg)
	}
	racy := strings.Replace(src, "if (test_and_set_bit_lock(BUSY, &flags))\n\t\treturn;", "set_bit(BUSY, &flags);", 1)
	require.NotEqual(t, src, racy)
	for cfg, o := range verdicts(t, racy) {
		assert.Equal(t, verdict.Unsafe, o, cfg)
	}
	tt, err := kernelc.Parse("h.c", []byte(strings.Replace(src, "Models: SC, TSO", "Models: LKMM", 1)))
	require.NoError(t, err)
	d, err := durable.Read("h.c", tt)
	require.NoError(t, err)
	_, err = d.Rows(nil, false)[0].Check(explore.Options{})
	assert.ErrorContains(t, err, "could not run the thread ahead of that load here")
}

// TestLoweringKeeps: what the lowering keeps known and what it lets
// through. A flag set before a loop the loop does not change is still a
// constant inside it (a bio's flags must be known at its submission); a
// constant too big for a register is fine while it is known, and an
// error where it is read unknown; a lock in a local is taken by its task
// alone; c ? f() : (void)0 is a statement; a function inlined at many
// calls names its registers once.
func TestLoweringKeeps(t *testing.T) {
	body := `int flags = REQ_FUA;
	long big = 1 << 20;
	spinlock_t lock;
	int i;

	spin_lock(&lock);
	for (i = 0; i < 2; i++) {
		if (big & (1 << 20))
			write_block(&bdev, b, i + 1, flags);
	}
	spin_unlock(&lock);
	b ? write_block(&bdev, b, 3, flags) : (void)0;
	write_block(&bdev, b, 4, flags);
	write_block(&bdev, b, 5, flags);
	write_block(&bdev, b, 6, flags);
	write_block(&bdev, b, 7, flags);
	assert_durable(b, 7);`
	for cfg, o := range verdicts(t, fmt.Sprintf(writeFlush, body)) {
		assert.Equal(t, verdict.Safe, o, cfg)
	}
	unknown := strings.Replace(fmt.Sprintf(writeFlush, body), "if (big & (1 << 20))", "big = big + 0;\n\t\tif (big & (1 << 20))", 1)
	_, err := kernelc.Parse("h.c", []byte(unknown))
	assert.ErrorContains(t, err, "big was given a value beyond the -32768..32767 a register holds")
}

// TestLocalAtomics: an atomic_t in a local is its task's register: every
// operation computes on it, with the C results.
func TestLocalAtomics(t *testing.T) {
	src := `/*
 * Device: no-cache
 * Crash: none
 * Models: SC
 */
#include <flushproof/kernel.h>

static void task(void)
{
	atomic_t a = ATOMIC_INIT(3);
	int old = 3;

	assert(atomic_read(&a) == 3);
	assert(atomic_inc_return(&a) == 4);
	assert(atomic_fetch_add(2, &a) == 4);
	assert(atomic_xchg(&a, 1) == 6);
	assert(atomic_cmpxchg(&a, 0, 9) == 1 && atomic_read(&a) == 1);
	assert(!atomic_try_cmpxchg(&a, &old, 5) && old == 1);
	assert(atomic_try_cmpxchg(&a, &old, 5) && atomic_read(&a) == 5);
	assert(!atomic_dec_and_test(&a));
	atomic_set(&a, 1);
	assert(atomic_dec_and_test(&a));
}

void harness(void)
{
	spawn(task);
}
`
	got := verdicts(t, src)
	require.NotEmpty(t, got)
	for cfg, o := range got {
		assert.Equal(t, verdict.Safe, o, cfg)
	}
	wrong := strings.Replace(src, "atomic_fetch_add(2, &a) == 4", "atomic_fetch_add(2, &a) == 6", 1)
	for cfg, o := range verdicts(t, wrong) {
		assert.Equal(t, verdict.Unsafe, o, cfg)
	}
}

// TestUnwrittenFolded: a file-scope object no task writes is its initial
// value, not a location (nor a step); an acquire load of it keeps its
// step.
func TestUnwrittenFolded(t *testing.T) {
	src := `#include <flushproof/kernel.h>
struct opts { int barrier; int mode; };
static struct opts opts = { .barrier = 1, .mode = 2 };
static int flag;
static void task(void)
{
	if (READ_ONCE(opts.barrier) && opts.mode == 2 && smp_load_acquire(&flag) == 0)
		WRITE_ONCE(flag, 1);
}
void harness(void) { spawn(task); }
`
	tt, err := kernelc.Parse("h.c", []byte(src))
	require.NoError(t, err)
	assert.Equal(t, []string{"flag"}, tt.Locs)
	d, err := durable.Read("h.c", tt)
	require.NoError(t, err)
	require.NoError(t, d.Validate())
}

// TestStructCasts: a pointer cast to a struct C defines it for (the
// first member's type, a struct whose fields begin the object's) reads the
// right fields; a cast to an unrelated struct is refused, not read by the
// other struct's field names.
func TestStructCasts(t *testing.T) {
	src := `/*
 * Device: no-cache
 * Crash: none
 * Models: SC
 */
#include <flushproof/kernel.h>
struct h { int h_type; };
struct d { struct h d_header; int tag; };
struct e { int h_type; int other; };
static void task(void)
{
	struct d d = { .tag = 1 };
	struct e e = { .other = 2 };

	((struct h *)&d)->h_type = 5;
	((struct h *)&e)->h_type = 6;
	assert(d.d_header.h_type == 5 && d.tag == 1);
	assert(e.h_type == 6 && e.other == 2);
}
void harness(void) { spawn(task); }
`
	for cfg, o := range verdicts(t, src) {
		assert.Equal(t, verdict.Safe, o, cfg)
	}
	bad := strings.Replace(src, "struct e { int h_type; int other; };", "struct e { int other; int h_type; };", 1)
	_, err := kernelc.Parse("h.c", []byte(bad))
	assert.ErrorContains(t, err, "h.c:16:")
	assert.ErrorContains(t, err, "does not reinterpret an object as another type")
}

// TestCompoundLiterals: &(struct T){ ... } is an unnamed local made where
// it stands, its fields set as listed and the others zero.
func TestCompoundLiterals(t *testing.T) {
	src := `/*
 * Device: cache+fua
 * Models: SC
 */
#include <flushproof/kernel.h>

struct wreq {
	long block;
	long val;
	blk_opf_t flags;
};

static struct block_device bdev;

static int submit(struct wreq *r)
{
	struct bio bio;

	bio_init(&bio, &bdev, NULL, 0, REQ_OP_WRITE | r->flags);
	bio.bi_iter.bi_sector = r->block;
	bio.bi_iter.bi_size = 4096;
	bio.bi_flushproof_value = r->val;
	return submit_bio_wait(&bio);
}

static void writer(int b)
{
	if (submit(&(struct wreq){ %s }) == 0)
		assert_durable(b, 1);
}

void harness(void)
{
	spawn(writer, 0);
	spawn(writer, 1);
}
`
	for _, tc := range []struct {
		init string
		want verdict.Outcome
	}{
		{".block = b, .val = 1, .flags = REQ_FUA", verdict.Safe},
		{".block = b, .val = 1", verdict.Unsafe}, // flags zero: no FUA
		{"b, 1, REQ_FUA", verdict.Safe},
	} {
		for cfg, got := range verdicts(t, fmt.Sprintf(src, tc.init)) {
			assert.Equal(t, tc.want, got, "%s on %s", tc.init, cfg)
		}
	}

	_, err := kernelc.Parse("h.c", []byte(fmt.Sprintf(src, ".block = b, .val = 1, .nope = 2")))
	assert.ErrorContains(t, err, "h.c:28:51: type struct wreq {block long; val long; flags blk_opf_t} has no member nope")
}

// multiBlock is a harness whose task writes blocks 0 and 1 with one bio of
// bi_size %s and flags %s, then (if it succeeded) asserts both durable
// when %s; recovery() asserts the two blocks agree (%s).
const multiBlock = `/*
 * Device: cache+fua, no-cache
 * Models: SC
 */
#include <flushproof/kernel.h>

static struct block_device bdev;

static void writer(void)
{
	struct bio bio;

	bio_init(&bio, &bdev, NULL, 0, REQ_OP_WRITE | %s);
	bio.bi_iter.bi_sector = 0;
	bio.bi_iter.bi_size = %s;
	bio.bi_flushproof_value = 5;
	if (submit_bio_wait(&bio) == 0 && %s) {
		assert_durable(0, 5);
		assert_durable(1, 5);
	}
}

void harness(void)
{
	spawn(writer);
}

void recovery(void)
{
	long b0 = read_block(&bdev, 0);
	long b1 = read_block(&bdev, 1);

	assert(%s);
}
`

// TestMultiBlockBios: a bio of bi_size 2 * 4096 writes two blocks as one
// write: a FUA write makes both durable, a plain one neither (cache+fua),
// and a crash may keep one block and not the other (a torn write), which
// no device configuration rules out while the write is in flight.
func TestMultiBlockBios(t *testing.T) {
	for _, tc := range []struct {
		name, flags, size, durable, agree string
		want                              map[string]verdict.Outcome
	}{
		{"FUA: both durable", "REQ_FUA", "2 * 4096", "1", "1",
			map[string]verdict.Outcome{"SC cache+fua": verdict.Safe, "SC no-cache": verdict.Safe}},
		{"no FUA: neither", "0", "8192", "1", "1",
			map[string]verdict.Outcome{"SC cache+fua": verdict.Unsafe, "SC no-cache": verdict.Safe}},
		{"the second block is written too", "REQ_FUA", "8192", "1", "b0 == 0 || b1 == 5",
			map[string]verdict.Outcome{"SC cache+fua": verdict.Unsafe, "SC no-cache": verdict.Unsafe}},
		{"a crash tears it", "REQ_FUA", "8192", "0", "b0 == b1",
			map[string]verdict.Outcome{"SC cache+fua": verdict.Unsafe, "SC no-cache": verdict.Unsafe}},
		{"one block: the other stays 0", "REQ_FUA", "4096", "0", "b1 == 0",
			map[string]verdict.Outcome{"SC cache+fua": verdict.Safe, "SC no-cache": verdict.Safe}},
	} {
		got := verdicts(t, fmt.Sprintf(multiBlock, tc.flags, tc.size, tc.durable, tc.agree))
		assert.Equal(t, tc.want, got, tc.name)
	}
	for _, size := range []string{"4095", "9 * 4096", "-4096"} {
		_, err := kernelc.Parse("h.c", []byte(fmt.Sprintf(multiBlock, "0", size, "1", "1")))
		assert.ErrorContains(t, err, "h.c:17:6:", size)
		assert.ErrorContains(t, err, "a bio writes whole blocks", size)
	}
}

// TestCalleeWritesCallersLocal: a function that writes its caller's local
// through a pointer writes the caller's register, which stays the
// caller's when the function returns: a later call with a local of the
// same name must not take it (it did: the assert below failed), and what
// the function set stays known (a bio set up by a helper can be
// submitted).
func TestCalleeWritesCallersLocal(t *testing.T) {
	clobber := `/*
 * Device: cache+fua
 * Models: SC
 */
#include <flushproof/kernel.h>

struct req { int x; int y; };
static int out;

static void fill(struct req *r, int v)
{
	r->x = v;
}

static int g(void)
{
	struct req r;

	r.x = READ_ONCE(out) + 9;
	return r.x;
}

static void task(int v)
{
	struct req r;

	fill(&r, v);
	WRITE_ONCE(out, g());
	assert(r.x == v);
}

void harness(void)
{
	spawn(task, 3);
}
`
	assert.Equal(t, map[string]verdict.Outcome{"SC cache+fua": verdict.Safe}, verdicts(t, clobber))

	prep := `/*
 * Device: cache+fua
 * Models: SC
 */
#include <flushproof/kernel.h>

static struct block_device bdev;

static void prep(struct bio *bio, int b)
{
	bio_init(bio, &bdev, NULL, 0, REQ_OP_WRITE | %s);
	bio->bi_iter.bi_sector = b;
	bio->bi_iter.bi_size = 4096;
	bio->bi_flushproof_value = 1;
}

static void task(int b)
{
	struct bio bio;

	prep(&bio, b);
	if (submit_bio_wait(&bio) == 0)
		assert_durable(b, 1);
}

void harness(void)
{
	spawn(task, 0);
	spawn(task, 1);
}
`
	assert.Equal(t, map[string]verdict.Outcome{"SC cache+fua": verdict.Safe}, verdicts(t, fmt.Sprintf(prep, "REQ_FUA")))
	assert.Equal(t, map[string]verdict.Outcome{"SC cache+fua": verdict.Unsafe}, verdicts(t, fmt.Sprintf(prep, "0")))
}
