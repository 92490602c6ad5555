package spec

import (
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
		// Rule 7: REQ_PREFLUSH on a write.
		{"preflush covers a write completed before submission", cacheFUA,
			[]Event{ws(1, 2, false), ev(WriteComplete, 1), wp(2, 1, false), ev(WriteComplete, 2)}, 1, "{W1}"},
		{"preflush write itself is not durable without FUA", cacheFUA,
			[]Event{ws(1, 2, false), ev(WriteComplete, 1), wp(2, 1, false), ev(WriteComplete, 2)}, 0, "{initial W2}"},
		{"preflush and FUA: the write is durable too", cacheFUA,
			[]Event{ws(1, 2, false), ev(WriteComplete, 1), wp(2, 1, true), ev(WriteComplete, 2)}, 0, "{W2}"},
		{"preflush does not cover a write in flight at submission", cacheFUA,
			[]Event{ws(1, 2, false), wp(2, 1, true), ev(WriteComplete, 1), ev(WriteComplete, 2)}, 1, "{initial W1}"},
		{"preflush promises nothing before its write completes", cacheFUA,
			[]Event{ws(1, 2, false), ev(WriteComplete, 1), wp(2, 1, true)}, 1, "{initial W1}"},
		{"failed preflush write guarantees nothing", cacheFUA,
			[]Event{ws(1, 2, false), ev(WriteComplete, 1), wp(2, 1, true), ev(WriteFail, 2)}, 1, "{initial W1}"},
		{"preflush supersedes an older write on its own block", cacheFUA,
			[]Event{ws(1, 1, false), ev(WriteComplete, 1), wp(2, 1, false), ev(WriteComplete, 2)}, 0, "{W1 W2}"},
		{"preflush with emulated FUA", cacheEmu,
			[]Event{ws(1, 2, false), ev(WriteComplete, 1), wp(2, 1, true), ev(WriteDataDone, 2), ev(WriteComplete, 2)}, 1, "{W1}"},
		{"preflush with emulated FUA seen without its post-flush", cacheEmu,
			[]Event{ws(1, 2, false), ev(WriteComplete, 1), wp(2, 1, true), ev(WriteComplete, 2)}, 1, "{W1}"},
		{"no cache: preflush stripped, completion is durability", noCache,
			[]Event{ws(1, 2, false), wp(2, 1, false), ev(WriteComplete, 1), ev(WriteComplete, 2)}, 1, "{W1}"},
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

	c = apply(t, cacheFUA, ws(1, 2, false), ev(WriteComplete, 1), wp(2, 1, true), ev(WriteComplete, 2))
	assert.Equal(t, []Obligation{
		{Write: 1, Block: 1, By: "the preflush of write W2"},
		{Write: 2, Block: 0, By: "its FUA completion"},
	}, c.Obligations())
	assert.Equal(t, "W2 submit b0 PREFLUSH FUA", wp(2, 1, true).String())
}
