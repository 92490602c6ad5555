package spec

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// forgetCase is a random history (drawHistory: several blocks, multi-block
// writes, flags, failures, sometimes a crash) with everything the
// properties below choose after it, all drawn up front, so that the
// breakage test can replay the same cases (forgetCases.Example) against a
// broken Normalized or Forget.
type forgetCase struct {
	c      Contract
	hist   []Event
	wperm  []uint8 // a renaming of c's writes and flushes
	fperm  []uint8
	bperm  [MaxBlocks]uint8 // a renaming of the blocks
	blocks uint8            // the blocks of the candidate submissions
	next   []nextStep       // a later history, chosen step by step
}

// nextStep chooses one later event among those possible then.
type nextStep struct {
	blocks        uint8
	fua, preflush bool
	pick          int
	crash         bool
}

var forgetCases = rapid.Custom(func(t *rapid.T) forgetCase {
	c, hist := drawHistory(t)
	fc := forgetCase{c: c, hist: hist}
	fc.wperm = rapid.Permutation(identityPerm(c.Writes())).Draw(t, "wperm")
	fc.fperm = rapid.Permutation(identityPerm(c.Flushes())).Draw(t, "fperm")
	for i, p := range rapid.Permutation(identityPerm(MaxBlocks)).Draw(t, "bperm") {
		fc.bperm[i] = p
	}
	fc.blocks = uint8(rapid.IntRange(1, 1<<permBlocks-1).Draw(t, "next blocks"))
	for range rapid.IntRange(0, 8).Draw(t, "later steps") {
		fc.next = append(fc.next, nextStep{
			blocks:   uint8(rapid.IntRange(1, 1<<permBlocks-1).Draw(t, "later blocks")),
			fua:      rapid.Bool().Draw(t, "later fua"),
			preflush: rapid.Bool().Draw(t, "later preflush"),
			pick:     rapid.IntRange(0, 1<<16).Draw(t, "later pick"),
			crash:    rapid.IntRange(0, 15).Draw(t, "later crash") == 0,
		})
	}
	return fc
})

// pickEvent is the event step chooses after o: a crash, or one of the
// events possible then (after a crash, a read).
func pickEvent(o *Contract, step nextStep) Event {
	if o.Crashed() {
		return Event{Kind: Read, Blocks: step.blocks &^ (step.blocks - 1), Value: step.pick % (o.Writes() + 1)}
	}
	if step.crash {
		return Event{Kind: Crash}
	}
	evs := possibleEvents(o, step.blocks, step.fua, step.preflush)
	return evs[step.pick%len(evs)]
}

// forgetter is an implementation of Normalized and Forget: the real one,
// or one broken on purpose (TestForgetBreakages).
type forgetter struct {
	normalized func(*Contract) Contract
	forget     func(*Contract) (Contract, []uint8, []uint8)
}

var realForgetter = forgetter{(*Contract).Normalized, (*Contract).Forget}

// numbering maps an original contract's writes and flushes to a forgotten
// one's (0xff: dropped). Numbers beyond the original's (commands not
// submitted yet) follow the forgotten contract's: the next write of one is
// the next write of the other.
type numbering struct {
	w, f   []uint8
	gw, gf int // the forgotten contract's counts
}

func identityNumbering(c *Contract) numbering {
	return numbering{identityPerm(c.Writes()), identityPerm(c.Flushes()), c.Writes(), c.Flushes()}
}

// write returns the forgotten number of write w, or -1 if w was dropped.
func (n numbering) write(w int) int {
	switch {
	case w < 1:
		return w
	case w > len(n.w):
		return w - len(n.w) + n.gw
	case n.w[w-1] == 0xff:
		return -1
	}
	return int(n.w[w-1]) + 1
}

func (n numbering) flush(f int) int {
	switch {
	case f < 1:
		return f
	case f > len(n.f):
		return f - len(n.f) + n.gf
	case n.f[f-1] == 0xff:
		return -1
	}
	return int(n.f[f-1]) + 1
}

// event renames e; false if it names a dropped command.
func (n numbering) event(e Event) (Event, bool) {
	switch {
	case e.Kind.IsWrite():
		e.ID = n.write(e.ID)
		return e, e.ID >= 0
	case e.Kind.IsFlush():
		e.ID = n.flush(e.ID)
		return e, e.ID >= 0
	case e.Kind == Read: // ignored by the contract: a dropped write reads as 0
		e.Value = max(n.write(e.Value), 0)
	}
	return e, true
}

// writes renames a bit mask over writes; false if it has a dropped write.
func (n numbering) writes(m uint32) (uint32, bool) {
	var out uint32
	for i := 0; i < MaxWrites; i++ {
		if m&(1<<i) != 0 {
			w := n.write(i + 1)
			if w < 0 {
				return 0, false
			}
			out |= 1 << (w - 1)
		}
	}
	return out, true
}

// then composes n with m, a numbering of n's forgotten contract (after
// events added commands to both: n covers the original's commands
// o.Writes(), o.Flushes() by then).
func (n numbering) then(m numbering, oWrites, oFlushes int) numbering {
	out := numbering{w: []uint8{}, f: []uint8{}, gw: m.gw, gf: m.gf}
	for w := 1; w <= oWrites; w++ {
		v := n.write(w)
		if v >= 0 {
			v = m.write(v)
		}
		if v < 0 {
			out.w = append(out.w, 0xff)
		} else {
			out.w = append(out.w, uint8(v-1))
		}
	}
	for f := 1; f <= oFlushes; f++ {
		v := n.flush(f)
		if v >= 0 {
			v = m.flush(v)
		}
		if v < 0 {
			out.f = append(out.f, 0xff)
		} else {
			out.f = append(out.f, uint8(v-1))
		}
	}
	return out
}

// text renames the commands named in an obligation's By; false if it
// names a dropped one.
func (n numbering) text(s string) (string, bool) {
	ok := true
	s = commandName.ReplaceAllStringFunc(s, func(x string) string {
		k, _ := strconv.Atoi(x[1:])
		if x[0] == 'W' {
			k = n.write(k)
		} else {
			k = n.flush(k)
		}
		ok = ok && k >= 0
		return fmt.Sprintf("%c%d", x[0], k)
	})
	return s, ok
}

// survives is the checker's question: is write w durable, or ordered
// before a durable write to block b (its data or newer survives on b)?
func survives(c *Contract, w, b int) bool {
	if c.Durable(w) {
		return true
	}
	for d := 1; d <= c.Writes(); d++ {
		if c.WriteBlocks(d)&(1<<b) != 0 && c.Durable(d) && c.OrderedBefore(w, d) {
			return true
		}
	}
	return false
}

// mayBecomeDurable: the writes whose orderedBefore Normalized promises to
// keep (for the writes sharing a block with it).
func mayBecomeDurable(c *Contract, w int) bool {
	if c.Durable(w) {
		return true
	}
	i := w - 1
	return !c.crashed && (c.completed&(1<<i) != 0 || c.wState[i] == cmdInFlight)
}

// checkAgree checks that g answers what o answers, renamed by n: g is o
// normalized (exact: Obligations and Broken texts too) or forgotten (the
// dropped commands are ended, the dropped writes superseded on each of
// their blocks; texts naming a dropped command are the marker's).
func checkAgree(t require.TestingT, o, g *Contract, n numbering, exact bool, ctx string) {
	require.Equal(t, o.Config(), g.Config(), ctx)
	require.Equal(t, o.Crashed(), g.Crashed(), ctx)
	require.Equal(t, n.gw, g.Writes(), ctx)
	require.Equal(t, n.gf, g.Flushes(), ctx)
	require.Len(t, n.w, o.Writes(), ctx)
	require.Len(t, n.f, o.Flushes(), ctx)
	next := 0
	for w := 1; w <= o.Writes(); w++ {
		v := n.write(w)
		if v < 0 {
			ended, _ := o.WriteEnded(w)
			require.True(t, ended, "%s: dropped W%d has not ended", ctx, w)
			for bm := o.WriteBlocks(w); bm != 0; bm &= bm - 1 {
				b := lowBit8(bm)
				require.True(t, survives(o, w, b), "%s: dropped W%d does not survive on b%d", ctx, w, b)
			}
			continue
		}
		next++
		require.Equal(t, next, v, "%s: W%d is not numbered in order", ctx, w)
	}
	require.Equal(t, g.Writes(), next, ctx)
	next = 0
	for f := 1; f <= o.Flushes(); f++ {
		v := n.flush(f)
		if v < 0 {
			ended, _ := o.FlushEnded(f)
			require.True(t, ended, "%s: dropped F%d has not ended", ctx, f)
			continue
		}
		next++
		require.Equal(t, next, v, "%s: F%d is not numbered in order", ctx, f)
	}
	require.Equal(t, g.Flushes(), next, ctx)

	for b := 0; b < MaxBlocks; b++ {
		a := o.Allowed(b)
		ws, ok := n.writes(a.Writes)
		require.True(t, ok, "%s: Allowed(b%d) = %v has a dropped write", ctx, b, a)
		require.Equal(t, CrashSet{Writes: ws, Initial: a.Initial}, g.Allowed(b), "%s: Allowed(b%d)", ctx, b)
	}
	for _, failures := range []bool{false, true} {
		var want, got []Event
		o.DeviceEvents(failures, func(e Event) {
			r, ok := n.event(e)
			require.True(t, ok, "%s: device event %v names a dropped command", ctx, e)
			want = append(want, r)
		})
		g.DeviceEvents(failures, func(e Event) { got = append(got, e) })
		require.ElementsMatch(t, want, got, "%s: device events (failures %v)", ctx, failures)
	}
	for w := 0; w <= o.Writes()+1; w++ {
		v := n.write(w)
		if v < 0 {
			continue
		}
		e1, f1 := o.WriteEnded(w)
		e2, f2 := g.WriteEnded(v)
		require.Equal(t, [2]bool{e1, f1}, [2]bool{e2, f2}, "%s: WriteEnded(W%d)", ctx, w)
		require.Equal(t, o.Durable(w), g.Durable(v), "%s: Durable(W%d)", ctx, w)
		require.Equal(t, o.WriteBlocks(w), g.WriteBlocks(v), "%s: WriteBlocks(W%d)", ctx, w)
		for b := 0; b < MaxBlocks; b++ {
			if o.WriteBlocks(w)&(1<<b) != 0 {
				require.Equal(t, survives(o, w, b), survives(g, v, b), "%s: W%d survives on b%d", ctx, w, b)
			}
			bo, bg := o.Broken(b, w), g.Broken(b, v)
			if exact {
				require.Equal(t, bo, bg, "%s: Broken(b%d, W%d)", ctx, b, w)
			} else {
				require.Equal(t, bo == "", bg == "", "%s: Broken(b%d, W%d): %q, forgotten %q", ctx, b, w, bo, bg)
			}
		}
		if w == 0 || w > o.Writes() || !mayBecomeDurable(o, w) {
			continue
		}
		for w1 := 0; w1 <= o.Writes(); w1++ {
			v1 := n.write(w1)
			if v1 < 0 || w1 > 0 && o.WriteBlocks(w1)&o.WriteBlocks(w) == 0 {
				continue
			}
			require.Equal(t, o.OrderedBefore(w1, w), g.OrderedBefore(v1, v), "%s: OrderedBefore(W%d, W%d)", ctx, w1, w)
		}
	}
	for f := 0; f <= o.Flushes()+1; f++ {
		v := n.flush(f)
		if v < 0 {
			continue
		}
		e1, f1 := o.FlushEnded(f)
		e2, f2 := g.FlushEnded(v)
		require.Equal(t, [2]bool{e1, f1}, [2]bool{e2, f2}, "%s: FlushEnded(F%d)", ctx, f)
	}

	if exact {
		require.Equal(t, o.Obligations(), g.Obligations(), "%s: obligations", ctx)
		return
	}
	type pair struct{ w, b int }
	var want, got []pair
	for _, ob := range o.Obligations() {
		if v := n.write(ob.Write); v >= 0 {
			want = append(want, pair{v, ob.Block})
		}
	}
	byText := map[int]string{}
	for _, ob := range o.Obligations() {
		if v := n.write(ob.Write); v >= 0 {
			byText[v] = ob.By
		}
	}
	for _, ob := range g.Obligations() {
		got = append(got, pair{ob.Write, ob.Block})
		if g.durableBy[ob.Write-1] == durableByForgotten {
			continue // TestForgetMarker checks its text
		}
		s, ok := n.text(byText[ob.Write])
		require.True(t, ok, "%s: W%d durable by %q, a dropped command, not marked forgotten", ctx, ob.Write, byText[ob.Write])
		require.Equal(t, s, ob.By, "%s: W%d durable by", ctx, ob.Write)
	}
	require.ElementsMatch(t, want, got, "%s: obligations", ctx)
}

func lowBit8(m uint8) int {
	for b := 0; b < 8; b++ {
		if m&(1<<b) != 0 {
			return b
		}
	}
	return -1
}

// propNormalized: Normalized is idempotent, answers every query as the
// original does, commutes with renaming writes, flushes and blocks, and
// with every later event, possible or not; and the two stay in agreement
// through a later history.
func propNormalized(t require.TestingT, fc forgetCase, f forgetter) {
	c := fc.c
	n := f.normalized(&c)
	ctx := fmt.Sprintf("history %v", fc.hist)
	if nn := f.normalized(&n); nn != n {
		require.Equal(t, n, nn, "%s: Normalized twice", ctx)
	}
	checkAgree(t, &c, &n, identityNumbering(&c), true, ctx)

	p, np := c.Permute(fc.wperm, fc.fperm), n.Permute(fc.wperm, fc.fperm)
	if pn := f.normalized(&p); pn != np {
		require.Equal(t, np, pn, "%s: Normalized and Permute(%v, %v)", ctx, fc.wperm, fc.fperm)
	}
	p, np = c.PermuteBlocks(&fc.bperm), n.PermuteBlocks(&fc.bperm)
	if pn := f.normalized(&p); pn != np {
		require.Equal(t, np, pn, "%s: Normalized and PermuteBlocks(%v)", ctx, fc.bperm)
	}

	for _, e := range candidateEvents(&c, fc.blocks) {
		c2, n2 := c, n
		err1, err2 := c2.Apply(e), n2.Apply(e)
		require.Equal(t, err1 == nil, err2 == nil, "%s: %v gives %v, normalized %v", ctx, e, err1, err2)
		if err1 != nil {
			continue
		}
		if a, b := f.normalized(&c2), f.normalized(&n2); a != b {
			require.Equal(t, a, b, "%s: then %v: Normalized does not commute", ctx, e)
		}
	}

	o, m := c, n
	for k, step := range fc.next {
		e := pickEvent(&o, step)
		ctx := fmt.Sprintf("%s, then %v (later step %d)", ctx, e, k)
		require.NoError(t, o.Apply(e), ctx)
		require.NoError(t, m.Apply(e), ctx)
		m = f.normalized(&m)
		checkAgree(t, &o, &m, identityNumbering(&o), true, ctx)
	}
}

// forgetNumbering is the numbering Forget's maps give.
func forgetNumbering(g *Contract, wm, fm []uint8) numbering {
	return numbering{wm, fm, g.Writes(), g.Flushes()}
}

// propForget: Forget drops only ended commands and writes superseded on
// each of their blocks, numbers the rest in order, gives a normalized
// contract that Forget leaves alone, and answers every query about a kept
// command as the original does; every later event, renamed, is accepted
// by both or refused by both, and forgetting after it gives the same
// contract whichever of the two it was applied to; through a later
// history forgotten at each step the two stay in agreement.
func propForget(t require.TestingT, fc forgetCase, f forgetter) {
	c := fc.c
	ctx := fmt.Sprintf("history %v", fc.hist)
	g, wm, fm := f.forget(&c)
	num := forgetNumbering(&g, wm, fm)
	if gn := f.normalized(&g); gn != g {
		require.Equal(t, g, gn, "%s: Forget is not normalized", ctx)
	}
	g2, wm2, fm2 := f.forget(&g)
	if g2 != g {
		require.Equal(t, g, g2, "%s: Forget twice", ctx)
	}
	require.Equal(t, identityPerm(g.Writes()), wm2, "%s: Forget twice", ctx)
	require.Equal(t, identityPerm(g.Flushes()), fm2, "%s: Forget twice", ctx)
	checkAgree(t, &c, &g, num, false, ctx)

	for _, e := range candidateEvents(&c, fc.blocks) {
		if e.Kind == WriteSubmit && c.Writes() >= MaxWrites || e.Kind == FlushSubmit && c.Flushes() >= MaxFlushes {
			continue // the forgotten contract has room for more
		}
		c2, g2 := c, g
		err1 := c2.Apply(e)
		r, ok := num.event(e)
		if !ok {
			require.Error(t, err1, "%s: %v names a dropped command, yet is accepted", ctx, e)
			continue
		}
		err2 := g2.Apply(r)
		require.Equal(t, err1 == nil, err2 == nil, "%s: %v gives %v, forgotten %v gives %v", ctx, e, err1, r, err2)
		if err1 != nil {
			continue
		}
		a, wa, fa := f.forget(&c2)
		b, wb, fb := f.forget(&g2)
		if a != b {
			require.Equal(t, a, b, "%s: then %v: Forget does not commute", ctx, e)
		}
		n2 := num.then(forgetNumbering(&b, wb, fb), c2.Writes(), c2.Flushes())
		require.Equal(t, wa, n2.w, "%s: then %v: write numbers", ctx, e)
		require.Equal(t, fa, n2.f, "%s: then %v: flush numbers", ctx, e)
	}

	o := c
	for k, step := range fc.next {
		e := pickEvent(&o, step)
		ctx := fmt.Sprintf("%s, then %v (later step %d)", ctx, e, k)
		r, ok := num.event(e)
		require.True(t, ok, "%s: a possible event names a dropped command", ctx)
		require.NoError(t, o.Apply(e), ctx)
		require.NoError(t, g.Apply(r), ctx)
		var wm, fm []uint8
		g, wm, fm = f.forget(&g)
		num = num.then(forgetNumbering(&g, wm, fm), o.Writes(), o.Flushes())
		checkAgree(t, &o, &g, num, false, ctx)
		a, wa, fa := f.forget(&o)
		if a != g {
			require.Equal(t, a, g, "%s: forgetting at each step differs from forgetting at the end", ctx)
		}
		require.Equal(t, wa, num.w, ctx)
		require.Equal(t, fa, num.f, ctx)
	}
}

func TestNormalizedAgrees(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { propNormalized(t, forgetCases.Draw(t, "case"), realForgetter) })
}

func TestForgetAgrees(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { propForget(t, forgetCases.Draw(t, "case"), realForgetter) })
}

// mergeCase is two histories that reach the same future through different
// pasts: Normalized (or, with forget, only Forget) must make them one
// value. In unlikeCases the two must stay apart.
type mergeCase struct {
	name   string
	cfg    Config
	a, b   []Event
	forget bool // only Forget merges them
}

var mergeCases = []mergeCase{
	{name: "cover of an ended flush", cfg: cacheFUA,
		// F1 covers W1 or not; W1 is durable by its FUA completion either way.
		a: []Event{ws(1, 1, true), ev(WriteComplete, 1), ev(FlushSubmit, 1), ev(FlushComplete, 1)},
		b: []Event{ev(FlushSubmit, 1), ws(1, 1, true), ev(WriteComplete, 1), ev(FlushComplete, 1)}},
	{name: "durable write in a pending cover", cfg: cacheFUA,
		a: []Event{ws(1, 1, true), ev(WriteComplete, 1), ev(FlushSubmit, 1)},
		b: []Event{ev(FlushSubmit, 1), ws(1, 1, true), ev(WriteComplete, 1)}},
	{name: "order across blocks", cfg: cacheFUA,
		a: []Event{ws(1, 1, false), ev(WriteComplete, 1), ws(2, 2, false)},
		b: []Event{ws(1, 1, false), ws(2, 2, false), ev(WriteComplete, 1)}},
	{name: "order before a write that failed in flight", cfg: cacheFUA,
		a: []Event{ws(1, 1, false), ev(WriteComplete, 1), ws(2, 1, false), ev(WriteFail, 2)},
		b: []Event{ws(1, 1, false), ws(2, 1, false), ev(WriteComplete, 1), ev(WriteFail, 2)}},
	{name: "order before a write whose preflush is in flight", cfg: cacheFUA,
		a: []Event{ws(1, 1, true), ev(WriteComplete, 1), wp(2, 1, false)},
		b: []Event{ws(1, 1, true), wp(2, 1, false), ev(WriteComplete, 1)}},
	{name: "post-flush cover of a completed FUA write", cfg: cacheEmu,
		// W2's post-flush covers W1 or not; F1 made W1 durable anyway.
		a: []Event{ws(1, 2, false), ev(WriteComplete, 1), ev(FlushSubmit, 1), ev(FlushComplete, 1),
			ws(2, 1, true), ev(WriteDataDone, 2), ev(WriteComplete, 2)},
		b: []Event{ws(1, 2, false), ev(WriteComplete, 1), ev(FlushSubmit, 1), ev(FlushComplete, 1),
			ws(2, 1, true), ev(WriteComplete, 2)}},
	{name: "durable writes in a pending post-flush cover", cfg: cacheEmu,
		// W2's post-flush covers W1 or not; F1 made both durable.
		a: []Event{ws(1, 2, false), ev(WriteComplete, 1), ws(2, 1, true), ev(WriteDataDone, 2),
			ev(FlushSubmit, 1), ev(FlushComplete, 1)},
		b: []Event{ws(1, 2, false), ws(2, 1, true), ev(WriteDataDone, 2), ev(WriteComplete, 1),
			ev(FlushSubmit, 1), ev(FlushComplete, 1)}},
	{name: "durable write in a pending preflush cover", cfg: cacheFUA,
		a: []Event{ws(1, 2, true), ev(WriteComplete, 1), wp(2, 1, false)},
		b: []Event{ws(1, 2, true), wp(2, 1, false), ev(WriteComplete, 1)}},
	{name: "cover of a completed preflush", cfg: cacheFUA,
		a: []Event{ws(1, 2, true), ev(WriteComplete, 1), wp(2, 1, false), pf(2)},
		b: []Event{ws(1, 2, true), wp(2, 1, false), ev(WriteComplete, 1), pf(2)}},
	{name: "REQ_PREFLUSH of an ended write", cfg: cacheFUA,
		a: []Event{wp(1, 1, false), pf(1), ev(WriteComplete, 1)},
		b: []Event{ws(1, 1, false), ev(WriteComplete, 1)}},
	{name: "FUA of a failed write", cfg: cacheEmu,
		a: []Event{ws(1, 1, true), ev(WriteFail, 1)},
		b: []Event{ws(1, 1, false), ev(WriteFail, 1)}},
	{name: "REQ_PREFLUSH stripped, write ended", cfg: noCache,
		a: []Event{wp(1, 1, false), ev(WriteComplete, 1)},
		b: []Event{ws(1, 1, false), ev(WriteComplete, 1)}},
	{name: "completed after a crash", cfg: cacheEmu,
		a: []Event{ws(1, 1, true), ev(WriteDataDone, 1), ev(WriteFail, 1), ev(Crash, 0)},
		b: []Event{ws(1, 1, true), ev(WriteFail, 1), ev(Crash, 0)}},
	{name: "cover of a flush in flight at the crash", cfg: cacheFUA,
		a: []Event{ws(1, 1, false), ev(WriteComplete, 1), ev(FlushSubmit, 1), ev(Crash, 0)},
		b: []Event{ws(1, 1, false), ev(FlushSubmit, 1), ev(WriteComplete, 1), ev(Crash, 0)}},
	{name: "superseded write", cfg: cacheFUA, forget: true,
		a: []Event{ws(1, 1, true), ev(WriteComplete, 1), ws(2, 1, true), ev(WriteComplete, 2)},
		b: []Event{ws(1, 1, true), ev(WriteComplete, 1)}},
	{name: "superseded write that failed", cfg: cacheFUA, forget: true,
		a: []Event{ws(1, 1, false), ev(WriteFail, 1), ws(2, 1, true), ev(WriteComplete, 2)},
		b: []Event{ws(1, 1, true), ev(WriteComplete, 1)}},
	{name: "superseded multi-block write", cfg: cacheFUA, forget: true,
		a: []Event{ws(1, 3, false), ev(WriteComplete, 1), ws(2, 1, true), ws(3, 2, true), ev(WriteComplete, 2), ev(WriteComplete, 3)},
		b: []Event{ws(1, 1, true), ws(2, 2, true), ev(WriteComplete, 1), ev(WriteComplete, 2)}},
	{name: "ended flushes", cfg: cacheFUA, forget: true,
		a: []Event{ws(1, 1, false), ev(WriteComplete, 1), ev(FlushSubmit, 1), ev(FlushComplete, 1)},
		b: []Event{ws(1, 1, false), ev(WriteComplete, 1), ev(FlushSubmit, 1), ev(FlushFail, 1),
			ev(FlushSubmit, 2), ev(FlushComplete, 2), ev(FlushSubmit, 3), ev(FlushComplete, 3)}},
	{name: "made durable by the preflush of a write forgotten since", cfg: cacheFUA, forget: true,
		a: []Event{ws(1, 1, false), ev(WriteComplete, 1), wp(2, 2, false), pf(2), ev(WriteComplete, 2), ws(3, 2, true), ev(WriteComplete, 3)},
		b: []Event{ws(1, 1, false), ev(WriteComplete, 1), ev(FlushSubmit, 1), ev(FlushComplete, 1), ws(2, 2, true), ev(WriteComplete, 2)}},
}

// unlikeCases are pairs that look alike but have different futures: no
// rule may merge them.
var unlikeCases = []mergeCase{
	{name: "order before a write that failed in its post-flush", cfg: cacheEmu,
		// W2's data completed: a flush makes it durable, and then W1 is
		// superseded in a only.
		a: []Event{ws(1, 1, false), ev(WriteComplete, 1), ws(2, 1, true), ev(WriteDataDone, 2), ev(WriteFail, 2)},
		b: []Event{ws(1, 1, false), ws(2, 1, true), ev(WriteComplete, 1), ev(WriteDataDone, 2), ev(WriteFail, 2)}},
	{name: "completed before a crash", cfg: cacheEmu,
		a: []Event{ws(1, 1, true), ev(WriteDataDone, 1), ev(WriteFail, 1)},
		b: []Event{ws(1, 1, true), ev(WriteFail, 1)}},
	{name: "order within a block", cfg: cacheFUA,
		a: []Event{ws(1, 1, false), ev(WriteComplete, 1), ws(2, 1, false)},
		b: []Event{ws(1, 1, false), ws(2, 1, false), ev(WriteComplete, 1)}},
}

// merged applies each side of m and returns the two results normalized
// (or forgotten).
func merged(t require.TestingT, m mergeCase, f forgetter) (Contract, Contract) {
	side := func(evs []Event) Contract {
		c := NewContract(m.cfg)
		for _, e := range evs {
			require.NoError(t, c.Apply(e), "%s: %v", m.name, e)
		}
		if m.forget {
			g, _, _ := f.forget(&c)
			return g
		}
		return f.normalized(&c)
	}
	return side(m.a), side(m.b)
}

func propMerges(t require.TestingT, f forgetter) {
	for _, m := range mergeCases {
		a, b := merged(t, m, f)
		require.Equal(t, a, b, m.name)
		if !m.forget {
			// Forget merges whatever Normalized merges.
			m.forget = true
			a, b = merged(t, m, f)
			require.Equal(t, a, b, m.name+" (Forget)")
		}
	}
	for _, m := range unlikeCases {
		a, b := merged(t, m, f)
		require.NotEqual(t, a, b, m.name)
	}
}

// TestNormalizedMerges: histories that differ only in what no query reads
// any more are one value, and histories with different futures are not.
func TestNormalizedMerges(t *testing.T) {
	propMerges(t, realForgetter)
	// The unlike cases do differ, later.
	u := unlikeCases
	for i, later := range [][]Event{
		{ev(FlushSubmit, 1), ev(FlushComplete, 1)},
		{ev(FlushSubmit, 1), ev(FlushComplete, 1)},
		{ev(WriteComplete, 2), ev(FlushSubmit, 1), ev(FlushComplete, 1)},
	} {
		a := apply(t, u[i].cfg, append(append([]Event(nil), u[i].a...), later...)...)
		b := apply(t, u[i].cfg, append(append([]Event(nil), u[i].b...), later...)...)
		differ := false
		for blk := 0; blk < permBlocks; blk++ {
			differ = differ || a.Allowed(blk) != b.Allowed(blk)
		}
		for w := 1; w <= a.Writes(); w++ {
			differ = differ || a.Durable(w) != b.Durable(w)
		}
		assert.True(t, differ, "%s: nothing tells them apart", u[i].name)
	}
}

// TestForgetDrops: the cases Forget is for, by hand.
func TestForgetDrops(t *testing.T) { propDrops(t, realForgetter) }

func propDrops(t require.TestingT, f forgetter) {
	// W1 superseded by W2 on b0 (both FUA), F1 ended, W3 in flight.
	c := apply1(t, cacheFUA, ws(1, 1, true), ev(WriteComplete, 1), ev(FlushSubmit, 1), ev(FlushComplete, 1),
		ws(2, 1, true), ev(WriteComplete, 2), ws(3, 2, false))
	g, wm, fm := f.forget(&c)
	assert.Equal(t, []uint8{0xff, 0, 1}, wm)
	assert.Equal(t, []uint8{0xff}, fm)
	assert.Equal(t, 2, g.Writes())
	assert.Equal(t, 0, g.Flushes())
	assert.Equal(t, CrashSet{Writes: 1}, g.Allowed(0))
	assert.Equal(t, CrashSet{Writes: 2, Initial: true}, g.Allowed(1))
	require.NoError(t, g.Apply(ws(3, 1, false)), "the next write is W3 of the forgotten contract")

	// W2, superseded by W3 (and durable by W3's post-flush), stays while
	// its own post-flush is pending.
	c = apply1(t, cacheEmu, ws(1, 1, false), ev(WriteComplete, 1), ws(2, 1, true), ev(WriteDataDone, 2),
		ws(3, 1, true), ev(WriteDataDone, 3), ev(WriteComplete, 3))
	_, wm, _ = f.forget(&c)
	assert.Equal(t, []uint8{0xff, 0, 1}, wm, "W1 dropped, W2 (post-flush pending) kept")
	// A write in flight whose preflush made another durable stays, and
	// the durable write names it.
	c = apply1(t, cacheFUA, ws(1, 1, false), ev(WriteComplete, 1), wp(2, 2, false), pf(2))
	g, wm, _ = f.forget(&c)
	assert.Equal(t, []uint8{0, 1}, wm)
	assert.Equal(t, []Obligation{{Write: 1, Block: 0, By: "the preflush of write W2"}}, g.Obligations())

	// A write that failed in its preflush is never in a crash image, but
	// is kept until a durable write supersedes it.
	c = apply1(t, cacheFUA, wp(1, 1, false), ev(WriteFail, 1))
	_, wm, _ = f.forget(&c)
	assert.Equal(t, []uint8{0}, wm)
	require.NoError(t, c.Apply(ws(2, 1, true)))
	require.NoError(t, c.Apply(ev(WriteComplete, 2)))
	_, wm, _ = f.forget(&c)
	assert.Equal(t, []uint8{0xff, 0}, wm)
}

// apply1 is apply for a require.TestingT.
func apply1(t require.TestingT, cfg Config, evs ...Event) Contract {
	c := NewContract(cfg)
	for _, e := range evs {
		require.NoError(t, c.Apply(e), "apply %v", e)
	}
	return c
}

// exampleCases are the histories of the examples above as forgetCases,
// each with every later step the properties try anyway (the candidate
// events) and a few possible ones.
func exampleCases() []forgetCase {
	var hists [][]Event
	var cfgs []Config
	for _, m := range append(append([]mergeCase(nil), mergeCases...), unlikeCases...) {
		hists = append(hists, m.a, m.b)
		cfgs = append(cfgs, m.cfg, m.cfg)
	}
	for _, x := range moreExamples {
		hists = append(hists, x.evs)
		cfgs = append(cfgs, x.cfg)
	}
	var out []forgetCase
	for k, h := range hists {
		c := NewContract(cfgs[k])
		for _, e := range h {
			if c.Apply(e) != nil {
				panic(fmt.Sprintf("example %v: %v refused", h, e))
			}
		}
		fc := forgetCase{c: c, hist: h, wperm: identityPerm(c.Writes()), fperm: identityPerm(c.Flushes()), blocks: 3}
		for b := range fc.bperm {
			fc.bperm[b] = uint8(b)
		}
		for p := 0; p < 4; p++ {
			fc.next = append(fc.next, nextStep{blocks: 1, fua: true, pick: p})
		}
		out = append(out, fc)
	}
	return out
}

// moreExamples are histories that leave covers pending over writes not
// durable yet, and a write superseded on one of its blocks only.
var moreExamples = []struct {
	cfg Config
	evs []Event
}{
	{cacheEmu, []Event{ws(1, 2, false), ev(WriteComplete, 1), ws(2, 1, true), ev(WriteDataDone, 2)}},
	{cacheFUA, []Event{ws(1, 2, false), ev(WriteComplete, 1), wp(2, 1, false)}},
	{cacheFUA, []Event{ws(1, 2, false), ev(WriteComplete, 1), ev(FlushSubmit, 1)}},
	{cacheFUA, []Event{ws(1, 3, false), ev(WriteComplete, 1), ws(2, 1, true), ev(WriteComplete, 2)}},
}

// propExamples runs every property on the examples.
func propExamples(t require.TestingT, f forgetter) {
	propMerges(t, f)
	propDrops(t, f)
	for _, fc := range exampleCases() {
		propNormalized(t, fc, f)
		propForget(t, fc, f)
	}
}

// TestForgetMarker: a write made durable by a command Forget dropped is
// durable by "a flush that is no longer tracked"; Permute keeps the
// marker, so that Forget commutes with renaming.
func TestForgetMarker(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		fc := forgetCases.Draw(t, "case")
		c := fc.c
		g, wm, fm := c.Forget()
		for _, o := range g.Obligations() {
			if g.durableBy[o.Write-1] == durableByForgotten {
				require.Equal(t, durableByForgottenText, o.By)
			}
		}
		// Forget of a renamed contract is the forgotten contract renamed
		// (the kept commands in their new order).
		p := c.Permute(fc.wperm, fc.fperm)
		gp, _, _ := p.Forget()
		wr, fr := keptPerm(wm, fc.wperm), keptPerm(fm, fc.fperm)
		require.Equal(t, g.Permute(wr, fr), gp)
	})
}

// keptPerm is the renaming of the kept commands that perm induces: the
// kept commands, numbered m, go in the order perm puts them in.
func keptPerm(m, perm []uint8) []uint8 {
	var kept []int // old numbers, in perm's order
	for to := 0; to < len(perm); to++ {
		for i := range perm {
			if int(perm[i]) == to && m[i] != 0xff {
				kept = append(kept, i)
			}
		}
	}
	out := make([]uint8, len(kept))
	for k, i := range kept {
		out[m[i]] = uint8(k)
	}
	return out
}

// failRecorder is a require.TestingT that records the first failure and
// stops the property there.
type failRecorder struct{ msg string }

func (r *failRecorder) Errorf(format string, args ...any) {
	if r.msg != "" {
		return
	}
	// testify's report: keep its Error and Messages lines.
	var keep []string
	for _, l := range strings.Split(fmt.Sprintf(format, args...), "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "Error:") || strings.HasPrefix(l, "Messages:") {
			keep = append(keep, l)
		}
	}
	r.msg = strings.Join(keep, " ")
	if r.msg == "" {
		r.msg = fmt.Sprintf(format, args...)
	}
}

func (r *failRecorder) FailNow() { panic(r) }

// failure runs prop and returns its first failure, "" if it holds.
func failure(prop func(require.TestingT)) (msg string) {
	r := &failRecorder{}
	defer func() {
		if x := recover(); x != nil {
			if x != r {
				msg = fmt.Sprint("panic: ", x)
			} else {
				msg = r.msg
			}
		}
	}()
	prop(r)
	return r.msg
}

// broken returns a forgetter whose Normalized is the real one followed by
// norm(original, normalized), and whose Forget is Normalized followed by
// the real drop of the commands drop chooses (nil: the real choice), then
// post (if set).
func broken(norm func(c, n *Contract), drop func(n *Contract) (uint32, uint32), post func(g *Contract)) forgetter {
	f := forgetter{}
	f.normalized = func(c *Contract) Contract {
		n := c.Normalized()
		if norm != nil {
			norm(c, &n)
		}
		return n
	}
	f.forget = func(c *Contract) (Contract, []uint8, []uint8) {
		n := f.normalized(c)
		ws, fs := n.forgettable()
		if drop != nil {
			ws, fs = drop(&n)
		}
		g, wm, fm := n.drop(ws, fs)
		if post != nil {
			post(&g)
		}
		return g, wm, fm
	}
	return f
}

// eachWrite calls f for each write of c (0-based) with its bit.
func eachWrite(c *Contract, f func(i int, bit uint32)) {
	for i := 0; i < int(c.nw); i++ {
		f(i, 1<<i)
	}
}

// breakages are the rules of forget.go, each broken one way.
var breakages = []struct {
	name string
	f    forgetter
}{
	{"keep the cover of an ended flush", broken(func(c, n *Contract) {
		for j := 0; j < int(c.nf); j++ {
			if c.fState[j] != cmdInFlight {
				n.fCover[j] = c.fCover[j]
			}
		}
	}, nil, nil)},
	{"keep durable writes in a pending flush's cover", broken(func(c, n *Contract) {
		for j := 0; j < int(c.nf); j++ {
			if c.fState[j] == cmdInFlight && !c.crashed {
				n.fCover[j] = c.fCover[j]
			}
		}
	}, nil, nil)},
	{"clear the cover of a flush in flight", broken(func(c, n *Contract) {
		for j := 0; j < int(c.nf); j++ {
			n.fCover[j] = 0
		}
	}, nil, nil)},
	{"keep orderedBefore bits of other blocks", broken(func(c, n *Contract) {
		eachWrite(c, func(i int, _ uint32) {
			if mayBecomeDurable(c, i+1) {
				n.orderedBefore[i] = c.orderedBefore[i]
			}
		})
	}, nil, nil)},
	{"clear orderedBefore bits of the same block", broken(func(c, n *Contract) {
		eachWrite(c, func(i int, bit uint32) {
			for j := 0; j < int(c.nw); j++ {
				if c.wBlocks[j]&c.wBlocks[i] != 0 {
					n.orderedBefore[i] &^= 1 << j
				}
			}
		})
	}, nil, nil)},
	{"clear the row of a write failed in its post-flush", broken(func(c, n *Contract) {
		eachWrite(c, func(i int, bit uint32) {
			if c.wState[i] == cmdFailed && c.durable&bit == 0 {
				n.orderedBefore[i] = 0
			}
		})
	}, nil, nil)},
	{"clear the row of a write in flight", broken(func(c, n *Contract) {
		eachWrite(c, func(i int, bit uint32) {
			if c.wState[i] == cmdInFlight {
				n.orderedBefore[i] = 0
			}
		})
	}, nil, nil)},
	{"keep the row of a write whose preflush is in flight", broken(func(c, n *Contract) {
		eachWrite(c, func(i int, bit uint32) {
			if c.wState[i] == cmdPreflush {
				n.orderedBefore[i] = c.orderedBefore[i]
			}
		})
	}, nil, nil)},
	{"clear the rows of durable writes after a crash", broken(func(c, n *Contract) {
		if c.crashed {
			n.orderedBefore = [MaxWrites]uint32{}
		}
	}, nil, nil)},
	{"clear a pending post-flush cover", broken(func(c, n *Contract) { n.pfCover = [MaxWrites]uint32{} }, nil, nil)},
	{"keep an ended post-flush cover", broken(func(c, n *Contract) { n.pfCover = c.pfCover }, nil, nil)},
	{"clear a pending preflush cover", broken(func(c, n *Contract) { n.preCover = [MaxWrites]uint32{} }, nil, nil)},
	{"keep an ended preflush cover", broken(func(c, n *Contract) { n.preCover = c.preCover }, nil, nil)},
	{"clear FUA of a write in flight", broken(func(c, n *Contract) { n.wFUA = 0 }, nil, nil)},
	{"keep FUA of an ended write", broken(func(c, n *Contract) { n.wFUA = c.wFUA }, nil, nil)},
	{"clear REQ_PREFLUSH (as asked) of a write in flight", broken(func(c, n *Contract) { n.wPreReq = 0 }, nil, nil)},
	{"keep REQ_PREFLUSH (as the device sees it) of an ended write", broken(func(c, n *Contract) { n.wPre = c.wPre }, nil, nil)},
	{"keep REQ_PREFLUSH (as asked) of an ended write", broken(func(c, n *Contract) { n.wPreReq = c.wPreReq }, nil, nil)},
	{"clear completed before a crash", broken(func(c, n *Contract) { n.completed &= c.durable }, nil, nil)},
	{"clear ended before a crash", broken(func(c, n *Contract) { n.ended = 0 }, nil, nil)},
	{"keep ended and completed after a crash", broken(func(c, n *Contract) { n.ended, n.completed = c.ended, c.completed }, nil, nil)},
	{"clear durableBy", broken(func(c, n *Contract) { n.durableBy = [MaxWrites]int8{} }, nil, nil)},
	{"drop a write superseded on one of its blocks only", broken(nil, func(n *Contract) (uint32, uint32) {
		ws, fs := n.forgettable()
		sup := n.superseded()
		eachWrite(n, func(i int, bit uint32) {
			for bm := n.wBlocks[i]; bm != 0; bm &= bm - 1 {
				if (n.wState[i] == cmdOK || n.wState[i] == cmdFailed) && sup[lowBit8(bm)]&bit != 0 {
					ws |= bit
				}
			}
		})
		return ws, fs
	}, nil)},
	{"drop a superseded write in its post-flush", broken(nil, func(n *Contract) (uint32, uint32) {
		ws, fs := n.forgettable()
		sup := n.superseded()
		eachWrite(n, func(i int, bit uint32) {
			all := true
			for bm := n.wBlocks[i]; bm != 0; bm &= bm - 1 {
				all = all && sup[lowBit8(bm)]&bit != 0
			}
			if all && n.wState[i] == cmdPostFlush {
				ws |= bit
			}
		})
		return ws, fs
	}, nil)},
	{"drop an ended write not superseded", broken(nil, func(n *Contract) (uint32, uint32) {
		ws, fs := n.forgettable()
		eachWrite(n, func(i int, bit uint32) {
			if n.wState[i] == cmdFailed && n.unsent&bit == 0 {
				ws |= bit
			}
		})
		return ws, fs
	}, nil)},
	{"drop a flush in flight", broken(nil, func(n *Contract) (uint32, uint32) {
		ws, _ := n.forgettable()
		return ws, 1<<n.nf - 1
	}, nil)},
	{"keep superseded writes", broken(nil, func(n *Contract) (uint32, uint32) {
		_, fs := n.forgettable()
		return 0, fs
	}, nil)},
	{"keep ended flushes", broken(nil, func(n *Contract) (uint32, uint32) {
		ws, _ := n.forgettable()
		return ws, 0
	}, nil)},
	{"render a dropped cause as the write's own completion", broken(nil, nil, func(g *Contract) {
		for i := range g.durableBy {
			if g.durableBy[i] == durableByForgotten {
				g.durableBy[i] = 0
			}
		}
	})},
}

// TestForgetBreakages: each rule, broken, is caught by the properties
// above on the same random cases (or by the merge examples), so the tests
// would see a wrong rule. The real implementation passes on those cases.
func TestForgetBreakages(t *testing.T) {
	const cases = 400
	props := func(fc forgetCase, f forgetter) func(require.TestingT) {
		return func(t require.TestingT) {
			propNormalized(t, fc, f)
			propForget(t, fc, f)
		}
	}
	for _, br := range breakages {
		t.Run(br.name, func(t *testing.T) {
			caught := false
			if msg := failure(func(t require.TestingT) { propExamples(t, br.f) }); msg != "" {
				t.Logf("caught by the examples: %.300s", msg)
				caught = true
			}
			for seed := 0; seed < cases && (!caught || testing.Verbose()); seed++ {
				fc := forgetCases.Example(seed)
				if msg := failure(props(fc, br.f)); msg != "" {
					require.Empty(t, failure(props(fc, realForgetter)), "seed %d: the real implementation fails too", seed)
					t.Logf("caught by random case %d: %.300s", seed, msg)
					caught = true
					break
				}
			}
			if !caught {
				t.Errorf("not caught")
			}
		})
	}
	require.Empty(t, failure(func(t require.TestingT) { propExamples(t, realForgetter) }))
}
