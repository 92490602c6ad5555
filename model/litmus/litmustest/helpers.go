package litmustest

import (
	"fmt"
	"testing"

	"github.com/flushproof/flushproof/model/litmus"
)

// MustParse parses src as t.litmus, failing the test if it does not parse.
func MustParse(t testing.TB, src string) *litmus.Test {
	t.Helper()
	tt, err := litmus.Parse("t.litmus", []byte(src))
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	return tt
}

// Two builds a two-thread test over x, y, an atomic v and a lock l, with
// the bodies p0 and p1 and the final condition cond.
func Two(cond, p0, p1 string) string {
	return fmt.Sprintf("C T\n{}\nP0(int *x, int *y, atomic_t *v, spinlock_t *l)\n{\n%s\n}\nP1(int *x, int *y, atomic_t *v, spinlock_t *l)\n{\n%s\n}\n%s\n", p0, p1, cond)
}
