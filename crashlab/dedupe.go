package crashlab

import (
	"crypto/sha256"
	"encoding/binary"
	"sort"
)

// Identical images, found before anything is built. A state's image is
// the durable image at its flush (every write numbered before it) with
// the sectors its unflushed writes landed on over it. Each sector's
// content is named by the SHA-256 of its 512 bytes; an image by the sum,
// over its sectors that are not all zero (an untouched sector reads as
// zeros), of a hash of (sector, digest): a multiset hash, kept up to date
// as the durable image grows flush by flush, so a state costs only its
// own unflushed writes. Two states with equal keys and equal obligations
// (the checker's input: the acknowledgements at or before the cut) give
// the same replay; the later one is counted as a duplicate of the first
// and not replayed. A key is 128 bits: two different images share one only
// by a hash collision, which for images that no adversary chose is about
// 2^-128 for a pair. Keys need every op sector aligned (the loop device
// sends whole sectors): with an op that is not, nothing is deduplicated.

// stateKey is an image's key and the state's obligations.
type stateKey struct {
	img  [2]uint64
	obls int
}

// sectorDigests names the content of each sector of each write; nil for a
// discard or zero range (all zeros).
type sectorDigests map[uint64][][32]byte

var zeroSector = sha256.Sum256(make([]byte, SectorSize))

// digestsOf returns the digests of ops, or false if an op is not sector
// aligned.
func digestsOf(ops []Op) (sectorDigests, bool) {
	d := sectorDigests{}
	for _, op := range ops {
		if op.Kind == OpFlush {
			continue
		}
		off, end := opRange(op)
		if off%SectorSize != 0 || end%SectorSize != 0 {
			return nil, false
		}
		if op.Kind != OpWrite {
			continue
		}
		ds := make([][32]byte, (end-off)/SectorSize)
		for i := range ds {
			ds[i] = sha256.Sum256(op.Data[int64(i)*SectorSize : int64(i+1)*SectorSize])
		}
		d[op.Seq] = ds
	}
	return d, true
}

// term is sector sec holding the content named by dig in an image's key:
// zero for an all-zero sector.
func term(sec int64, dig [32]byte) [2]uint64 {
	if dig == zeroSector {
		return [2]uint64{}
	}
	a := binary.LittleEndian.Uint64(dig[0:]) ^ uint64(sec)*0x9e3779b97f4a7c15
	b := binary.LittleEndian.Uint64(dig[8:]) + uint64(sec)*0xbf58476d1ce4e5b9
	return [2]uint64{mix(a, 1, 2, 3), mix(b, 4, 5, 6)}
}

// dedupe returns the states whose image and obligations no other state
// kept has (of those that share them, the one better keeps), and how many
// it left out. obls gives a state's
// obligations: equal numbers must mean equal checks of equal images.
func dedupe(states []CrashState, ops []Op, obls func(CrashState) int) (kept []CrashState, dups int) {
	ops = sortedBySeq(ops)
	digs, ok := digestsOf(ops)
	if !ok || len(states) < 2 {
		return states, 0
	}
	opIdx := make(map[uint64]int, len(ops))
	for i, op := range ops {
		opIdx[op.Seq] = i
	}
	digestAt := func(seq uint64, sec int64) [32]byte {
		op := ops[opIdx[seq]]
		if op.Kind != OpWrite {
			return zeroSector
		}
		return digs[seq][sec-op.Off/SectorSize]
	}
	order := make([]int, len(states))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return states[order[a]].Flush < states[order[b]].Flush })

	base := map[int64]uint64{} // sector -> the durable write it holds
	// put changes key from base's content at sector sec to seq's.
	put := func(key *[2]uint64, sec int64, seq uint64) {
		if old, had := base[sec]; had {
			t := term(sec, digestAt(old, sec))
			key[0], key[1] = key[0]-t[0], key[1]-t[1]
		}
		t := term(sec, digestAt(seq, sec))
		key[0], key[1] = key[0]+t[0], key[1]+t[1]
	}
	var sum [2]uint64
	next := 0 // ops[:next] are applied to base
	first := map[stateKey]int{}
	for _, i := range order {
		st := states[i]
		for ; next < len(ops) && ops[next].Seq < st.Flush; next++ {
			op := ops[next]
			if op.Kind == OpFlush {
				continue
			}
			off, end := opRange(op)
			for sec := off / SectorSize; sec*SectorSize < end; sec++ {
				put(&sum, sec, op.Seq)
				base[sec] = op.Seq
			}
		}
		// The state's own writes: those after its flush, up to its cut.
		unflushed := ops[next:]
		unflushed = unflushed[:sort.Search(len(unflushed), func(j int) bool { return unflushed[j].Seq > st.Cut })]
		var over map[int64]uint64
		switch st.Kind {
		case Random, Epoch:
			over = st.landedOn(unflushed)
		case EndOfLog:
			over = CrashState{Kind: Epoch, Flush: st.Flush, Cut: st.Cut}.epochWinners(unflushed)
		}
		key := sum
		for sec, seq := range over {
			put(&key, sec, seq)
		}
		k := stateKey{key, obls(st)}
		if j, seen := first[k]; !seen || better(states[i], states[j]) {
			first[k] = i
		}
	}
	keep := make([]bool, len(states))
	for _, i := range first {
		keep[i] = true
	}
	for i, st := range states {
		if keep[i] {
			kept = append(kept, st)
		} else {
			dups++
		}
	}
	return kept, dups
}

// better reports whether a is kept rather than b, of two states with the
// same image and obligations: one that tears no write first (a failure of
// a torn state may be excused, "Which failures count", and the same image
// reached without a tear excuses nothing), then the first by Index.
func better(a, b CrashState) bool {
	if ta, tb := a.mayTear(), b.mayTear(); ta != tb {
		return !ta
	}
	return a.Index < b.Index
}

// mayTear reports whether the state may tear a write inside a block
// (TornWrites may be non-empty).
func (s CrashState) mayTear() bool {
	switch s.Kind {
	case Random:
		return s.Torn || s.Shuffled
	case Epoch:
		for _, c := range s.Changes {
			if c.Kind != ChangeDrop {
				return true
			}
		}
	}
	return false
}
