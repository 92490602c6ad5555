package rapidctl

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"pgregory.net/rapid"
)

func TestExpectCatchesAndReplays(t *testing.T) {
	f := Expect(t, 1000, func(t *rapid.T) {
		x := rapid.IntRange(0, 1000).Draw(t, "x")
		if x > 500 {
			t.Fatalf("x = %d is too big", x)
		}
	})
	assert.NotEmpty(t, f.Seed)
	assert.Contains(t, f.Output, "x = 501 is too big", "rapid shrinks to the smallest failing x")
}

func TestExpectReportsAPropertyThatHolds(t *testing.T) {
	rec := run(t, "holds", map[string]string{"rapid.checks": "50", "rapid.nofailfile": "true"}, func(t *rapid.T) {
		_ = rapid.Int().Draw(t, "x")
	})
	assert.False(t, rec.Failed(), "a property that holds must not be reported as caught")
}
