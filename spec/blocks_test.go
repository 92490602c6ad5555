package spec

import (
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPermuteBlocksRenamesCrashSets: on random histories, the renamed
// contract allows on block bperm[b] what the original allows on b, owes
// the same writes there, and stays renamed through every later event;
// renaming back gives the original exactly.
func TestPermuteBlocksRenamesCrashSets(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for run := 0; run < 300; run++ {
		cfg := Configs()[rng.Intn(3)]
		c := NewContract(cfg)
		var bperm, inv [MaxBlocks]uint8
		for i, p := range rng.Perm(MaxBlocks) {
			bperm[i] = uint8(p)
			inv[p] = uint8(i)
		}
		for step := 0; step < 25; step++ {
			var evs []Event
			c.DeviceEvents(true, func(e Event) { evs = append(evs, e) })
			if c.Writes() < MaxWrites {
				evs = append(evs, Event{Kind: WriteSubmit, ID: c.Writes() + 1, Blocks: uint8(1 + rng.Intn(255)), FUA: rng.Intn(2) == 0, Preflush: rng.Intn(3) == 0})
			}
			if c.Flushes() < MaxFlushes {
				evs = append(evs, Event{Kind: FlushSubmit, ID: c.Flushes() + 1})
			}
			e := evs[rng.Intn(len(evs))]
			require.NoError(t, c.Apply(e))
			p := c.PermuteBlocks(&bperm)
			for b := 0; b < MaxBlocks; b++ {
				assert.Equal(t, c.Allowed(b), p.Allowed(int(bperm[b])), "block %d", b)
			}
			want := map[[2]int]bool{}
			for _, o := range c.Obligations() {
				want[[2]int{o.Write, int(bperm[o.Block])}] = true
			}
			got := map[[2]int]bool{}
			for _, o := range p.Obligations() {
				got[[2]int{o.Write, o.Block}] = true
			}
			assert.Equal(t, want, got)
			assert.Equal(t, c, p.PermuteBlocks(&inv))
		}
	}
}
