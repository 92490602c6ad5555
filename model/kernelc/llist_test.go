package kernelc_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/kernelc"
	"github.com/flushproof/flushproof/model/verdict"
)

// llistOrder is a harness whose task adds three items to an llist in
// order, takes the list (%s: reversed or not) and numbers the items in
// the order the loop visits them; the assertion is %s.
const llistOrder = `/*
 * Device: cache+fua
 * Models: SC
 */
#include <flushproof/kernel.h>

struct item {
	int pos;
	struct llist_node node;
};

static struct item items[3];
static LLIST_HEAD(head);

static void task(void)
{
	struct llist_node *list;
	struct item *it;
	int n = 0;

	llist_add(&items[0].node, &head);
	llist_add(&items[1].node, &head);
	llist_add(&items[2].node, &head);
	list = llist_del_all(&head);
	%s
	llist_for_each_entry(it, list, node) {
		it->pos = n;
		n++;
	}
	assert(%s);
}

void harness(void)
{
	spawn(task);
}
`

// TestLlistOrder: llist_del_all gives the newest node first, and
// llist_reverse_order the oldest first, as lib/llist.c does.
func TestLlistOrder(t *testing.T) {
	for _, tc := range []struct {
		reverse, cond string
		want          verdict.Outcome
	}{
		{"", "items[2].pos == 0 && items[1].pos == 1 && items[0].pos == 2", verdict.Safe},
		{"", "items[0].pos == 0", verdict.Unsafe},
		{"list = llist_reverse_order(list);", "items[0].pos == 0 && items[1].pos == 1 && items[2].pos == 2", verdict.Safe},
		{"list = llist_reverse_order(list);", "items[2].pos == 0", verdict.Unsafe},
	} {
		assert.Equal(t, map[string]verdict.Outcome{"SC cache+fua": tc.want}, verdicts(t, fmt.Sprintf(llistOrder, tc.reverse, tc.cond)), "%s %s", tc.reverse, tc.cond)
	}
}

// TestLlistFlushDaemon: tasks queue their request on an llist after their
// write and a daemon flushes for everything it took off the list, then
// marks those requests done. Marking them done before the flush is the
// mutant the check must catch; adding a request twice corrupts the list
// and fails.
func TestLlistFlushDaemon(t *testing.T) {
	src, err := os.ReadFile("testdata/llist-flush.c")
	require.NoError(t, err)
	done := "llist_for_each_entry_safe(req, tmp, list, node) {\n\t\t\tsmp_store_release(&req->done, 1);\n\t\t\twake_up(&wq);\n\t\t}"
	for _, tc := range []struct {
		name, early, late string
		want              verdict.Outcome
	}{
		{"done after the flush", "", done, verdict.Safe},
		{"done before the flush", done, "", verdict.Unsafe},
	} {
		got := verdicts(t, strings.NewReplacer("/* EARLY */", tc.early, "/* LATE */", tc.late).Replace(string(src)))
		for cfg, o := range got {
			assert.Equal(t, tc.want, o, "%s on %s", tc.name, cfg)
		}
		assert.Len(t, got, 3, tc.name)
	}
	twice := strings.NewReplacer("/* LATE */", done, "\tllist_add(&rq->node, &pending);\n", "\tllist_add(&rq->node, &pending);\n\tllist_add(&rq->node, &pending);\n").Replace(string(src))
	for cfg, o := range verdicts(t, twice) {
		assert.Equal(t, verdict.Unsafe, o, "a node added twice on %s", cfg)
	}
}

// TestLlistLimits: what an llist here cannot hold is refused at the line.
func TestLlistLimits(t *testing.T) {
	src := fmt.Sprintf(llistOrder, "", "1")
	_, err := kernelc.Parse("h.c", []byte(strings.Replace(src, "items[3]", "items[4]", 1)))
	assert.ErrorContains(t, err, "4 file-scope objects of struct item, which an llist may hold: the checker keeps an llist as a stack of at most 3")
	_, err = kernelc.Parse("h.c", []byte(strings.Replace(src, "\tllist_add(&items[0].node, &head);\n", "\tstruct item mine;\n\tllist_add(&mine.node, &head);\n", 1)))
	assert.ErrorContains(t, err, "the node must be the struct llist_node field of a file-scope object")
	// A pointer the body sets would point to another object each pass.
	_, err = kernelc.Parse("h.c", []byte(strings.Replace(strings.Replace(src, "\tint n = 0;\n", "\tint n = 0;\n\tstruct item *last = &items[0];\n", 1),
		"\t\tn++;\n", "\t\tn++;\n\t\tlast = it;\n", 1)))
	assert.ErrorContains(t, err, "in this loop last points to &items[0], then to &items[1]")
}
