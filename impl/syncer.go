package impl

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/flushproof/flushproof/internal/implfault"
	"github.com/flushproof/flushproof/spec"
)

// Policy says how a Syncer makes a completed write durable.
type Policy uint8

// The policies.
const (
	// Always flushes on every Sync: the baseline, fdatasync per write.
	Always Policy = iota + 1
	// SkipIfFlushedSince skips the flush when a flush numbered after the
	// write completed has already completed (the patched xfs fsync of "xfs:
	// skip the fsync flush when a later flush has completed").
	SkipIfFlushedSince
	// Join also waits for a flush numbered after the write completed that
	// is already in flight, instead of issuing another; if that flush
	// fails, it flushes itself (the improved variant, proven in
	// docs/flushseq.md before it is measured).
	Join
	// GroupCommit is Join, but when no flush numbered after the writes
	// has started yet, it first waits for the flushes in flight to end:
	// meanwhile other writers pile up, one of them starts the next flush,
	// and the rest join it (docs/impl.md; the group-commit variant in
	// docs/flushseq.md, proven like the others).
	GroupCommit
)

func (p Policy) String() string {
	switch p {
	case Always:
		return "always"
	case SkipIfFlushedSince:
		return "skip-if-flushed-since"
	case Join:
		return "join"
	case GroupCommit:
		return "group-commit"
	}
	return fmt.Sprintf("Policy(%d)", uint8(p))
}

// Policies lists the policies.
func Policies() []Policy { return []Policy{Always, SkipIfFlushedSince, Join, GroupCommit} }

// ParsePolicy is the inverse of Policy.String.
func ParsePolicy(s string) (Policy, error) {
	for _, p := range Policies() {
		if p.String() == s {
			return p, nil
		}
	}
	return 0, fmt.Errorf("unknown sync policy %q (want always, skip-if-flushed-since, join or group-commit)", s)
}

// Syncer makes writes durable for many writers that share one device: a
// writer writes, waits for its write to complete, and calls Sync. Under the
// policies that share flushes, a Sync returns without a flush of its own
// when a flush that covers the write has completed (or, with Join, is in
// flight and then completes).
//
// A Syncer is safe for concurrent use when its handles are (the Linux
// Device, Word and WaitQueue of this package are). In the model world every
// task needs handles of its own: Bind gives a Syncer that shares this one's
// state but acts through other handles.
type Syncer struct {
	h      Handles
	policy Policy
	st     *syncState

	fault implfault.Fault // a deliberate bug (internal/implfault); None in real use
}

// withFault returns a Syncer that shares s's state and handles with the
// deliberate bug f, for the checker's negative controls (internal/implfault).
func (s *Syncer) withFault(f implfault.Fault) *Syncer {
	b := *s
	b.fault = f
	return &b
}

func init() {
	implfault.Syncer = func(s any, f implfault.Fault) any { return s.(*Syncer).withFault(f) }
	implfault.DSyncWriter = func(w any, f implfault.Fault) any { return w.(DSyncWriter).withFault(f) }
}

// Handles are what a Syncer acts through.
type Handles struct {
	Dev   spec.Device
	Seq   FlushSeq
	Queue spec.WaitQueue
	_     struct{}
}

// syncState is what all the Syncers bound to one device share: the flushes
// in flight (protected by the wait queue) and the statistics.
type syncState struct {
	inFlight map[int64]struct{}
	// numbering counts the flushes being numbered: announced under the
	// queue's lock before Start, registered in inFlight after it. A waiter
	// that saw Start's number (or sampled after it) must not take the
	// flush for ended in between.
	numbering int
	syncs     atomic.Int64
	skipped   atomic.Int64
	joined    atomic.Int64
	flushes   atomic.Int64
	failed    atomic.Int64
}

// NewSyncer returns a Syncer with the given policy.
func NewSyncer(h Handles, p Policy) (*Syncer, error) {
	if h.Dev == nil || h.Queue == nil || (p != Always && (h.Seq.Submitted == nil || h.Seq.Completed == nil || h.Seq.MB == nil)) {
		return nil, fmt.Errorf("syncer: a device, a wait queue and (for %v) both counters and a fence are needed", p)
	}
	if _, err := ParsePolicy(p.String()); err != nil {
		return nil, err
	}
	return &Syncer{h: h, policy: p, st: &syncState{inFlight: map[int64]struct{}{}}}, nil
}

// Bind returns a Syncer that shares s's policy, flushes in flight and
// statistics but acts through h.
func (s *Syncer) Bind(h Handles) *Syncer {
	b := *s
	b.h = h
	return &b
}

// Policy returns the policy.
func (s *Syncer) Policy() Policy { return s.policy }

// Sync makes every write that completed before the call durable, or
// returns the error of the flush that was to do it. It is Sample followed
// by SyncSince.
func (s *Syncer) Sync() error {
	if s.policy == Always {
		s.st.syncs.Add(1)
		return s.flush(false)
	}
	return s.SyncSince(s.Sample())
}

// Sample returns the flush sequence to pass to SyncSince. Call it after
// the writes to be synced have completed; a sample taken earlier may let
// SyncSince skip a flush that was needed (the read-before-writeback
// mutant of docs/flushseq.md).
func (s *Syncer) Sample() int64 {
	if s.policy == Always {
		return 0
	}
	return s.h.Seq.Sample()
}

// SyncSince makes durable every write that completed before Sample
// returned sample.
func (s *Syncer) SyncSince(sample int64) error {
	s.st.syncs.Add(1)
	if s.policy == Always {
		return s.flush(false)
	}
	for drained := false; ; drained = true {
		if s.flushedSince(sample) {
			s.st.skipped.Add(1)
			if drained {
				s.st.joined.Add(1)
			}
			return nil
		}
		if s.policy == SkipIfFlushedSince {
			return s.flush(true)
		}
		// A flush numbered above sample started after the writes
		// completed: wait for it to end instead of issuing another.
		if seq := s.h.Seq.Submitted.Load(); seq > sample {
			s.h.Queue.Wait(func() bool { _, busy := s.st.inFlight[seq]; return !busy && s.st.numbering == 0 })
			if s.flushedSince(sample) || s.fault == implfault.JoinNoFallback {
				s.st.skipped.Add(1)
				s.st.joined.Add(1)
				return nil
			}
			return s.flush(true)
		}
		if s.policy != GroupCommit || drained {
			return s.flush(true)
		}
		if s.fault == implfault.GroupNoWait {
			var busy bool
			s.h.Queue.Wake(func() { busy = len(s.st.inFlight) > 0 })
			if busy {
				s.st.skipped.Add(1)
				return nil
			}
		}
		// Group commit: let the earlier flushes end, then look again.
		s.h.Queue.Wait(func() bool {
			if s.st.numbering > 0 {
				return false
			}
			for seq := range s.st.inFlight {
				if seq <= sample {
					return false
				}
			}
			return true
		})
	}
}

func (s *Syncer) flushedSince(sample int64) bool {
	if s.fault == implfault.GreaterEqual {
		return s.h.Seq.Completed.Load() >= sample
	}
	return s.h.Seq.FlushedSince(sample)
}

// flush issues a flush, numbered when the policy shares flushes.
func (s *Syncer) flush(numbered bool) error {
	s.st.flushes.Add(1)
	if !numbered {
		err := s.h.Dev.Flush()
		if err != nil {
			s.st.failed.Add(1)
		}
		return err
	}
	// Numbering and registering are two steps (Start is an atomic on the
	// shared words, the registry is under the queue's lock): announce the
	// flush first, so that no waiter sees it numbered and not registered.
	s.h.Queue.Wake(func() { s.st.numbering++ })
	seq := s.h.Seq.Start()
	s.h.Queue.Wake(func() { s.st.numbering--; s.st.inFlight[seq] = struct{}{} })
	err := s.h.Dev.Flush()
	if err == nil {
		s.h.Seq.Done(seq)
	} else {
		s.st.failed.Add(1)
	}
	s.h.Queue.Wake(func() { delete(s.st.inFlight, seq) })
	return err
}

// SyncStats counts what the Syncers sharing one state did.
type SyncStats struct {
	Syncs   int64 // Sync and SyncSince calls
	Skipped int64 // of those, the ones that returned without a flush of their own
	Joined  int64 // of the skipped, the ones that waited for a flush in flight
	Flushes int64 // flushes issued
	Failed  int64 // flushes that failed
}

// Stats returns the counts so far.
func (s *Syncer) Stats() SyncStats {
	return SyncStats{Syncs: s.st.syncs.Load(), Skipped: s.st.skipped.Load(), Joined: s.st.joined.Load(),
		Flushes: s.st.flushes.Load(), Failed: s.st.failed.Load()}
}

// AppendState appends to b an encoding of the state the Syncers bound to
// s share that decides what they do: the numbers of the flushes in flight
// (the statistics are only counted). The model world's exhaustive search
// keys states by it (world.World.Shared). It reads that state without the
// wait queue's lock: call it only while no Sync runs, as the model world
// does between steps.
func (s *Syncer) AppendState(b []byte) []byte {
	seqs := make([]int64, 0, len(s.st.inFlight))
	for seq := range s.st.inFlight {
		seqs = append(seqs, seq)
	}
	slices.Sort(seqs)
	b = binary.AppendUvarint(b, uint64(s.st.numbering))
	for _, seq := range seqs {
		b = binary.AppendVarint(b, seq)
	}
	return b
}
