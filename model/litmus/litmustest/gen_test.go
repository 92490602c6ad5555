package litmustest

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/flushproof/flushproof/model/litmus"
)

// TestDrawWithinOptions: a drawn test keeps to its options, and every store
// of a constant (not an add) writes a value no other store writes.
func TestDrawWithinOptions(t *testing.T) {
	o := Default() // Values 0: every store's constant its own
	allowed := map[litmus.Op]bool{}
	for _, op := range o.Ops {
		allowed[op] = true
	}
	rapid.Check(t, func(t *rapid.T) {
		test := Draw(t, o)
		if n := len(test.Threads); n < o.MinThreads || n > o.MaxThreads {
			t.Fatalf("%d threads", n)
		}
		seen := map[int64]bool{}
		var walk func([]litmus.Stmt)
		walk = func(body []litmus.Stmt) {
			for _, s := range body {
				switch {
				case s.If != nil:
					walk(s.If.Then)
					walk(s.If.Else)
				case s.Access != nil:
					a := s.Access
					if !allowed[a.Op] {
						t.Fatalf("%v not in the options", a.Op)
					}
					if a.Op.Info().Writes && a.Val.IsConst && !a.Op.IsRMW() {
						if seen[a.Val.Const] {
							t.Fatalf("two stores of %d", a.Val.Const)
						}
						seen[a.Val.Const] = true
					}
				}
			}
		}
		for _, th := range test.Threads {
			walk(th.Body)
		}
	})
}
