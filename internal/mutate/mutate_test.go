package mutate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSetOneAtATime(t *testing.T) {
	require.Equal(t, None, Active())
	for _, m := range All() {
		assert.False(t, On(m), "%v before Set", m)
		restore := Set(t, m)
		assert.True(t, On(m), "%v", m)
		assert.Equal(t, m, Active())
		for _, o := range All() {
			if o != m {
				assert.False(t, On(o), "%v while %v is on", o, m)
			}
		}
		other := FenceWeak
		if m == FenceWeak {
			other = RMWStale
		}
		assert.Panics(t, func() { Set(t, other) }, "a second mutation")
		restore()
		assert.False(t, On(m), "%v after restore", m)
	}
	assert.False(t, On(None))
}

func TestNames(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range All() {
		s := m.String()
		assert.False(t, seen[s], "two mutations named %q", s)
		seen[s] = true
		p, err := Parse(s)
		require.NoError(t, err)
		assert.Equal(t, m, p)
	}
	_, err := Parse("no-such")
	assert.Error(t, err)
}
