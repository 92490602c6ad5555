package spec

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// renaming is the renaming a test hands to Permute, applied by hand to what
// the contract's queries return, so that the test does not trust Permute's
// own helpers. Numbers it does not cover (0 = initial content, a write or
// flush not submitted yet) are left alone: that is the identity extension
// a later submission gets.
type renaming struct{ w, f []uint8 }

func (r renaming) write(w int) int {
	if w < 1 || w > len(r.w) {
		return w
	}
	return int(r.w[w-1]) + 1
}

func (r renaming) flush(f int) int {
	if f < 1 || f > len(r.f) {
		return f
	}
	return int(r.f[f-1]) + 1
}

// writes renames a bit mask over writes.
func (r renaming) writes(m uint32) uint32 {
	var out uint32
	for i := 0; i < MaxWrites; i++ {
		if m&(1<<i) != 0 {
			out |= 1 << (r.write(i+1) - 1)
		}
	}
	return out
}

func (r renaming) crashSet(s CrashSet) CrashSet {
	return CrashSet{Writes: r.writes(s.Writes), Initial: s.Initial}
}

func (r renaming) event(e Event) Event {
	switch {
	case e.Kind.IsWrite(): // WriteLand included
		e.ID = r.write(e.ID)
	case e.Kind.IsFlush():
		e.ID = r.flush(e.ID)
	case e.Kind == Read:
		e.Value = r.write(e.Value) // the write whose data was read
	}
	return e
}

var commandName = regexp.MustCompile(`\b([WF])(\d+)\b`)

// obligation renames the durable write and the command named in By
// ("flush F2", "the preflush of write W3", ...).
func (r renaming) obligation(o Obligation) Obligation {
	o.Write = r.write(o.Write)
	o.By = commandName.ReplaceAllStringFunc(o.By, func(s string) string {
		n, _ := strconv.Atoi(s[1:])
		if s[0] == 'W' {
			return fmt.Sprintf("W%d", r.write(n))
		}
		return fmt.Sprintf("F%d", r.flush(n))
	})
	return o
}

// extend covers the commands c has and r does not (a write or flush just
// submitted) with the identity.
func (r renaming) extend(c *Contract) renaming {
	w, f := append([]uint8(nil), r.w...), append([]uint8(nil), r.f...)
	for len(w) < c.Writes() {
		w = append(w, uint8(len(w)))
	}
	for len(f) < c.Flushes() {
		f = append(f, uint8(len(f)))
	}
	return renaming{w, f}
}

func (r renaming) inverse() renaming {
	inv := func(p []uint8) []uint8 {
		q := make([]uint8, len(p))
		for i, n := range p {
			q[n] = uint8(i)
		}
		return q
	}
	return renaming{inv(r.w), inv(r.f)}
}

func identityPerm(n int) []uint8 {
	p := make([]uint8, n)
	for i := range p {
		p[i] = uint8(i)
	}
	return p
}

// permBlocks is the number of blocks the random histories write: few, so
// that writes overlap and a flush or preflush covers writes to other blocks.
const permBlocks = 3

// possibleEvents lists the events c takes next: a new write (to blocks,
// with the given flags), a new flush, each WriteLand, and every device
// event with failures. The crash is left out: it ends the history, so the
// caller decides when it comes.
func possibleEvents(c *Contract, blocks uint8, fua, preflush bool) []Event {
	var evs []Event
	if c.Writes() < MaxWrites {
		evs = append(evs, Event{Kind: WriteSubmit, ID: c.Writes() + 1, Blocks: blocks, FUA: fua, Preflush: preflush})
	}
	if c.Flushes() < MaxFlushes {
		evs = append(evs, Event{Kind: FlushSubmit, ID: c.Flushes() + 1})
	}
	for w := 1; w <= c.Writes(); w++ {
		e := Event{Kind: WriteLand, ID: w, Blocks: c.WriteBlocks(w)}
		if next := *c; next.Apply(e) == nil {
			evs = append(evs, e)
		}
	}
	c.DeviceEvents(true, func(e Event) { evs = append(evs, e) })
	return evs
}

// drawHistory draws a device config and a valid history for it, choosing
// each event among those possible at that point, and sometimes ends it with
// a crash.
func drawHistory(t *rapid.T) (Contract, []Event) {
	c := NewContract(rapid.SampledFrom(Configs()).Draw(t, "config"))
	var hist []Event
	for range rapid.IntRange(0, 40).Draw(t, "steps") {
		evs := possibleEvents(&c,
			uint8(rapid.IntRange(1, 1<<permBlocks-1).Draw(t, "blocks")),
			rapid.Bool().Draw(t, "fua"), rapid.Bool().Draw(t, "preflush"))
		e := rapid.SampledFrom(evs).Draw(t, "event")
		require.NoError(t, c.Apply(e), "history %v: %v", hist, e)
		hist = append(hist, e)
	}
	if rapid.IntRange(0, 4).Draw(t, "crash") == 0 {
		require.NoError(t, c.Apply(Event{Kind: Crash}))
		hist = append(hist, Event{Kind: Crash})
	}
	return c, hist
}

// candidateEvents lists events to try after c, possible or not: every kind
// with every number from 0 to one past the next (for a read, as the write
// read), a submission to blocks with each combination of flags, and one to
// no block.
func candidateEvents(c *Contract, blocks uint8) []Event {
	var evs []Event
	for k := WriteSubmit; k <= WritePreflushed; k++ {
		n := c.Writes()
		if k.IsFlush() {
			n = c.Flushes()
		}
		for id := 0; id <= n+2; id++ {
			if k == Read {
				evs = append(evs, Event{Kind: k, Blocks: blocks, Value: id})
				continue
			}
			if k != WriteSubmit {
				evs = append(evs, Event{Kind: k, ID: id, Blocks: blocks})
				continue
			}
			for fl := 0; fl < 4; fl++ {
				evs = append(evs, Event{Kind: k, ID: id, Blocks: blocks, FUA: fl&1 != 0, Preflush: fl&2 != 0})
			}
			evs = append(evs, Event{Kind: k, ID: id})
		}
	}
	return evs
}

// checkRenamed checks that p is c renamed by r: every query of p answers
// what the same query of c answers, renamed.
func checkRenamed(t require.TestingT, c, p *Contract, r renaming, hist []Event) {
	require.Equal(t, c.Config(), p.Config())
	require.Equal(t, c.Crashed(), p.Crashed())
	require.Equal(t, c.Writes(), p.Writes())
	require.Equal(t, c.Flushes(), p.Flushes())
	for b := 0; b < MaxBlocks; b++ {
		require.Equal(t, r.crashSet(c.Allowed(b)), p.Allowed(b), "history %v, renaming %v: Allowed(b%d)", hist, r, b)
	}

	var want []Obligation
	for _, o := range c.Obligations() {
		want = append(want, r.obligation(o))
	}
	require.ElementsMatch(t, want, p.Obligations(), "history %v, renaming %v: obligations", hist, r)

	for _, failures := range []bool{false, true} {
		var want, got []Event
		c.DeviceEvents(failures, func(e Event) { want = append(want, r.event(e)) })
		p.DeviceEvents(failures, func(e Event) { got = append(got, e) })
		require.ElementsMatch(t, want, got, "history %v, renaming %v: device events (failures %v)", hist, r, failures)
	}

	for w := 0; w <= c.Writes()+1; w++ {
		ended, failed := c.WriteEnded(w)
		pEnded, pFailed := p.WriteEnded(r.write(w))
		require.Equal(t, [2]bool{ended, failed}, [2]bool{pEnded, pFailed}, "history %v, renaming %v: WriteEnded(W%d)", hist, r, w)
		require.Equal(t, c.Durable(w), p.Durable(r.write(w)), "history %v, renaming %v: Durable(W%d)", hist, r, w)
		require.Equal(t, c.WriteBlocks(w), p.WriteBlocks(r.write(w)), "history %v, renaming %v: WriteBlocks(W%d)", hist, r, w)
		require.Equal(t, c.WriteKey(w), p.WriteKey(r.write(w)), "history %v, renaming %v: WriteKey(W%d)", hist, r, w)
		for b := 0; b < MaxBlocks; b++ {
			// The message names the obligation found first in write
			// order, which the renaming may change; whether one is
			// broken may not.
			require.Equal(t, c.Broken(b, w) == "", p.Broken(b, r.write(w)) == "", "history %v, renaming %v: Broken(b%d, W%d)", hist, r, b, w)
		}
		if w == 0 || w > c.Writes() {
			continue
		}
		for w1 := 0; w1 <= c.Writes(); w1++ {
			require.Equal(t, c.OrderedBefore(w1, w), p.OrderedBefore(r.write(w1), r.write(w)), "history %v, renaming %v: OrderedBefore(%d, W%d)", hist, r, w1, w)
		}
	}
	for f := 0; f <= c.Flushes()+1; f++ {
		ended, failed := c.FlushEnded(f)
		pEnded, pFailed := p.FlushEnded(r.flush(f))
		require.Equal(t, [2]bool{ended, failed}, [2]bool{pEnded, pFailed}, "history %v, renaming %v: FlushEnded(F%d)", hist, r, f)
		require.Equal(t, c.FlushKey(f), p.FlushKey(r.flush(f)), "history %v, renaming %v: FlushKey(F%d)", hist, r, f)
	}
}

// TestPermuteCommutes: renaming the writes and flushes of a random history
// commutes with every query and with every later event, possible or not;
// the identity renaming changes nothing, and the inverse renaming undoes a
// renaming exactly.
func TestPermuteCommutes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c, hist := drawHistory(t)
		r := renaming{
			w: rapid.Permutation(identityPerm(c.Writes())).Draw(t, "wperm"),
			f: rapid.Permutation(identityPerm(c.Flushes())).Draw(t, "fperm"),
		}
		require.Equal(t, c, c.Permute(identityPerm(c.Writes()), identityPerm(c.Flushes())), "history %v: identity renaming", hist)
		p := c.Permute(r.w, r.f)
		inv := r.inverse()
		require.Equal(t, c, p.Permute(inv.w, inv.f), "history %v: renaming %v, then its inverse", hist, r)
		checkRenamed(t, &c, &p, r, hist)

		blocks := uint8(rapid.IntRange(1, 1<<permBlocks-1).Draw(t, "next blocks"))
		for _, e := range candidateEvents(&c, blocks) {
			next, pNext := c, p
			err, pErr := next.Apply(e), pNext.Apply(r.event(e))
			require.Equal(t, err == nil, pErr == nil, "history %v, renaming %v: %v gives %v, renamed %v gives %v", hist, r, e, err, r.event(e), pErr)
			if err != nil {
				continue
			}
			r2 := r.extend(&next)
			require.Equal(t, next.Permute(r2.w, r2.f), pNext, "history %v, renaming %v: then %v", hist, r, e)
		}
	})
}

// TestPermuteSwapsTasks: the case Permute is for. Task A writes b0 with
// FUA and flushes, task B writes b1 and flushes; each pair of submissions
// comes back to back, in either order, so whichever task submits first
// gets W1 (F1). The two histories give different contracts, and renaming
// one gives the other exactly; keys pair the commands of the two.
func TestPermuteSwapsTasks(t *testing.T) {
	aFirst := apply(t, cacheEmu,
		ws(1, 1, true), ws(2, 2, false), ev(WriteComplete, 2), ev(WriteDataDone, 1),
		ev(FlushSubmit, 1), ev(FlushSubmit, 2), ev(WriteComplete, 1), ev(FlushComplete, 2))
	bFirst := apply(t, cacheEmu,
		ws(1, 2, false), ws(2, 1, true), ev(WriteComplete, 1), ev(WriteDataDone, 2),
		ev(FlushSubmit, 1), ev(FlushSubmit, 2), ev(WriteComplete, 2), ev(FlushComplete, 1))
	swap := []uint8{1, 0}
	require.NotEqual(t, aFirst, bFirst)
	assert.Equal(t, bFirst, aFirst.Permute(swap, swap))
	assert.Equal(t, aFirst, bFirst.Permute(swap, swap))
	for i := 1; i <= 2; i++ {
		assert.Equal(t, aFirst.WriteKey(i), bFirst.WriteKey(3-i), "W%d", i)
		assert.Equal(t, aFirst.FlushKey(i), bFirst.FlushKey(3-i), "F%d", i)
	}
	assert.NotEqual(t, aFirst.WriteKey(1), aFirst.WriteKey(2), "FUA on b0 vs plain on b1")
	assert.NotEqual(t, aFirst.FlushKey(1), aFirst.FlushKey(2), "F1 in flight, F2 completed")
	assert.Equal(t, uint64(0), aFirst.WriteKey(3), "no W3")
	assert.Equal(t, uint64(0), aFirst.FlushKey(3), "no F3")
}

// TestPermuteKeysIgnoreRelations: keys summarise a command's own state, so
// two writes that differ only in what is ordered before them share a key.
func TestPermuteKeysIgnoreRelations(t *testing.T) {
	c := apply(t, cacheFUA, ws(1, 1, false), ev(WriteComplete, 1), ws(2, 1, false), ws(3, 1, false), ev(WriteComplete, 2))
	// W2 and W3 were both submitted after W1 ended; W2 is ended, W3 not.
	assert.NotEqual(t, c.WriteKey(2), c.WriteKey(3))
	c = apply(t, cacheFUA, ws(1, 1, false), ws(2, 1, false), ev(WriteComplete, 1), ws(3, 1, false))
	// W2 and W3 are both in flight on b0, but only W3 is ordered after W1.
	assert.Equal(t, c.WriteKey(2), c.WriteKey(3))
	assert.False(t, c.OrderedBefore(1, 2))
	assert.True(t, c.OrderedBefore(1, 3))
}

func TestPermutePanics(t *testing.T) {
	c := apply(t, cacheFUA, ws(1, 1, false), ws(2, 2, false), ev(FlushSubmit, 1))
	for _, tc := range []struct {
		name string
		w, f []uint8
	}{
		{"too few write numbers", []uint8{0}, []uint8{0}},
		{"too many write numbers", []uint8{0, 1, 2}, []uint8{0}},
		{"too few flush numbers", []uint8{0, 1}, nil},
		{"two writes renamed alike", []uint8{1, 1}, []uint8{0}},
		{"write number out of range", []uint8{0, 2}, []uint8{0}},
		{"flush number out of range", []uint8{0, 1}, []uint8{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Panics(t, func() { c.Permute(tc.w, tc.f) })
		})
	}
	assert.NotPanics(t, func() { c.Permute([]uint8{1, 0}, []uint8{0}) })
}
