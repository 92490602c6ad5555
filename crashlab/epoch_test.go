package crashlab

import (
	"bytes"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// write is a test write of n sectors at sector s, numbered seq, each sector
// holding (seq, sector) as synthLog's do.
func write(seq uint64, s, n int64) Op {
	data := make([]byte, n*SectorSize)
	for i := range n {
		sectorData(data[i*SectorSize:(i+1)*SectorSize], seq, s+i)
	}
	return Op{Seq: seq, Kind: OpWrite, Off: s * SectorSize, Len: int64(len(data)), Data: data}
}

// TestEpochStatesEnumerate: the states of a small log, counted and named:
// per write, the prefix, then each change (drop, tear, late) alone.
func TestEpochStatesEnumerate(t *testing.T) {
	ops := []Op{{Seq: 1, Kind: OpFlush}, write(2, 0, 1), write(3, 0, 2), write(4, 5, 1), {Seq: 5, Kind: OpFlush}}
	st, trunc := EpochStates(ops, 0, 0)
	require.False(t, trunc)
	require.Len(t, st, 3, "k=0: the prefix at each write")
	for i, s := range st {
		assert.Equal(t, uint64(2+i), s.Cut)
		assert.Equal(t, uint64(1), s.Flush)
		assert.Empty(t, s.Changes)
		assert.Equal(t, i+1, s.Unflushed)
	}
	st, _ = EpochStates(ops, 1, 0)
	// Cut 2: prefix, drop 2. Cut 3: prefix, drop 2, drop 3, torn head 3,
	// torn tail 3, 2 late after 3. Cut 4: those and drop 4.
	require.Len(t, st, 2+6+7)
	var names []string
	for _, s := range st[2:8] {
		names = append(names, describeChanges(s.Changes))
	}
	assert.Equal(t, []string{"every unflushed write landed in log order", "op 2 dropped", "op 2 landed after op 3",
		"op 3 dropped", "op 3 torn (its first half landed)", "op 3 torn (its last half landed)"}, names)
	st, _ = EpochStates(ops, 2, 0)
	for _, s := range st {
		seen := map[uint64]bool{}
		for _, c := range s.Changes {
			assert.False(t, seen[c.Seq], "%s: one change a write", describeChanges(s.Changes))
			seen[c.Seq] = true
		}
	}
	// Two changes, one a write and none after a write that did not land
	// whole: at cut 3, drop 2 with each of drop 3 and its two tears (3);
	// at cut 4, those with drop 4 too, 2 late after 3 with drop 4, and
	// drop 4 with each change of 3 (4 + 1 + 3).
	assert.Len(t, slices.DeleteFunc(st, func(s CrashState) bool { return len(s.Changes) != 2 }), 3+8)
}

// TestEpochImages: what each change leaves on the image, sector by sector.
func TestEpochImages(t *testing.T) {
	ops := []Op{write(1, 0, 4), {Seq: 2, Kind: OpFlush}, write(3, 0, 2), write(4, 1, 2), write(5, 6, 2)}
	const nsec = 8
	src := func(st CrashState) []uint64 {
		img := readImage(t, st, ops, nsec*SectorSize)
		out := make([]uint64, nsec)
		for sec := range int64(nsec) {
			out[sec] = source(t, img[sec*SectorSize:(sec+1)*SectorSize], sec)
		}
		return out
	}
	at := func(changes ...Change) CrashState {
		return CrashState{Kind: Epoch, Cut: 5, Flush: 2, Changes: changes}
	}
	assert.Equal(t, []uint64{3, 4, 4, 1, 0, 0, 5, 5}, src(at()), "log order")
	assert.Equal(t, []uint64{1, 4, 4, 1, 0, 0, 5, 5}, src(at(Change{Kind: ChangeDrop, Seq: 3})))
	assert.Equal(t, []uint64{3, 3, 4, 1, 0, 0, 5, 5}, src(at(Change{Kind: ChangeLate, Seq: 3, Other: 4})), "3 landed after 4: it holds their shared sector")
	assert.Equal(t, []uint64{3, 4, 1, 1, 0, 0, 5, 5}, src(at(Change{Kind: ChangeTornHead, Seq: 4})))
	assert.Equal(t, []uint64{3, 3, 4, 1, 0, 0, 5, 5}, src(at(Change{Kind: ChangeTornTail, Seq: 4})), "sector 1 keeps op 3, which landed before op 4")
	assert.Equal(t, []uint64{3, 4, 4, 1, 0, 0, 0, 5}, src(at(Change{Kind: ChangeTornTail, Seq: 5})))
	torn := at(Change{Kind: ChangeTornHead, Seq: 4})
	assert.Equal(t, []uint64{4}, torn.TornWrites(ops, 4*SectorSize), "half of op 4 in a 4-sector block")
	assert.Empty(t, at(Change{Kind: ChangeDrop, Seq: 4}).TornWrites(ops, 4*SectorSize), "a dropped write tears nothing")
	assert.Contains(t, torn.Describe(), "epoch")
	assert.Contains(t, torn.Describe(), "op 4 torn (its first half landed)")
}

// TestEpochStatesAreWithinTheContract: on random logs, every sector of
// every Epoch state (up to 2 changes) holds the durable content or an
// unflushed write covering it, and the states reach what prefixes cannot:
// a newer write landed without an older one before it.
func TestEpochStatesAreWithinTheContract(t *testing.T) {
	const nsec = 16
	ops := synthLog(5, nsec, 24)
	states, _ := EpochStates(ops, 2, 0)
	require.NotEmpty(t, states)
	beyondPrefix := 0
	for _, st := range states {
		img := readImage(t, st, ops, nsec*SectorSize)
		var maxLanded uint64
		missing := false
		for sec := int64(0); sec < nsec; sec++ {
			got := source(t, img[sec*SectorSize:(sec+1)*SectorSize], sec)
			ok := got == durableSource(ops, st.Flush, sec)
			for _, op := range ops {
				if op.Seq > st.Flush && op.Seq <= st.Cut && covers(op, sec) && (op.Kind == OpWrite && got == op.Seq || op.Kind != OpWrite && got == 0) {
					ok = true
				}
			}
			require.True(t, ok, "%s: sector %d holds op %d", st.Describe(), sec, got)
			maxLanded = max(maxLanded, got)
		}
		for _, c := range st.Changes {
			if c.Kind == ChangeDrop && c.Seq < maxLanded {
				missing = true
			}
		}
		if missing {
			beyondPrefix++
		}
	}
	assert.Positive(t, beyondPrefix, "no state dropped a write below one that landed")
}

// TestDedupeKeysAreImages: two states share a key exactly when their
// images are the same bytes, on random logs and every kind of state; the
// obligations part the rest.
func TestDedupeKeysAreImages(t *testing.T) {
	const nsec = 12
	for seed := uint64(1); seed <= 3; seed++ {
		ops := synthLog(seed, nsec, 24)
		states, _ := LabStates(ops, LabOptions{Random: 40, Seed: seed, Epoch: true, K: 1}, 0)
		imgs := make([][]byte, len(states))
		for i, st := range states {
			imgs[i] = readImage(t, st, ops, nsec*SectorSize)
		}
		kept, dups := dedupe(states, ops, func(CrashState) int { return 0 })
		require.Equal(t, len(states), len(kept)+dups)
		// Every image appears among the kept states, and no two kept
		// states have the same image.
		keptIdx := map[int]bool{}
		for _, st := range kept {
			keptIdx[st.Index] = true
		}
		for i := range states {
			n := 0
			for j := range states {
				if keptIdx[j] && bytes.Equal(imgs[i], imgs[j]) {
					n++
				}
			}
			require.Equal(t, 1, n, "seed %d: %s: its image among the kept states %d times", seed, states[i].Describe(), n)
		}
		assert.Positive(t, dups, "seed %d: no duplicate among %d states", seed, len(states))
		// Different obligations are never merged.
		kept2, dups2 := dedupe(states, ops, func(st CrashState) int { return st.Index })
		assert.Zero(t, dups2)
		assert.Len(t, kept2, len(states))
	}
}

// TestDedupePrefersUntorn: of two states with the same image, the one
// that tears nothing is kept, whatever their order.
func TestDedupePrefersUntorn(t *testing.T) {
	ops := []Op{{Seq: 1, Kind: OpFlush}, write(2, 0, 2), write(3, 0, 2)}
	// Op 2 torn (its first half) under op 3 whole: op 3's image, as the
	// prefix at op 3.
	torn := CrashState{Index: 0, Kind: Epoch, Cut: 3, Flush: 1, Changes: []Change{{Kind: ChangeTornHead, Seq: 2}}}
	prefix := CrashState{Index: 1, Kind: Epoch, Cut: 3, Flush: 1}
	kept, dups := dedupe([]CrashState{torn, prefix}, ops, func(CrashState) int { return 0 })
	assert.Equal(t, 1, dups)
	require.Len(t, kept, 1)
	assert.Equal(t, 1, kept[0].Index)
	// An op that is not sector aligned: nothing is merged.
	odd := append(slices.Clone(ops), Op{Seq: 4, Kind: OpWrite, Off: 100, Len: 3, Data: []byte{1, 2, 3}})
	_, dups = dedupe([]CrashState{torn, prefix}, odd, func(CrashState) int { return 0 })
	assert.Zero(t, dups)
}

// TestCrashStatesFrom: no state is cut before from, and the random cuts
// are drawn after it, so a log whose most ops precede it still gives k
// random states.
func TestCrashStatesFrom(t *testing.T) {
	ops := synthLog(7, 32, 400)
	from := ops[360].Seq
	states := CrashStatesFrom(ops, 50, 3, from)
	random := 0
	for _, st := range states {
		assert.GreaterOrEqual(t, st.Cut, from, st.Describe())
		if st.Kind == Random {
			random++
		}
	}
	assert.Equal(t, 50, random)
	// From the start, the same as CrashStates.
	assert.Equal(t, CrashStates(ops, 20, 3), CrashStatesFrom(ops, 20, 3, 0))
}
