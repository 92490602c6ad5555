package linearize

import (
	"errors"
	"testing"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/device"
	"github.com/flushproof/flushproof/spec"
)

// script records a hand-written history; every call must succeed.
type script struct {
	t *testing.T
	r *Recorder
}

func newScript(t *testing.T) script { return script{t: t, r: NewRecorder()} }

func (s script) write(task int, blocks uint8, fua bool) int {
	s.t.Helper()
	id, err := s.r.SubmitWrite(task, blocks, fua)
	require.NoError(s.t, err)
	return id
}

func (s script) endWrite(id int, ok bool) {
	s.t.Helper()
	require.NoError(s.t, s.r.EndWrite(id, ok))
}

func (s script) flush(task int) int {
	s.t.Helper()
	id, err := s.r.SubmitFlush(task)
	require.NoError(s.t, err)
	return id
}

func (s script) endFlush(id int, ok bool) {
	s.t.Helper()
	require.NoError(s.t, s.r.EndFlush(id, ok))
}

func (s script) crash() {
	s.t.Helper()
	require.NoError(s.t, s.r.Crash())
}

func (s script) beginRead(task, block int) int {
	s.t.Helper()
	id, err := s.r.BeginRead(task, block)
	require.NoError(s.t, err)
	return id
}

func (s script) endRead(id, value int) {
	s.t.Helper()
	require.NoError(s.t, s.r.EndRead(id, value))
}

// read is a read whose call and return follow each other.
func (s script) read(task, block, value int) {
	s.t.Helper()
	s.endRead(s.beginRead(task, block), value)
}

// linearizable runs Check and tells a rejection from an error.
func linearizable(t *testing.T, name string, m porcupine.NondeterministicModel, h History) bool {
	t.Helper()
	err := Check(name, m, h, 0)
	var nl *NotLinearizable
	if errors.As(err, &nl) {
		require.Equal(t, porcupine.Illegal, nl.Result, "porcupine must decide: %v", err)
		return false
	}
	require.NoError(t, err)
	return true
}

// TestModelsHandWritten: small histories whose verdict is worked out by hand
// from the rules, for both models. Where the two differ, the comment says
// why.
func TestModelsHandWritten(t *testing.T) {
	cases := []struct {
		name             string
		cfg              spec.Config
		run              func(s script)
		contract, device bool // linearizable?
	}{
		{"write completing during a flush's flight is not covered: may be lost", cacheFUA, func(s script) {
			w := s.write(0, 1, false)
			f := s.flush(1)
			s.endWrite(w, true)
			s.endFlush(f, true)
			s.crash()
			s.read(0, 0, 0)
		}, true, true},
		{"completed FUA write lost: rejected", cacheFUA, func(s script) {
			s.endWrite(s.write(0, 1, true), true)
			s.crash()
			s.read(0, 0, 0)
		}, false, false},
		{"completed FUA write kept", cacheFUA, func(s script) {
			s.endWrite(s.write(0, 1, true), true)
			s.crash()
			s.read(0, 0, 1)
		}, true, true},
		{"flush covers a completed write: loss rejected", cacheFUA, func(s script) {
			s.endWrite(s.write(0, 1, false), true)
			s.endFlush(s.flush(0), true)
			s.crash()
			s.read(0, 0, 0)
		}, false, false},
		{"failed flush guarantees nothing", cacheFUA, func(s script) {
			s.endWrite(s.write(0, 1, false), true)
			s.endFlush(s.flush(0), false)
			s.crash()
			s.read(0, 0, 0)
		}, true, true},
		{"completed write not flushed may be lost", cacheFUA, func(s script) {
			s.endWrite(s.write(0, 1, false), true)
			s.crash()
			s.read(0, 0, 0)
		}, true, true},
		{"older in-flight write may overwrite a durable one", cacheFUA, func(s script) {
			w1 := s.write(0, 1, false)
			w2 := s.write(1, 1, true)
			s.endWrite(w2, true)
			s.endWrite(w1, true)
			s.crash()
			s.read(0, 0, w1)
		}, true, true},
		{"write ordered before a durable one cannot come back", cacheFUA, func(s script) {
			w1 := s.write(0, 1, false)
			s.endWrite(w1, true)
			s.endWrite(s.write(0, 1, true), true)
			s.crash()
			s.read(0, 0, w1)
		}, false, false},
		{"newer write, not durable, may be lost", cacheFUA, func(s script) {
			w1 := s.write(0, 1, true)
			s.endWrite(w1, true)
			s.endWrite(s.write(0, 1, false), true)
			s.crash()
			s.read(0, 0, w1)
		}, true, true},
		{"failed write may have landed", cacheFUA, func(s script) {
			s.endWrite(s.write(0, 1, true), false)
			s.crash()
			s.read(0, 0, 1)
		}, true, true},
		{"failed write may not have landed", cacheFUA, func(s script) {
			s.endWrite(s.write(0, 1, true), false)
			s.crash()
			s.read(0, 0, 0)
		}, true, true},
		{"write in flight at the crash may land as power fails", cacheFUA, func(s script) {
			s.write(0, 1, false)
			s.crash()
			s.read(0, 0, 1)
		}, true, true},
		{"other block untouched by a durable write", cacheFUA, func(s script) {
			s.endWrite(s.write(0, 1, true), true)
			s.crash()
			s.read(0, 1, 0)
		}, true, true},
		{"multi-block FUA write durable on each block", cacheFUA, func(s script) {
			s.endWrite(s.write(0, 3, true), true)
			s.crash()
			s.read(0, 0, 1)
			s.read(0, 1, 0)
		}, false, false},
		{"read after a completion sees the write", cacheFUA, func(s script) {
			s.endWrite(s.write(0, 1, false), true)
			s.read(1, 0, 0)
		}, false, false},
		{"read overlapping a write may see it", cacheFUA, func(s script) {
			w := s.write(0, 1, false)
			r := s.beginRead(1, 0)
			s.endWrite(w, true)
			s.endRead(r, w)
		}, true, true},
		{"read overlapping a write may miss it", cacheFUA, func(s script) {
			w := s.write(0, 1, false)
			r := s.beginRead(1, 0)
			s.endWrite(w, true)
			s.endRead(r, 0)
		}, true, true},
		{"reads fix the landing order", cacheFUA, func(s script) {
			w1 := s.write(0, 1, false)
			w2 := s.write(1, 1, false)
			s.endWrite(w1, true)
			s.endWrite(w2, true)
			s.read(2, 0, w2)
			s.read(2, 0, w1) // nothing landed in between
		}, false, false},
		{"post-crash reads agree", cacheFUA, func(s script) {
			s.write(0, 1, false)
			s.crash()
			s.read(1, 0, 1)
			s.read(1, 0, 0)
		}, false, false},
		{"no cache: completion is durability", noCache, func(s script) {
			s.endWrite(s.write(0, 1, false), true)
			s.crash()
			s.read(0, 0, 0)
		}, false, false},
		{"no cache: an empty flush cannot fail", noCache, func(s script) {
			s.endFlush(s.flush(0), false)
		}, false, false},
		{"emulated FUA: completed FUA write lost: rejected", cacheEmu, func(s script) {
			s.endWrite(s.write(0, 1, true), true)
			s.crash()
			s.read(0, 0, 0)
		}, false, false},
		// Seen from above the block layer an emulated FUA write promises only
		// itself (spec.Contract without WriteDataDone). device.Device always
		// has the post-flush cover W1 here: W1 completed before W2 was
		// submitted, so before W2's data completed and its post-flush was
		// sent.
		{"emulated FUA: the post-flush's side effect is not promised", cacheEmu, func(s script) {
			s.endWrite(s.write(0, 2, false), true)
			s.endWrite(s.write(0, 1, true), true)
			s.crash()
			s.read(0, 1, 0)
		}, true, false},
		// The contract treats blocks independently (rule 6): W1 and W2 are
		// both durable and neither is ordered before the other, so each block
		// may hold either. device.Device lands a write block by block, so the
		// two writes may land in different orders on b0 and b1 (torn).
		{"multi-block writes may tear", cacheFUA, func(s script) {
			w1 := s.write(0, 3, false)
			w2 := s.write(1, 3, false)
			s.endWrite(w1, true)
			s.endWrite(w2, true)
			s.endFlush(s.flush(0), true)
			s.crash()
			s.read(0, 0, w1)
			s.read(0, 1, w2)
		}, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newScript(t)
			tc.run(s)
			h := s.r.History()
			assert.Equal(t, tc.contract, linearizable(t, "handwritten-contract", ContractModel(tc.cfg), h), "contract model on\n%s", h)
			assert.Equal(t, tc.device, linearizable(t, "handwritten-device", DeviceModel(tc.cfg, device.Correct), h), "device model on\n%s", h)
		})
	}
}

// TestDeviceModelBugsHandWritten: each wrong device, lifted, accepts or
// rejects what it should on a history made for it.
func TestDeviceModelBugsHandWritten(t *testing.T) {
	flushDuringWrite := func(s script) { // the contract allows the loss
		w := s.write(0, 1, false)
		f := s.flush(1)
		s.endWrite(w, true)
		s.endFlush(f, true)
		s.crash()
		s.read(0, 0, 0)
	}
	fuaLost := func(s script) { // the contract rejects the loss
		s.endWrite(s.write(0, 1, true), true)
		s.crash()
		s.read(0, 0, 0)
	}
	cases := []struct {
		name string
		bug  device.Bug
		cfg  spec.Config
		run  func(s script)
		want bool
	}{
		{"flush-covers-in-flight cannot lose the write", device.FlushCoversInFlight, cacheFUA, flushDuringWrite, false},
		{"correct device can", device.Correct, cacheFUA, flushDuringWrite, true},
		{"emulated-fua-no-postflush loses a completed FUA write", device.EmulatedFUANoPostFlush, cacheEmu, fuaLost, true},
		{"crash-reverts-durable loses a completed FUA write", device.CrashRevertsDurable, cacheFUA, fuaLost, true},
		{"correct device does not", device.Correct, cacheFUA, fuaLost, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newScript(t)
			tc.run(s)
			assert.Equal(t, tc.want, linearizable(t, "handwritten-"+tc.bug.String(), DeviceModel(tc.cfg, tc.bug), s.r.History()))
		})
	}
}
