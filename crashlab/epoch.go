package crashlab

import (
	"fmt"
	"slices"
	"strings"
)

// Crash states that matter, enumerated, not drawn: for every write of the
// log, a crash right after it, its flush epoch's unflushed writes (those
// after the last flush, up to the write) landing in log order, except for
// up to K changes:
//
//   - Drop: a write did not land at all (its sectors keep what was there);
//   - Late: a write landed after a newer one it overlaps, so it holds the
//     sectors they share (the two were reordered);
//   - TornHead, TornTail: only the first, or only the last, half of a
//     multi-sector write's sectors landed.
//
// Each is within the device contract (docs/semantics.md, rule 6), as the
// random states are (replay.go): every sector holds the durable content or
// the data of an unflushed write that covers it. With K = 0 these are the
// prefixes of the log at every write (what dm-log-writes replays at its
// marks, here at every write); each change is one more reordering,
// dropped write or tear, as ACE bounds its workloads. Identical images
// are found by hash before anything is built (imageKey), so a state that
// only repeats another is counted, not replayed.

// Epoch is a state of EpochStates.
const Epoch StateKind = Random + 1

// ChangeKind is what one change of an Epoch state does.
type ChangeKind uint8

// The changes.
const (
	ChangeDrop     ChangeKind = iota + 1 // Seq did not land
	ChangeLate                           // Seq landed after Other, a newer write it overlaps
	ChangeTornHead                       // only the first half of Seq's sectors landed
	ChangeTornTail                       // only the last half of Seq's sectors landed
)

// Change is one departure of an Epoch state from its epoch's log order.
type Change struct {
	Kind  ChangeKind
	Seq   uint64
	Other uint64 // ChangeLate: the newer write Seq landed after
}

func (c Change) String() string {
	switch c.Kind {
	case ChangeDrop:
		return fmt.Sprintf("op %d dropped", c.Seq)
	case ChangeLate:
		return fmt.Sprintf("op %d landed after op %d", c.Seq, c.Other)
	case ChangeTornHead:
		return fmt.Sprintf("op %d torn (its first half landed)", c.Seq)
	case ChangeTornTail:
		return fmt.Sprintf("op %d torn (its last half landed)", c.Seq)
	}
	return fmt.Sprintf("Change(%d)", uint8(c.Kind))
}

// MaxK bounds the changes of an Epoch state.
const MaxK = 4

// EpochLimit bounds the Epoch states of one log: EpochStates stops there
// and says so (truncated).
const EpochLimit = 200_000

// EpochStates returns the Epoch states of the log with up to k changes
// each, for the crashes after every write numbered from `from` on (the
// states before it hold no file system: mkfs had not finished), in log
// order and by number of changes, and whether it stopped at EpochLimit.
// Index is left 0: the caller numbers the states it keeps.
func EpochStates(ops []Op, k int, from uint64) (states []CrashState, truncated bool) {
	ops = sortedBySeq(ops)
	var flush uint64
	durable := 0
	var epoch []Op // the unflushed writes so far
	for _, op := range ops {
		if op.Kind == OpFlush {
			flush = op.Seq
			durable += len(epoch)
			epoch = epoch[:0]
			continue
		}
		epoch = append(epoch, op)
		if op.Seq < from {
			continue
		}
		base := CrashState{Kind: Epoch, Cut: op.Seq, Flush: flush, Durable: durable, Unflushed: len(epoch)}
		cands := changesOf(epoch)
		var pick func(start int, chosen []Change) bool
		pick = func(start int, chosen []Change) bool {
			if len(states) == EpochLimit {
				return false
			}
			s := base
			s.Changes = slices.Clone(chosen)
			s.Landed = landedWrites(s.epochWinners(epoch))
			states = append(states, s)
			if len(chosen) == k {
				return true
			}
			for i := start; i < len(cands); i++ {
				if conflicts(chosen, cands[i]) {
					continue
				}
				if !pick(i+1, append(chosen, cands[i])) {
					return false
				}
			}
			return true
		}
		if !pick(0, nil) {
			return states, true
		}
	}
	return states, false
}

// changesOf lists the changes an epoch's writes allow.
func changesOf(epoch []Op) []Change {
	var out []Change
	for i, w := range epoch {
		out = append(out, Change{Kind: ChangeDrop, Seq: w.Seq})
		off, end := opRange(w)
		if (end-off)/SectorSize >= 2 {
			out = append(out, Change{Kind: ChangeTornHead, Seq: w.Seq}, Change{Kind: ChangeTornTail, Seq: w.Seq})
		}
		for _, n := range epoch[i+1:] {
			if noff, nend := opRange(n); noff < end && off < nend {
				out = append(out, Change{Kind: ChangeLate, Seq: w.Seq, Other: n.Seq})
			}
		}
	}
	return out
}

// conflicts reports whether c cannot join chosen: one change a write (a
// write dropped or torn is not also moved), and nothing moved after a
// write that did not land whole.
func conflicts(chosen []Change, c Change) bool {
	for _, o := range chosen {
		if o.Seq == c.Seq || c.Kind == ChangeLate && o.Seq == c.Other || o.Kind == ChangeLate && o.Other == c.Seq {
			return true
		}
	}
	return false
}

// landedWrites counts the writes that hold a sector in win.
func landedWrites(win map[int64]uint64) int {
	seen := map[uint64]bool{}
	for _, seq := range win {
		seen[seq] = true
	}
	return len(seen)
}

// epochWinners maps each sector an unflushed write of an Epoch state
// landed on to that write: the writes after Flush up to Cut applied in log
// order, less those dropped, a torn one on half of its sectors, and a late
// one applied again, after the newer write it overlaps, on their shared
// sectors.
func (s CrashState) epochWinners(ops []Op) map[int64]uint64 {
	change := map[uint64]Change{}
	for _, c := range s.Changes {
		change[c.Seq] = c
	}
	win := map[int64]uint64{}
	late := map[uint64][]Op{} // newer write -> the late writes to apply after it
	for _, op := range ops {
		if op.Kind == OpFlush || op.Seq <= s.Flush || op.Seq > s.Cut {
			continue
		}
		off, end := opRange(op)
		first, last := off/SectorSize, (end+SectorSize-1)/SectorSize
		c := change[op.Seq]
		switch c.Kind {
		case ChangeDrop:
			continue
		case ChangeTornHead:
			last = first + (last-first)/2
		case ChangeTornTail:
			first = last - (last-first)/2
		}
		for sec := first; sec < last; sec++ {
			win[sec] = op.Seq
		}
		if c.Kind == ChangeLate {
			late[c.Other] = append(late[c.Other], op)
		}
		for _, l := range late[op.Seq] {
			// l lands after op: it takes back the sectors they share.
			loff, lend := opRange(l)
			for sec := max(loff, off) / SectorSize; sec*SectorSize < min(lend, end); sec++ {
				win[sec] = l.Seq
			}
		}
	}
	return win
}

// describeChanges is an Epoch state's changes, for Describe.
func describeChanges(cs []Change) string {
	if len(cs) == 0 {
		return "every unflushed write landed in log order"
	}
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.String()
	}
	return strings.Join(parts, ", ")
}
