package spec

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func apply(t *testing.T, cfg Config, evs ...Event) Contract {
	t.Helper()
	c := NewContract(cfg)
	for _, e := range evs {
		require.NoError(t, c.Apply(e), "apply %v", e)
	}
	return c
}

func ws(id int, blocks uint8, fua bool) Event {
	return Event{Kind: WriteSubmit, ID: id, Blocks: blocks, FUA: fua}
}
func ev(k Kind, id int) Event { return Event{Kind: k, ID: id} }

// pf is the end of write id's preflush step.
func pf(id int) Event { return ev(WritePreflushed, id) }

// wp is a write submit with REQ_PREFLUSH.
func wp(id int, blocks uint8, fua bool) Event {
	e := ws(id, blocks, fua)
	e.Preflush = true
	return e
}

var (
	cacheFUA = Config{VolatileCache: true, NativeFUA: true}
	cacheEmu = Config{VolatileCache: true}
	noCache  = Config{}
)

func TestContractAllowed(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		evs  []Event
		b    int
		want string
	}{
		{"nothing written", cacheFUA, nil, 0, "{initial}"},
		{"completed write not flushed", cacheFUA, []Event{ws(1, 1, false), ev(WriteComplete, 1)}, 0, "{initial W1}"},
		{"in-flight write may land", cacheFUA, []Event{ws(1, 1, false)}, 0, "{initial W1}"},
		{"flush covers completed write", cacheFUA, []Event{ws(1, 1, false), ev(WriteComplete, 1), ev(FlushSubmit, 1), ev(FlushComplete, 1)}, 0, "{W1}"},
		{"flush does not cover write completing in flight", cacheFUA,
			[]Event{ws(1, 1, false), ev(FlushSubmit, 1), ev(WriteComplete, 1), ev(FlushComplete, 1)}, 0, "{initial W1}"},
		{"failed flush guarantees nothing", cacheFUA,
			[]Event{ws(1, 1, false), ev(WriteComplete, 1), ev(FlushSubmit, 1), ev(FlushFail, 1)}, 0, "{initial W1}"},
		{"native FUA durable at completion", cacheFUA, []Event{ws(1, 1, true), ev(WriteComplete, 1)}, 0, "{W1}"},
		{"older in-flight write may overwrite durable one", cacheFUA,
			[]Event{ws(1, 1, false), ws(2, 1, true), ev(WriteComplete, 2)}, 0, "{W1 W2}"},
		{"ordered write is superseded", cacheFUA,
			[]Event{ws(1, 1, false), ev(WriteComplete, 1), ws(2, 1, true), ev(WriteComplete, 2)}, 0, "{W2}"},
		{"newer non-durable write may be lost or kept", cacheFUA,
			[]Event{ws(1, 1, true), ev(WriteComplete, 1), ws(2, 1, false), ev(WriteComplete, 2)}, 0, "{W1 W2}"},
		{"failed write may have landed", cacheFUA, []Event{ws(1, 1, false), ev(WriteFail, 1)}, 0, "{initial W1}"},
		{"other block untouched", cacheFUA, []Event{ws(1, 1, true), ev(WriteComplete, 1)}, 1, "{initial}"},
		{"emulated FUA post-flush covers other completed writes", cacheEmu,
			[]Event{ws(1, 2, false), ev(WriteComplete, 1), ws(2, 1, true), ev(WriteDataDone, 2), ev(WriteComplete, 2)}, 1, "{W1}"},
		{"emulated FUA post-flush does not cover writes completed after it", cacheEmu,
			[]Event{ws(1, 2, false), ws(2, 1, true), ev(WriteDataDone, 2), ev(WriteComplete, 1), ev(WriteComplete, 2)}, 1, "{initial W1}"},
		{"emulated FUA seen without its post-flush: only itself is promised", cacheEmu,
			[]Event{ws(1, 2, false), ev(WriteComplete, 1), ws(2, 1, true), ev(WriteComplete, 2)}, 1, "{initial W1}"},
		{"emulated FUA seen without its post-flush: itself durable", cacheEmu,
			[]Event{ws(1, 1, true), ev(WriteComplete, 1)}, 0, "{W1}"},
		{"emulated FUA failed post-flush", cacheEmu,
			[]Event{ws(1, 1, true), ev(WriteDataDone, 1), ev(WriteFail, 1)}, 0, "{initial W1}"},
		{"no cache: completion is durability", noCache, []Event{ws(1, 1, false), ev(WriteComplete, 1)}, 0, "{W1}"},
		{"no cache: FUA stripped, still durable", noCache, []Event{ws(1, 1, true), ev(WriteComplete, 1)}, 0, "{W1}"},
		{"multi-block write covers each block", cacheFUA, []Event{ws(1, 3, true), ev(WriteComplete, 1)}, 1, "{W1}"},
		// Rule 7: REQ_PREFLUSH on a write: the preflush completes (pf), then
		// the data is sent.
		{"preflush covers a write completed before submission", cacheFUA,
			[]Event{ws(1, 2, false), ev(WriteComplete, 1), wp(2, 1, false), pf(2), ev(WriteComplete, 2)}, 1, "{W1}"},
		{"covered write durable once the preflush completed", cacheFUA,
			[]Event{ws(1, 2, false), ev(WriteComplete, 1), wp(2, 1, true), pf(2)}, 1, "{W1}"},
		{"preflush in flight: covered write not durable yet", cacheFUA,
			[]Event{ws(1, 2, false), ev(WriteComplete, 1), wp(2, 1, true)}, 1, "{initial W1}"},
		{"preflush in flight: the write's data cannot be left", cacheFUA,
			[]Event{ws(1, 2, false), ev(WriteComplete, 1), wp(2, 1, true)}, 0, "{initial}"},
		{"preflush completed: the write's data may be left", cacheFUA,
			[]Event{ws(1, 2, false), ev(WriteComplete, 1), wp(2, 1, true), pf(2)}, 0, "{initial W2}"},
		{"preflush write itself is not durable without FUA", cacheFUA,
			[]Event{ws(1, 2, false), ev(WriteComplete, 1), wp(2, 1, false), pf(2), ev(WriteComplete, 2)}, 0, "{initial W2}"},
		{"preflush and FUA: the write is durable too", cacheFUA,
			[]Event{ws(1, 2, false), ev(WriteComplete, 1), wp(2, 1, true), pf(2), ev(WriteComplete, 2)}, 0, "{W2}"},
		{"preflush does not cover a write in flight at submission", cacheFUA,
			[]Event{ws(1, 2, false), wp(2, 1, true), ev(WriteComplete, 1), pf(2), ev(WriteComplete, 2)}, 1, "{initial W1}"},
		{"failed preflush: the write never lands", cacheFUA,
			[]Event{ws(1, 2, false), ev(WriteComplete, 1), wp(2, 1, true), ev(WriteFail, 2)}, 0, "{initial}"},
		{"failed preflush guarantees nothing", cacheFUA,
			[]Event{ws(1, 2, false), ev(WriteComplete, 1), wp(2, 1, true), ev(WriteFail, 2)}, 1, "{initial W1}"},
		{"failed data step after the preflush: the data may have landed", cacheFUA,
			[]Event{ws(1, 2, false), ev(WriteComplete, 1), wp(2, 1, true), pf(2), ev(WriteFail, 2)}, 0, "{initial W2}"},
		{"failed data step after the preflush: the covered write stays durable", cacheFUA,
			[]Event{ws(1, 2, false), ev(WriteComplete, 1), wp(2, 1, true), pf(2), ev(WriteFail, 2)}, 1, "{W1}"},
		{"preflush supersedes an older write on its own block", cacheFUA,
			[]Event{ws(1, 1, false), ev(WriteComplete, 1), wp(2, 1, false), pf(2), ev(WriteComplete, 2)}, 0, "{W1 W2}"},
		{"a write that ended during the preflush is ordered before the data", cacheFUA,
			[]Event{ws(1, 1, false), wp(2, 1, true), ev(WriteFail, 1), pf(2), ev(WriteComplete, 2)}, 0, "{W2}"},
		{"a write still in flight when the data is sent may land after it", cacheFUA,
			[]Event{ws(1, 1, false), wp(2, 1, true), pf(2), ev(WriteFail, 1), ev(WriteComplete, 2)}, 0, "{W1 W2}"},
		{"preflush with emulated FUA", cacheEmu,
			[]Event{ws(1, 2, false), ev(WriteComplete, 1), wp(2, 1, true), pf(2), ev(WriteDataDone, 2), ev(WriteComplete, 2)}, 1, "{W1}"},
		{"preflush with emulated FUA seen without its post-flush", cacheEmu,
			[]Event{ws(1, 2, false), ev(WriteComplete, 1), wp(2, 1, true), pf(2), ev(WriteComplete, 2)}, 1, "{W1}"},
		{"no cache: preflush stripped, completion is durability", noCache,
			[]Event{ws(1, 2, false), wp(2, 1, false), ev(WriteComplete, 1), ev(WriteComplete, 2)}, 1, "{W1}"},
		{"no cache: preflush stripped, the data is sent at once", noCache,
			[]Event{ws(1, 2, false), ev(WriteComplete, 1), wp(2, 1, false)}, 0, "{initial W2}"},
		{"no cache: WritePreflushed changes nothing", noCache,
			[]Event{ws(1, 2, false), ev(WriteComplete, 1), wp(2, 1, false), pf(2)}, 0, "{initial W2}"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := apply(t, tc.cfg, tc.evs...)
			assert.Equal(t, tc.want, c.Allowed(tc.b).String())
		})
	}
}

func TestContractRejectsImpossibleEvents(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		evs  []Event
		bad  Event
	}{
		{"complete unsubmitted", cacheFUA, nil, ev(WriteComplete, 1)},
		{"skip a number", cacheFUA, nil, ws(2, 1, false)},
		{"complete twice", cacheFUA, []Event{ws(1, 1, false), ev(WriteComplete, 1)}, ev(WriteComplete, 1)},
		{"post-flush with native FUA", cacheFUA, []Event{ws(1, 1, true)}, ev(WriteDataDone, 1)},
		{"flush fails without cache", noCache, []Event{ev(FlushSubmit, 1)}, ev(FlushFail, 1)},
		{"event after crash", cacheFUA, []Event{ev(Crash, 0)}, ws(1, 1, false)},
		{"write without blocks", cacheFUA, nil, ws(1, 0, false)},
		{"preflush write completes before its preflush", cacheFUA, []Event{wp(1, 1, false)}, ev(WriteComplete, 1)},
		{"preflush write lands before its preflush", cacheFUA, []Event{wp(1, 1, false)}, Event{Kind: WriteLand, ID: 1, Blocks: 1}},
		{"post-flush before the preflush", cacheEmu, []Event{wp(1, 1, true)}, ev(WriteDataDone, 1)},
		{"preflushed twice", cacheFUA, []Event{wp(1, 1, false), pf(1)}, pf(1)},
		{"preflushed without REQ_PREFLUSH", cacheFUA, []Event{ws(1, 1, false)}, pf(1)},
		{"no cache: preflushed without REQ_PREFLUSH", noCache, []Event{ws(1, 1, false)}, pf(1)},
		{"preflushed after the write ended", noCache, []Event{wp(1, 1, false), ev(WriteComplete, 1)}, pf(1)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := apply(t, tc.cfg, tc.evs...)
			before := c
			assert.Error(t, c.Apply(tc.bad))
			assert.Equal(t, before, c, "a rejected event must leave the contract unchanged")
		})
	}
}

func TestContractObligationsAndBroken(t *testing.T) {
	c := apply(t, cacheEmu, ws(1, 2, false), ev(WriteComplete, 1), ws(2, 1, true), ev(WriteDataDone, 2), ev(WriteComplete, 2))
	assert.Equal(t, []Obligation{
		{Write: 1, Block: 1, By: "the post-flush of FUA write W2"},
		{Write: 2, Block: 0, By: "its FUA completion (emulated: post-flush)"},
	}, c.Obligations())
	assert.Empty(t, c.Broken(0, 2))
	assert.Contains(t, c.Broken(1, 0), "W1 on b1 (durable by the post-flush of FUA write W2) must survive")
	assert.Contains(t, c.Broken(1, 2), "never wrote b1")

	c = apply(t, cacheFUA, ws(1, 2, false), ev(WriteComplete, 1), wp(2, 1, true), pf(2), ev(WriteComplete, 2))
	assert.Equal(t, []Obligation{
		{Write: 1, Block: 1, By: "the preflush of write W2"},
		{Write: 2, Block: 0, By: "its FUA completion"},
	}, c.Obligations())
	assert.Equal(t, "W2 submit b0 PREFLUSH FUA", wp(2, 1, true).String())
}

// TestContractPreflushCrossBlock is the case that ties two blocks: W1
// completed on b1, then W2 with REQ_PREFLUSH|FUA is submitted to b0. While
// W2's preflush is in flight a crash may lose W1, but then it cannot leave
// W2 either (blk-flush.c sends the data only after the preflush); once a
// crash may leave W2, W1 is durable. Judging each block on its own is then
// still exact: every pair of contents the per-block sets allow is possible.
func TestContractPreflushCrossBlock(t *testing.T) {
	steps := []struct {
		e      Event
		b0, b1 string
	}{
		{ws(1, 2, false), "{initial}", "{initial W1}"},
		{ev(WriteComplete, 1), "{initial}", "{initial W1}"},
		{wp(2, 1, true), "{initial}", "{initial W1}"},
		{pf(2), "{initial W2}", "{W1}"},
		{ev(WriteComplete, 2), "{W2}", "{W1}"},
	}
	c := NewContract(cacheFUA)
	for _, s := range steps {
		require.NoError(t, c.Apply(s.e), "apply %v", s.e)
		assert.Equal(t, s.b0, c.Allowed(0).String(), "b0 after %v", s.e)
		assert.Equal(t, s.b1, c.Allowed(1).String(), "b1 after %v", s.e)
		if c.Allowed(0).Has(2) {
			assert.False(t, c.Allowed(1).Has(0), "after %v: a crash may leave W2 on b0 and lose W1 on b1", s.e)
		}
	}
	c = apply(t, cacheFUA, ws(1, 2, false), ev(WriteComplete, 1), wp(2, 1, true))
	assert.Contains(t, c.Broken(0, 2), "W2's preflush had not completed")
	assert.Equal(t, "W2 preflushed, data sent", pf(2).String())
	assert.True(t, WritePreflushed.IsWrite())
}

// TestContractDeviceEvents: the events the device may take next, in order,
// for each kind of command in flight.
func TestContractDeviceEvents(t *testing.T) {
	pre := Event{Kind: WriteSubmit, ID: 3, Blocks: 1, Preflush: true}
	for _, tc := range []struct {
		name     string
		cfg      Config
		failures bool
		evs      []Event
		want     string
	}{
		{"nothing in flight", CacheFUA, true, nil, ""},
		{"a write", CacheFUA, false, []Event{ws(1, 1, false)}, "W1 complete"},
		{"a write, failures", CacheFUA, true, []Event{ws(1, 1, false)}, "W1 complete, W1 fail (EIO)"},
		{"emulated FUA: data, then the post-flush", CacheEmulatedFUA, false, []Event{ws(1, 1, true)}, "W1 data done, post-flush submitted"},
		{"emulated FUA after its data", CacheEmulatedFUA, false, []Event{ws(1, 1, true), ev(WriteDataDone, 1)}, "W1 complete"},
		{"native FUA", CacheFUA, false, []Event{ws(1, 1, true)}, "W1 complete"},
		{"preflush first", CacheFUA, true, []Event{ws(1, 1, false), ev(WriteComplete, 1), ws(2, 2, false), pre},
			"W2 complete, W2 fail (EIO), W3 preflushed, data sent, W3 fail (EIO)"},
		{"flushes after writes; no flush failure without a cache", NoCache, true, []Event{ev(FlushSubmit, 1), ws(1, 1, false)},
			"W1 complete, W1 fail (EIO), F1 complete"},
		{"flush failure with a cache", CacheFUA, true, []Event{ev(FlushSubmit, 1)}, "F1 complete, F1 fail (EIO)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := apply(t, tc.cfg, tc.evs...)
			var got []string
			c.DeviceEvents(tc.failures, func(e Event) {
				got = append(got, e.String())
				next := c
				require.NoError(t, next.Apply(e), "an offered event is allowed")
			})
			assert.Equal(t, tc.want, strings.Join(got, ", "))
		})
	}
}

// TestContractCovers: a flush covers the writes completed when it was
// submitted (not one in flight then, nor one completed after), a
// REQ_PREFLUSH write's preflush likewise, and without a cache no write
// has a preflush.
func TestContractCovers(t *testing.T) {
	evs := []Event{ws(1, 1, false), ws(2, 2, false), ev(WriteComplete, 1), ev(FlushSubmit, 1), wp(3, 4, false), ev(WriteComplete, 2)}
	for _, tc := range []struct {
		name       string
		cfg        Config
		flush, pre uint32
	}{
		{"cache", CacheFUA, 0b1, 0b1},
		{"no cache: no preflush", NoCache, 0b1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := apply(t, tc.cfg, evs...)
			assert.Equal(t, tc.flush, c.FlushCover(1), "F1 covers W1, not W2 (in flight at its submission)")
			assert.Equal(t, tc.pre, c.PreflushCover(3))
			assert.Zero(t, c.FlushCover(2), "F2 was not submitted")
			assert.Zero(t, c.PreflushCover(1), "W1 has no REQ_PREFLUSH")
			assert.Zero(t, c.PreflushCover(4), "W4 was not submitted")
		})
	}
}
