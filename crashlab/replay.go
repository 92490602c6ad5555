package crashlab

import (
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"

	"github.com/flushproof/flushproof/internal/mutate"
)

// What a crash may leave, and what CrashStates generates.
//
// The log numbers a write once its backing write finished and a flush when
// it arrives, so a flush covers every write numbered before it. The device
// contract (docs/semantics.md, rule 6) lets a crash leave, on each block,
// the data of some write W to it such that no durable write to that block
// is ordered after W. Replay judges every 512-byte sector on its own (a
// multi-sector write may be torn).
//
// A crash "after op c" with last flush F <= c (F = 0 when there is none):
//   - the writes numbered before F are durable; let D be the newest of them
//     on a sector (or the initial zeros when there is none);
//   - the writes numbered after F and up to c are the unflushed writes a
//     crash may or may not have kept.
//
// CrashStates gives every sector either D's data or the data of one of the
// unflushed writes that cover it. This is within the contract: D is allowed
// (it is durable, and no durable write to the sector is newer); an unflushed
// write W numbered after D completed after D did, so W did not end before D
// was submitted, so D is not ordered after W; nor is any older durable
// write. The choice among several unflushed writes to one sector is free:
// their submission times are not in the log, so none is known to be ordered
// after another, and the contract allows each.
//
// The contract allows more than this, and replay does not generate it:
// an older write still in flight landing over D (the log cannot tell which
// older writes were still in flight), writes numbered after c that were in
// flight at the crash, and a flush that was submitted but had not completed
// (its writes are treated as durable, which only shrinks the set). So every
// generated state is one the contract allows; not every allowed state is
// generated. Discards and zero-range ops are treated as writes of zeros.
// Ops are expected to be sector aligned (the loop device only sends whole
// sectors); an unaligned op that wins a sector changes only its own bytes.

// StateKind says how a crash state was chosen.
type StateKind uint8

// The kinds of crash state.
const (
	// FlushPoint: a crash just after a flush completed; every write
	// numbered before the flush and nothing else.
	FlushPoint StateKind = iota + 1
	// EndOfLog: every write in the log, each sector holding its newest data.
	EndOfLog
	// Random: a random cut with a random choice among the unflushed writes.
	Random
)

// StateKinds lists every StateKind (Epoch, epoch.go, the systematic
// states, before Random).
var StateKinds = []StateKind{FlushPoint, EndOfLog, Epoch, Random}

// MarshalText writes the kind in snake case ("flush_point"), as JSON
// values and keys are written.
func (k StateKind) MarshalText() ([]byte, error) { return snake(k.String()), nil }

func (k StateKind) String() string {
	switch k {
	case FlushPoint:
		return "flush-point"
	case EndOfLog:
		return "end-of-log"
	case Random:
		return "random"
	case Epoch:
		return "epoch"
	}
	return fmt.Sprintf("StateKind(%d)", uint8(k))
}

// CrashState is one image a crash may leave. Ops are named by Seq.
type CrashState struct {
	Index int // position in the slice CrashStates returned
	Kind  StateKind
	// Cut: the crash happened after op Cut; later ops are not considered.
	Cut uint64
	// Flush: the last flush numbered at or before Cut (0: none). Every
	// write numbered before it is durable and applied whole.
	Flush uint64
	// Random states only: how the unflushed writes (Flush < Seq <= Cut)
	// land. Seed drives every choice; each such write is kept with
	// probability Keep; Torn writes keep each sector with probability 1/2;
	// Shuffled lets any kept write win a sector several kept writes cover
	// (otherwise the newest does).
	Seed     uint64
	Keep     float64
	Torn     bool
	Shuffled bool
	// Durable is the number of writes (discards, zeroes) numbered before
	// Flush; Unflushed the number after it up to Cut; Landed how many of
	// those left data on at least one sector.
	Durable, Unflushed, Landed int
	// Epoch states only: how they depart from log order (epoch.go).
	Changes []Change
}

// Describe names the state so a failure can be replayed by hand.
func (s CrashState) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "state %d (%v): crash after op %d, last flush op %d, %d durable writes", s.Index, s.Kind, s.Cut, s.Flush, s.Durable)
	switch s.Kind {
	case Random:
		fmt.Fprintf(&b, ", %d of %d unflushed writes landed (keep %.2f", s.Landed, s.Unflushed, s.Keep)
		if s.Torn {
			b.WriteString(", torn")
		}
		if s.Shuffled {
			b.WriteString(", shuffled")
		}
		fmt.Fprintf(&b, ", seed %#x)", s.Seed)
	case EndOfLog:
		fmt.Fprintf(&b, ", %d unflushed writes all landed", s.Unflushed)
	case Epoch:
		fmt.Fprintf(&b, ", %d unflushed writes: %s", s.Unflushed, describeChanges(s.Changes))
	}
	return b.String()
}

// Includes reports whether op contributes to the state as a whole: durable
// ops, and for the end of the log every op. For a random state it reports
// whether op was kept, although a kept torn or shuffled op may still lose
// some of its sectors; Extents has the exact answer.
func (s CrashState) Includes(op Op) bool {
	if op.Kind == OpFlush {
		return false
	}
	if op.Seq < s.Flush || (s.Kind == EndOfLog && op.Seq <= s.Cut) {
		return true
	}
	if s.Kind != Random && s.Kind != Epoch || op.Seq > s.Cut {
		return false
	}
	return s.unflushedKept(op)
}

func (s CrashState) kept(op Op) bool {
	return unitFloat(mix(s.Seed, op.Seq, 0, tagKeep)) < s.Keep
}

// Extent is a byte range of the image that holds the data of one op.
type Extent struct {
	Seq      uint64
	Off, End int64
}

// Extents returns, for a random state, the sector ranges where an unflushed
// op landed over the durable image, sorted by offset; nil for other kinds.
func (s CrashState) Extents(ops []Op) []Extent {
	if s.Kind != Random && s.Kind != Epoch {
		return nil
	}
	win := s.landedOn(ops)
	secs := make([]int64, 0, len(win))
	for sec := range win {
		secs = append(secs, sec)
	}
	sort.Slice(secs, func(i, j int) bool { return secs[i] < secs[j] })
	var out []Extent
	for _, sec := range secs {
		seq := win[sec]
		if n := len(out); n > 0 && out[n-1].Seq == seq && out[n-1].End == sec*SectorSize {
			out[n-1].End += SectorSize
			continue
		}
		out = append(out, Extent{Seq: seq, Off: sec * SectorSize, End: (sec + 1) * SectorSize})
	}
	return out
}

// winners maps each sector on which an unflushed op of a random state
// landed to that op's Seq.
func (s CrashState) winners(ops []Op) map[int64]uint64 {
	type winner struct {
		seq  uint64
		prio uint64
	}
	win := map[int64]winner{}
	for _, op := range ops {
		if !s.unflushedKept(op) {
			continue
		}
		off, end := opRange(op)
		// A torn write keeps each of its sectors with probability 1/2: the
		// sectors it drops keep what was there before it. (The mutation
		// GeneratorNeverTears drops none, so no kept write is ever torn.)
		torn := s.Torn && mix(s.Seed, op.Seq, 0, tagTorn)&1 == 1 && !mutate.On(mutate.GeneratorNeverTears)
		for sec := off / SectorSize; sec*SectorSize < end; sec++ {
			if torn && mix(s.Seed, op.Seq, uint64(sec), tagSector)&1 == 0 {
				continue
			}
			prio := op.Seq
			if s.Shuffled {
				prio = mix(s.Seed, op.Seq, uint64(sec), tagPrio)
			}
			if w, ok := win[sec]; !ok || prio > w.prio {
				win[sec] = winner{op.Seq, prio}
			}
		}
	}
	out := make(map[int64]uint64, len(win))
	for sec, w := range win {
		out[sec] = w.seq
	}
	return out
}

// unflushedKept reports whether op is an unflushed write (discard, zero) of
// the state that it keeps, before tearing and shuffling.
func (s CrashState) unflushedKept(op Op) bool {
	if op.Kind == OpFlush || op.Seq <= s.Flush || op.Seq > s.Cut {
		return false
	}
	if s.Kind == Epoch {
		for _, c := range s.Changes {
			if c.Seq == op.Seq && c.Kind == ChangeDrop {
				return false
			}
		}
		return true
	}
	return s.kept(op)
}

// landedOn maps each sector an unflushed write of a random or Epoch state
// landed on to that write.
func (s CrashState) landedOn(ops []Op) map[int64]uint64 {
	if s.Kind == Epoch {
		return s.epochWinners(ops)
	}
	return s.winners(ops)
}

// TornWrites returns, in Seq order, the unflushed writes (discards, zeros)
// that a random state tears inside a block: within one aligned block of
// blockSize bytes, some of the write's sectors hold its data while others
// hold older data (the durable content, or an older write that won the
// sector). That is a state the device contract allows, but one a device
// whose writes are atomic per file-system block never leaves, and which a
// file system cannot be expected to recover where it writes a block in
// place without a journal copy (docs/crashlab.md, "Which failures count").
// A sector taken by a newer write is no tear: that is the newer write
// applied over the older one. A write that lost every sector of a block
// did not land there, which is not a tear either. Flush points, the end of
// the log, and random states that neither tear nor shuffle never tear
// inside a block; nor does anything when blockSize <= SectorSize.
func (s CrashState) TornWrites(ops []Op, blockSize int64) []uint64 {
	if blockSize <= SectorSize || !(s.Kind == Random && (s.Torn || s.Shuffled) || s.Kind == Epoch && len(s.Changes) > 0) {
		return nil
	}
	ops = sortedBySeq(ops)
	win := s.landedOn(ops)
	var torn []uint64
	for _, op := range ops {
		if !s.unflushedKept(op) {
			continue
		}
		off, end := opRange(op)
		blk := int64(-1)
		var landed, older bool
		for sec := off / SectorSize; sec*SectorSize < end; sec++ {
			if b := sec * SectorSize / blockSize; b != blk {
				blk, landed, older = b, false, false
			}
			switch w, ok := win[sec]; {
			case ok && w == op.Seq:
				landed = true
			case !ok || w < op.Seq:
				older = true
			}
			if landed && older {
				torn = append(torn, op.Seq)
				break
			}
		}
	}
	return torn
}

// Build writes the state's image to path (see BuildImage).
func (s CrashState) Build(path string, size int64, ops []Op) error {
	ops = sortedBySeq(ops)
	switch s.Kind {
	case FlushPoint:
		return BuildImage(path, size, ops, func(op Op) bool { return op.Seq < s.Flush })
	case EndOfLog:
		return BuildImage(path, size, ops, func(op Op) bool { return op.Seq <= s.Cut })
	case Random, Epoch:
	default:
		return fmt.Errorf("build %s: unknown kind", s.Describe())
	}
	if err := BuildImage(path, size, ops, func(op Op) bool { return op.Seq < s.Flush }); err != nil {
		return err
	}
	bySeq := make(map[uint64]Op)
	for _, op := range ops {
		if op.Kind != OpFlush && op.Seq > s.Flush && op.Seq <= s.Cut {
			if err := checkRange(size, op); err != nil {
				return err
			}
			bySeq[op.Seq] = op
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	for _, e := range s.Extents(ops) {
		op := bySeq[e.Seq]
		off, end := opRange(op)
		if err := applyRange(f, op, max(off, e.Off), min(end, e.End)); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// CrashStates returns the crash states of the log replay checks: one per
// flush point (skipping a flush with no write since the previous one, whose
// image would be the same), one for the end of the log, and k random ones
// drawn from seed. The same log, k and seed give the same states.
func CrashStates(ops []Op, k int, seed uint64) []CrashState {
	return CrashStatesFrom(ops, k, seed, 0)
}

// CrashStatesFrom is CrashStates for the crashes after op from (mkfs
// finished: before it there is no file system to check): no state cut
// before it is made, and the k random cuts are drawn among the ops from
// it on, so that none is computed to be dropped (a cut inside mkfs.xfs
// costs a map of every sector of the image, which it discards whole).
func CrashStatesFrom(ops []Op, k int, seed uint64, from uint64) []CrashState {
	ops = sortedBySeq(ops)
	var states []CrashState
	add := func(s CrashState) {
		s.Index = len(states)
		states = append(states, s)
	}
	// writesBefore[i]: writes among ops[:i]; lastFlush[i]: the last flush
	// among ops[:i+1].
	writesBefore := make([]int, len(ops)+1)
	lastFlush := make([]uint64, len(ops))
	var lf uint64
	for i, op := range ops {
		writesBefore[i+1] = writesBefore[i]
		if op.Kind == OpFlush {
			lf = op.Seq
		} else {
			writesBefore[i+1]++
		}
		lastFlush[i] = lf
	}
	indexOf := func(seq uint64) int { // index of op seq, or -1 for 0
		if seq == 0 {
			return -1
		}
		return sort.Search(len(ops), func(i int) bool { return ops[i].Seq >= seq })
	}
	prevWrites := -1
	for i, op := range ops {
		if op.Kind != OpFlush || writesBefore[i] == prevWrites {
			continue
		}
		prevWrites = writesBefore[i]
		if op.Seq >= from {
			add(CrashState{Kind: FlushPoint, Cut: op.Seq, Flush: op.Seq, Durable: writesBefore[i]})
		}
	}
	if len(ops) > 0 && ops[len(ops)-1].Seq >= from {
		last := len(ops) - 1
		d := writesBefore[indexOf(lastFlush[last])+1]
		add(CrashState{Kind: EndOfLog, Cut: ops[last].Seq, Flush: lastFlush[last], Durable: d, Unflushed: writesBefore[len(ops)] - d, Landed: writesBefore[len(ops)] - d})
	}
	first := sort.Search(len(ops), func(i int) bool { return ops[i].Seq >= from })
	if first == len(ops) {
		return states
	}
	rng := rand.New(rand.NewPCG(seed, 0x6372617368))
	for range k {
		// Prefer a cut with unflushed writes; give up after a few draws
		// (a log of flushes alone has none).
		var c int
		for try := 0; try < 8; try++ {
			c = first + rng.IntN(len(ops)-first)
			if ops[c].Kind != OpFlush && ops[c].Seq > lastFlush[c] {
				break
			}
		}
		fi := indexOf(lastFlush[c])
		s := CrashState{
			Kind:      Random,
			Cut:       ops[c].Seq,
			Flush:     lastFlush[c],
			Seed:      rng.Uint64(),
			Keep:      []float64{0.25, 0.5, 0.75, 1}[rng.IntN(4)],
			Torn:      rng.IntN(4) == 0,
			Shuffled:  rng.IntN(4) == 0,
			Durable:   writesBefore[fi+1],
			Unflushed: writesBefore[c+1] - writesBefore[fi+1],
		}
		s.Landed = landedWrites(s.winners(ops[fi+1 : c+1]))
		add(s)
	}
	return states
}

const (
	tagKeep = iota + 1
	tagTorn
	tagSector
	tagPrio
)

// mix hashes its inputs (splitmix64 finalizer steps), so each choice of a
// random state is a pure function of its seed.
func mix(seed, seq, sec, tag uint64) uint64 {
	x := seed
	for _, v := range [...]uint64{seq, sec, tag} {
		x ^= v + 0x9e3779b97f4a7c15 + (x << 6) + (x >> 2)
		x ^= x >> 30
		x *= 0xbf58476d1ce4e5b9
		x ^= x >> 27
		x *= 0x94d049bb133111eb
		x ^= x >> 31
	}
	return x
}

func unitFloat(x uint64) float64 { return float64(x>>11) / (1 << 53) }
