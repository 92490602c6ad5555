package crashlab

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/internal/mutate"
)

// synthLog is a random log on an image of nsec sectors. Every sector a write
// covers holds the write's Seq and the sector number, so an image says which
// op each sector came from.
func synthLog(seed uint64, nsec, nops int) []Op {
	rng := rand.New(rand.NewPCG(seed, 1))
	var ops []Op
	for len(ops) < nops {
		seq := uint64(len(ops) + 1)
		switch r := rng.IntN(10); {
		case r < 2:
			ops = append(ops, Op{Seq: seq, Kind: OpFlush})
		case r < 3:
			s, n := rng.IntN(nsec), 1+rng.IntN(4)
			n = min(n, nsec-s)
			kind := OpDiscard
			if rng.IntN(2) == 0 {
				kind = OpZero
			}
			ops = append(ops, Op{Seq: seq, Kind: kind, Off: int64(s) * SectorSize, Len: int64(n) * SectorSize})
		default:
			s, n := rng.IntN(nsec), 1+rng.IntN(6)
			n = min(n, nsec-s)
			data := make([]byte, n*SectorSize)
			for i := range n {
				sectorData(data[i*SectorSize:(i+1)*SectorSize], seq, int64(s+i))
			}
			ops = append(ops, Op{Seq: seq, Kind: OpWrite, Off: int64(s) * SectorSize, Len: int64(len(data)), Data: data})
		}
	}
	return ops
}

func sectorData(b []byte, seq uint64, sec int64) {
	for i := range b {
		b[i] = byte(seq*7 + uint64(i))
	}
	binary.LittleEndian.PutUint64(b, seq)
	binary.LittleEndian.PutUint64(b[8:], uint64(sec))
}

// source is the op a sector's content came from: 0 for zeros.
func source(t *testing.T, b []byte, sec int64) uint64 {
	t.Helper()
	if bytes.Equal(b, make([]byte, len(b))) {
		return 0
	}
	seq := binary.LittleEndian.Uint64(b)
	want := make([]byte, len(b))
	sectorData(want, seq, sec)
	if !bytes.Equal(b, want) {
		t.Fatalf("sector %d holds data no write wrote (it claims op %d)", sec, seq)
	}
	return seq
}

// covers reports whether op changes sector sec.
func covers(op Op, sec int64) bool {
	off, end := opRange(op)
	return op.Kind != OpFlush && off < (sec+1)*SectorSize && end > sec*SectorSize
}

// durableSource is the op whose content a sector holds once every op
// numbered before flush landed: 0 for zeros (no write, or a discard).
func durableSource(ops []Op, flush uint64, sec int64) uint64 {
	var src uint64
	for _, op := range ops {
		if op.Seq < flush && covers(op, sec) {
			src = 0
			if op.Kind == OpWrite {
				src = op.Seq
			}
		}
	}
	return src
}

func readImage(t *testing.T, st CrashState, ops []Op, size int64) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "img")
	if err := st.Build(path, size, ops); err != nil {
		t.Fatalf("%s: %v", st.Describe(), err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestFlushPointStatesHoldExactlyTheWritesBeforeTheFlush(t *testing.T) {
	const nsec = 48
	ops := synthLog(1, nsec, 300)
	states := CrashStates(ops, 0, 1)
	flushes, lastFlush := 0, uint64(0)
	for _, op := range ops {
		if op.Kind == OpFlush {
			lastFlush = op.Seq
		}
	}
	for _, st := range states {
		img := readImage(t, st, ops, nsec*SectorSize)
		switch st.Kind {
		case FlushPoint:
			flushes++
			if st.Cut != st.Flush || ops[st.Flush-1].Kind != OpFlush {
				t.Fatalf("%s: not at a flush", st.Describe())
			}
			for sec := int64(0); sec < nsec; sec++ {
				if got, want := source(t, img[sec*SectorSize:(sec+1)*SectorSize], sec), durableSource(ops, st.Flush, sec); got != want {
					t.Fatalf("%s: sector %d holds op %d, want op %d", st.Describe(), sec, got, want)
				}
			}
		case EndOfLog:
			if st.Cut != uint64(len(ops)) || st.Flush != lastFlush {
				t.Fatalf("%s: want cut %d, flush %d", st.Describe(), len(ops), lastFlush)
			}
			for sec := int64(0); sec < nsec; sec++ {
				if got, want := source(t, img[sec*SectorSize:(sec+1)*SectorSize], sec), durableSource(ops, st.Cut+1, sec); got != want {
					t.Fatalf("%s: sector %d holds op %d, want op %d", st.Describe(), sec, got, want)
				}
			}
		default:
			t.Fatalf("k=0 gave %s", st.Describe())
		}
	}
	// One state per flush that follows a write.
	want, writes := 0, false
	for _, op := range ops {
		if op.Kind == OpFlush {
			if writes {
				want++
			}
			writes = false
		} else {
			writes = true
		}
	}
	if ops[0].Kind == OpFlush {
		want++ // the first flush, over the empty image
	}
	if flushes != want {
		t.Errorf("%d flush-point states, want %d", flushes, want)
	}
}

func TestRandomStatesAreWithinTheContract(t *testing.T) {
	const nsec = 32
	ops := synthLog(2, nsec, 250)
	states := CrashStates(ops, 300, 42)
	var lost, landed, older, torn int
	for _, st := range states {
		if st.Kind != Random {
			continue
		}
		if !strings.Contains(st.Describe(), "random") {
			t.Fatalf("Describe %q does not name the kind", st.Describe())
		}
		img := readImage(t, st, ops, nsec*SectorSize)
		landedSecs := map[uint64]int{}
		for sec := int64(0); sec < nsec; sec++ {
			got := source(t, img[sec*SectorSize:(sec+1)*SectorSize], sec)
			durable := durableSource(ops, st.Flush, sec)
			// Allowed: the durable content, or one of the unflushed ops
			// (Flush, Cut] covering the sector (a discard leaves zeros).
			ok := got == durable
			var newestKept uint64
			for _, op := range ops {
				if op.Seq > st.Flush && op.Seq <= st.Cut && covers(op, sec) {
					if (op.Kind == OpWrite && got == op.Seq) || (op.Kind != OpWrite && got == 0) {
						ok = true
					}
					if st.Includes(op) {
						newestKept = op.Seq
					}
				}
			}
			if !ok {
				t.Fatalf("%s: sector %d holds op %d; allowed: durable op %d or an unflushed write covering it", st.Describe(), sec, got, durable)
			}
			if got > st.Flush {
				landed++
				landedSecs[got]++
				if got < newestKept {
					older++
				}
			} else if newestKept == 0 {
				for _, op := range ops {
					if op.Kind == OpWrite && op.Seq > st.Flush && op.Seq <= st.Cut && covers(op, sec) {
						lost++
						break
					}
				}
			}
		}
		for seq, n := range landedSecs {
			if op := ops[seq-1]; n < int(op.Len/SectorSize) {
				torn++
			}
		}
	}
	// The generator explores: writes lost, writes landed, an older kept
	// write winning over a newer one, torn writes.
	if lost == 0 || landed == 0 || older == 0 || torn == 0 {
		t.Errorf("little variety: %d sectors lost a write, %d held an unflushed write, %d an older one than the newest kept, %d writes torn (or overwritten)", lost, landed, older, torn)
	}
}

func TestCrashStatesAreDeterministic(t *testing.T) {
	ops := synthLog(3, 16, 120)
	a, b := CrashStates(ops, 20, 7), CrashStates(ops, 20, 7)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same log and seed gave different states")
	}
	for i := range a {
		if !bytes.Equal(readImage(t, a[i], ops, 16*SectorSize), readImage(t, b[i], ops, 16*SectorSize)) {
			t.Fatalf("%s: two builds differ", a[i].Describe())
		}
	}
	if reflect.DeepEqual(a, CrashStates(ops, 20, 8)) {
		t.Error("seeds 7 and 8 gave the same states")
	}
	// Order of the input does not matter.
	rev := append([]Op(nil), ops...)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	if !reflect.DeepEqual(a, CrashStates(rev, 20, 7)) {
		t.Error("the order of the ops changed the states")
	}
}

func TestCrashStatesEmptyAndFlushOnlyLogs(t *testing.T) {
	if s := CrashStates(nil, 5, 1); len(s) != 0 {
		t.Errorf("empty log: %d states", len(s))
	}
	ops := []Op{{Seq: 1, Kind: OpFlush}, {Seq: 2, Kind: OpFlush}}
	for _, st := range CrashStates(ops, 3, 1) {
		if st.Durable != 0 || st.Landed != 0 {
			t.Errorf("flush-only log: %s", st.Describe())
		}
	}
}

// TestTornWritesMatchTheImage checks TornWrites against the images Build
// makes: a write is torn inside a block exactly when, in some block, one of
// its sectors holds its data and another holds older data (the durable
// content or an older write). The log has writes only, so every sector's
// source is known from its content.
func TestTornWritesMatchTheImage(t *testing.T) {
	const nsec = 64
	var ops []Op
	for _, op := range synthLog(5, nsec, 300) {
		if op.Kind == OpWrite || op.Kind == OpFlush {
			seq := uint64(len(ops) + 1)
			if op.Kind == OpWrite {
				// Renumber, and rewrite the data to name the new Seq.
				for i := int64(0); i < op.Len/SectorSize; i++ {
					sectorData(op.Data[i*SectorSize:(i+1)*SectorSize], seq, op.Off/SectorSize+i)
				}
			}
			op.Seq = seq
			ops = append(ops, op)
		}
	}
	states := CrashStates(ops, 150, 9)
	blockSizes := []int64{1024, 2048, 4096}
	tornStates := map[int64]int{}
	for _, st := range states {
		var img []byte
		if st.Kind == Random {
			img = readImage(t, st, ops, nsec*SectorSize)
		}
		for _, blockSize := range blockSizes {
			got := st.TornWrites(ops, blockSize)
			if st.Kind != Random {
				assert.Empty(t, got, "%s", st.Describe())
				continue
			}
			var want []uint64
			for _, op := range ops {
				if op.Kind != OpWrite || op.Seq <= st.Flush || op.Seq > st.Cut {
					continue
				}
				landed, older := map[int64]bool{}, map[int64]bool{}
				for sec := op.Off / SectorSize; sec < (op.Off+op.Len)/SectorSize; sec++ {
					src := source(t, img[sec*SectorSize:(sec+1)*SectorSize], sec)
					blk := sec * SectorSize / blockSize
					if src == op.Seq {
						landed[blk] = true
					} else if src < op.Seq {
						older[blk] = true
					}
				}
				for blk := range landed {
					if older[blk] {
						want = append(want, op.Seq)
						break
					}
				}
			}
			assert.Equal(t, want, got, "%s, block %d", st.Describe(), blockSize)
			if !st.Torn && !st.Shuffled {
				assert.Empty(t, got, "%s: neither torn nor shuffled", st.Describe())
			}
			if len(got) > 0 {
				tornStates[blockSize]++
			}
		}
	}
	for _, blockSize := range blockSizes {
		assert.Positive(t, tornStates[blockSize], "block %d: no state tears a write inside a block", blockSize)
	}
	t.Logf("states that tear a write inside a block, by block size: %v of %d", tornStates, len(states))
	// Sectors are never torn: at the sector size nothing is.
	for _, st := range states {
		assert.Empty(t, st.TornWrites(ops, SectorSize))
	}
}

// writeLog is a log of writes and flushes only (one in five ops a flush)
// on an image of nsec sectors, each write 1 to maxSectors sectors long.
// Every sector a write covers names the write's Seq (sectorData), so an
// image says where each of its sectors came from.
func writeLog(seed uint64, nsec, nops, maxSectors int) []Op {
	rng := rand.New(rand.NewPCG(seed, 2))
	var ops []Op
	for len(ops) < nops {
		seq := uint64(len(ops) + 1)
		if rng.IntN(5) == 0 {
			ops = append(ops, Op{Seq: seq, Kind: OpFlush})
			continue
		}
		s := rng.IntN(nsec)
		n := min(1+rng.IntN(maxSectors), nsec-s)
		data := make([]byte, n*SectorSize)
		for i := range n {
			sectorData(data[i*SectorSize:(i+1)*SectorSize], seq, int64(s+i))
		}
		ops = append(ops, Op{Seq: seq, Kind: OpWrite, Off: int64(s) * SectorSize, Len: int64(len(data)), Data: data})
	}
	return ops
}

// imageKinds counts the random crash images of a log by what they did to
// the unflushed writes (Flush < Seq <= Cut), read back from each image.
// A write is torn in an image when some of its sectors hold its data and
// others hold content older than it: it lost a sector to older content.
// A write is overwritten when it was kept and a newer kept write took one
// of its sectors; that is no tear.
type imageKinds struct {
	random     int // random states
	askedTorn  int // random states with Torn set
	torn       int // images tearing some write
	tornStale  int // images in which some write lost a sector to the content from before the last flush: a sector it never wrote
	tornAsked  int // torn images of states with Torn set and Shuffled not
	unasked    int // torn images of states with neither Torn nor Shuffled set
	overwrites int // images in which a kept write was overwritten
	// disagree lists the states whose torn writes, read from the image,
	// are not what TornWrites says for one block the size of the image.
	disagree []string
}

func classifyImages(t *testing.T, ops []Op, states []CrashState, nsec int64) imageKinds {
	t.Helper()
	var k imageKinds
	for _, st := range states {
		if st.Kind != Random {
			continue
		}
		k.random++
		if st.Torn {
			k.askedTorn++
		}
		img := readImage(t, st, ops, nsec*SectorSize)
		var tornSeqs []uint64
		var torn, stale, overwritten bool
		for _, op := range ops {
			if op.Kind != OpWrite || op.Seq <= st.Flush || op.Seq > st.Cut {
				continue
			}
			var own, older, before, newer int
			for sec := op.Off / SectorSize; sec < (op.Off+op.Len)/SectorSize; sec++ {
				switch src := source(t, img[sec*SectorSize:(sec+1)*SectorSize], sec); {
				case src == op.Seq:
					own++
				case src > op.Seq:
					newer++
				default:
					older++
					if src == 0 || src < st.Flush {
						before++
					}
				}
			}
			if own > 0 && older > 0 {
				torn = true
				tornSeqs = append(tornSeqs, op.Seq)
			}
			stale = stale || (own > 0 && before > 0)
			overwritten = overwritten || (st.Includes(op) && newer > 0)
		}
		if torn {
			k.torn++
			switch {
			case st.Torn && !st.Shuffled:
				k.tornAsked++
			case !st.Torn && !st.Shuffled:
				k.unasked++
			}
		}
		if stale {
			k.tornStale++
		}
		if overwritten {
			k.overwrites++
		}
		if want := st.TornWrites(ops, nsec*SectorSize); !reflect.DeepEqual(tornSeqs, want) {
			k.disagree = append(k.disagree, fmt.Sprintf("%s: the image tears %v, TornWrites says %v", st.Describe(), tornSeqs, want))
		}
	}
	return k
}

// tearingProblems says what is wrong with the images of a log whose writes
// span several sectors (tearing: the generator must tear some of them) or
// are each one sector (a sector is never torn).
func tearingProblems(k imageKinds, tearing bool) []string {
	var p []string
	if k.askedTorn == 0 || k.overwrites == 0 {
		p = append(p, fmt.Sprintf("the log exercises too little: %d of %d random states asked to tear, %d images overwrite a kept write", k.askedTorn, k.random, k.overwrites))
	}
	if tearing {
		if k.tornStale == 0 {
			p = append(p, "no image has a write that lost a sector to the content from before the last flush: the generator does not tear")
		}
		if k.tornAsked == 0 {
			p = append(p, fmt.Sprintf("none of the random states with Torn set (and Shuffled not) tears a write (%d images torn in all)", k.torn))
		}
	} else if k.torn != 0 || k.tornStale != 0 {
		p = append(p, fmt.Sprintf("one-sector writes, yet %d images tear a write", k.torn))
	}
	if k.unasked != 0 {
		p = append(p, fmt.Sprintf("%d images of states with neither Torn nor Shuffled set tear a write", k.unasked))
	}
	return append(p, k.disagree...)
}

// tearingImages classifies the 200 random images of a log of 250 ops on 48
// sectors whose writes are 1 to maxSectors sectors long.
func tearingImages(t *testing.T, maxSectors int) imageKinds {
	t.Helper()
	const nsec = 48
	ops := writeLog(11, nsec, 250, maxSectors)
	return classifyImages(t, ops, CrashStates(ops, 200, 5), nsec)
}

// TestGeneratedImagesTearWrites classifies every random crash image of a
// log by reading it back: a write that lost a sector to older content (torn)
// is told apart from a write overwritten by a newer kept write. Writes of
// several sectors must be torn in some images, and torn to the content from
// before the last flush (which only a tear leaves on a kept write's
// sector); writes of one sector never; and the image and TornWrites agree
// on which writes are torn.
func TestGeneratedImagesTearWrites(t *testing.T) {
	for _, tc := range []struct {
		name       string
		maxSectors int
		tearing    bool
	}{
		{"writes of 1 to 6 sectors", 6, true},
		{"writes of one sector", 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := tearingImages(t, tc.maxSectors)
			t.Logf("%+v", k)
			assert.Empty(t, tearingProblems(k, tc.tearing))
			if tc.tearing {
				assert.Positive(t, k.torn)
			} else {
				assert.Zero(t, k.torn)
			}
		})
	}
}

// TestTearingCatchesGeneratorNeverTears: a generator that never tears a
// write still overwrites and reorders writes, which the variety of
// TestRandomStatesAreWithinTheContract counts alike; the classification of
// TestGeneratedImagesTearWrites tells it apart.
func TestTearingCatchesGeneratorNeverTears(t *testing.T) {
	defer mutate.Set(t, mutate.GeneratorNeverTears)()
	k := tearingImages(t, 6)
	t.Logf("%+v", k)
	p := tearingProblems(k, true)
	require.NotEmpty(t, p, "a generator that never tears passes the tearing check")
	assert.Zero(t, k.tornStale)
	assert.Zero(t, k.tornAsked)
	assert.Contains(t, strings.Join(p, "\n"), "the generator does not tear")
	assert.Empty(t, k.disagree, "TornWrites still agrees with the images")
}
