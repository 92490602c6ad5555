package memory

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLitmusSCOutcomes: under SC, MP has exactly the three interleaving
// outcomes; a check that Outcomes explores every execution.
func TestLitmusSCOutcomes(t *testing.T) {
	got, err := Litmus{Model: SC, Threads: [2][]LitmusOp{
		{{Kind: LitStore, Loc: 0, Val: 1}, {Kind: LitStore, Loc: 1, Val: 1}},
		{{Kind: LitLoad, Loc: 1, Reg: 0}, {Kind: LitLoad, Loc: 0, Reg: 1}},
	}}.Outcomes(2)
	require.NoError(t, err)
	assert.Equal(t, []string{"r0=0 r1=0", "r0=0 r1=1", "r0=1 r1=1"}, got)
	_, err = Litmus{Model: SC, Threads: [2][]LitmusOp{{{Kind: LitLoad, Loc: MaxLocations}}}}.Outcomes(1)
	assert.Error(t, err)
}

func TestMemoryCompactsDeadStores(t *testing.T) {
	const x = 0
	readers := [MaxLocations]uint8{x: 0b01}
	m := New(Relaxed, readers)
	var err error
	for v := int64(1); v <= 20; v++ { // far more than maxStores: old ones die
		m, err = m.Store(1, x, v)
		require.NoError(t, err)
		if v%3 == 0 {
			_, m = m.LoadNewest(0, x)
		}
	}
	loads := m.Load(0, x)
	assert.LessOrEqual(t, len(loads), 3, "only stores since the reader's last look are live")
	assert.Equal(t, int64(20), loads[len(loads)-1].Val)
}
