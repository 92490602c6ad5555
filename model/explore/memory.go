package explore

// The memory a search may take (Options.MaxMemory): what the runtime holds
// now, and what the search's tables will allocate before it looks again.

import (
	"math"
	"runtime/debug"
	"runtime/metrics"
	"unsafe"
)

// memGauge measures the memory the Go runtime holds from the operating
// system (runtime/metrics: /memory/classes/total minus heap/released), the
// quantity debug.SetMemoryLimit bounds: the heap with its garbage until it
// is collected, free pages not yet returned, stacks and metadata. Reading
// it does not stop the world and costs about a microsecond.
type memGauge struct {
	samples [2]metrics.Sample
	freed   bool  // fits gave memory back once
	after   int64 // held just after that
}

func (g *memGauge) init() {
	g.samples[0].Name = "/memory/classes/total:bytes"
	g.samples[1].Name = "/memory/classes/heap/released:bytes"
}

func (g *memGauge) held() int64 {
	metrics.Read(g.samples[:])
	var v [2]uint64
	for i := range g.samples {
		if g.samples[i].Value.Kind() == metrics.KindUint64 {
			v[i] = g.samples[i].Value.Uint64()
		}
	}
	if v[0] < v[1] {
		return 0
	}
	return int64(v[0] - v[1])
}

// fits reports whether growth more bytes fit under limit. Before it says
// no, it collects the garbage and returns the free pages to the system
// (debug.FreeOSMemory) and looks again, unless it did so already and the
// memory held has not grown by a sixteenth of the limit since (collecting
// a heap of gigabytes takes a second).
func (g *memGauge) fits(limit, growth int64) bool {
	h := g.held()
	if h+growth <= limit {
		return true
	}
	if g.freed && h < g.after+limit/16 {
		return false
	}
	debug.FreeOSMemory()
	h = g.held()
	g.freed, g.after = true, h
	return h+growth <= limit
}

// growth estimates what the search's tables may allocate while it finds
// the next `states` states. A visited shard that fills past three
// quarters doubles, and the new table is allocated while the old one is
// still in use: when the shards are about as full as each other they all
// double within a few thousand states, so every shard close to its
// doubling counts. The store,
// the parents and the labels take a chunk at a time (and, with collapsed
// states, the store takes new pieces, whose tables grow like the visited
// set: store.growth); with Liveness, so do the edges.
func (e *explorer[S]) growth(states int) int64 {
	var g int64
	// Hashes spread a few thousand states unevenly over the shards, and
	// millions evenly: the mean and four standard deviations.
	mean := float64(states) / nShards
	perShard := int(mean+4*math.Sqrt(mean)) + 64
	for i := range e.vis.shards {
		t := &e.vis.shards[i]
		if t.full(perShard) {
			g += int64(max(16, 2*len(t.slots))) * 8
		}
	}
	r := e.r
	g += int64(states+chunkLen) * (4 + 4) // parent and label
	g += sliceGrowth(len(r.label.table), cap(r.label.table), min(states, 1<<16), int64(unsafe.Sizeof(Label{})))
	if e.opt.Liveness {
		perState := r.Transitions/max(1, r.states.len()) + 1
		g += int64(2*perState*states+chunkLen)*4 + int64(states+chunkLen)*4
	}
	return g + r.states.growth(states)
}

// levelBytes is what numbering and storing n new states of a parallel
// level takes: the order of the level, the store's chunks for them, and
// growth for n states.
func (e *explorer[S]) levelBytes(n int) int64 {
	return int64(n)*(8+e.r.states.perState()) + e.growth(n)
}

// pendBytes is about what the n new states of a level hold in e.pend until
// they are numbered: a hash, the state or its vector and new pieces, its
// metadata, its id and two index slots; the next doubling of the shards
// takes as much again.
func (e *explorer[S]) pendBytes(n int) int64 {
	per := 8 + e.r.states.perState() + int64(unsafe.Sizeof(pendMeta{})) + 4 + 16
	return 2 * (int64(n)*per + e.r.states.newPieceBytes(n))
}

// livenessBytes is what blockedForever allocates for n states, the given
// number of edges and actors: the predecessors in two flat slices, and per
// state its unfinished actors (a byte for at most 8 actors), a flag and a
// queue slot.
func livenessBytes(n, edges, actors int) int64 {
	unfinished := int64(8)
	if actors <= 8 {
		unfinished = 1
	}
	return int64(n)*(4+unfinished+1+4) + int64(edges)*4
}

// sliceGrowth is what appending more elements of elem bytes to a slice of
// length n and capacity c allocates: nothing while they fit, else the new
// array (append doubles small slices, then grows by about a quarter:
// runtime.growslice).
func sliceGrowth(n, c, more int, elem int64) int64 {
	need := n + more
	if need <= c {
		return 0
	}
	nc := c
	for nc < need {
		if nc < 256 {
			nc = max(2*nc, 1)
		} else {
			nc += (nc + 3*256) / 4
		}
	}
	return int64(nc) * elem
}
