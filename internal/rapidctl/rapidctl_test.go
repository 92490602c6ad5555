package rapidctl

import (
	"regexp"
	"strconv"
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
	// The replay fails the same way (how far rapid shrinks is rapid's
	// business, and not always to the minimum: its shrinker is bounded).
	m := regexp.MustCompile(`x = (\d+) is too big`).FindStringSubmatch(f.Output)
	if assert.NotNil(t, m, "the replay must fail with the property's message:\n%s", f.Output) {
		x, err := strconv.Atoi(m[1])
		assert.NoError(t, err)
		assert.Greater(t, x, 500)
	}
}

func TestExpectReportsAPropertyThatHolds(t *testing.T) {
	rec := run(t, "holds", map[string]string{"rapid.checks": "50", "rapid.nofailfile": "true"}, func(t *rapid.T) {
		_ = rapid.Int().Draw(t, "x")
	})
	assert.False(t, rec.Failed(), "a property that holds must not be reported as caught")
}
