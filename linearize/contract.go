package linearize

import (
	"fmt"
	"hash/maphash"
	"math/bits"
	"strings"

	"github.com/anishathalye/porcupine"

	"github.com/flushproof/flushproof/spec"
)

// ContractModel is the device contract (docs/semantics.md;
// spec.Contract's rules 1-6) as a porcupine model of one block, written
// directly from the rules: it does not use device.Device, so that checking
// the device's histories against it means something.
//
// The linearization point of a write's land operation is the moment its data
// reached the device; the landing order is what porcupine searches over.
// Per block the model keeps:
//
//   - vis: what a read returns now, the version that landed last;
//   - cand: the landed versions that a crash may still leave (the cache may
//     write any of them back at any time), and whether the initial content
//     may still be there;
//   - for each landed write, landedBefore: the versions landed before it;
//   - completed: the writes whose end said OK, and for each flush, cover: the
//     writes completed when it was submitted (rule 2).
//
// When a write D becomes durable (its OK end without a volatile cache, or
// with FUA, rules 3 and 4; or the OK end of a flush that covers it, rule 2)
// the versions that landed before D can no longer come back: they leave cand,
// and so does the initial content. A crash leaves any version in cand.
// Without a volatile cache a flush changes nothing, and its failure is
// rejected: spec.Contract calls it impossible (rule 4).
//
// Without WriteDataDone events (the OS does not see them) an emulated FUA
// write promises only itself, as spec.Contract says for that case, and it
// ends, for ordering, when the OS sees it end.
//
// This is spec.Contract in operational form: a write W that ended before a
// durable D was submitted landed before D, so D removes it; a write that did
// not may land after D in some linearization, and survives.
//
// The model is partitioned per block: each partition holds the operations
// of the writes and reads of one block, all flush operations and the crash.
// That is sound and complete because the contract treats blocks
// independently (rule 6): what a crash may leave on b depends only on the
// writes to b, their landing order, and which of them are durable; a flush's
// coverage is per write (those completed at its submission), fixed by
// zero-width end and flush-submit operations that every partition orders the
// same way. A multi-block write lands once per block, possibly at different
// moments: the contract lets a device apply the blocks of a write
// independently (an in-flight write may be torn).
func ContractModel(cfg spec.Config) porcupine.NondeterministicModel {
	return porcupine.NondeterministicModel{
		Partition: partitionPerBlock,
		Init:      func() []any { return []any{blockState{}} },
		Step: func(s, in, out any) []any {
			return s.(blockState).step(cfg, in.(Input), out.(Output))
		},
		Equal:             func(a, b any) bool { return a.(blockState) == b.(blockState) },
		Hash:              func(s any) uint64 { return maphash.Comparable(hashSeed, s.(blockState)) },
		DescribeOperation: describeOperation,
		DescribeState:     func(s any) string { return s.(blockState).String() },
	}
}

// hashSeed is fixed for the process: porcupine only compares hashes of
// states within one check.
var hashSeed = maphash.MakeSeed()

// partitionPerBlock splits a history into one partition per block touched by
// a write or a read; flush operations and the crash go into every partition.
func partitionPerBlock(ops []porcupine.Operation) [][]porcupine.Operation {
	var used uint8
	for _, op := range ops {
		used |= op.Input.(Input).Blocks
	}
	var groups []uint8
	for m := used; m != 0; m &= m - 1 {
		groups = append(groups, uint8(1)<<bits.TrailingZeros8(m))
	}
	return partition(ops, groups)
}

// partition returns, for each group of blocks, the operations that touch
// it, plus the flush operations and the crash (which touch no block).
func partition(ops []porcupine.Operation, groups []uint8) [][]porcupine.Operation {
	if len(groups) == 0 {
		return [][]porcupine.Operation{ops}
	}
	var parts [][]porcupine.Operation
	for _, g := range groups {
		var part []porcupine.Operation
		for _, op := range ops {
			if in := op.Input.(Input); in.Blocks == 0 || in.Blocks&g != 0 {
				part = append(part, op)
			}
		}
		parts = append(parts, part)
	}
	return parts
}

// blockState is the contract's state of one block. It is comparable, so
// porcupine can merge equal states.
type blockState struct {
	vis          uint8  // what a read returns now (0 = initial content)
	landed       uint32 // writes landed on this block (bit i = W(i+1))
	cand         uint32 // landed versions a crash may still leave
	initialGone  bool   // a durable write removed the initial content
	completed    uint32 // writes on this block whose end said OK
	landedBefore [spec.MaxWrites]uint32
	flushes      uint16                  // flushes submitted
	cover        [spec.MaxFlushes]uint32 // completed at each flush's submission
	crashed      bool
	post         uint8 // after the crash: the content this block holds
}

// step returns the successors of s; none if the operation cannot happen
// here with this output.
func (s blockState) step(cfg spec.Config, in Input, out Output) []any {
	switch in.Kind {
	case OpLand:
		if s.crashed {
			if out.Result == OK {
				return nil // a completed write landed before the crash
			}
			return []any{s} // it never landed
		}
		landed := s.land(in.ID)
		if out.Result == OK {
			return []any{landed}
		}
		return []any{landed, s} // a failed or unfinished write may or may not have landed
	case OpWriteEnd:
		if out.Result != OK {
			return []any{s} // rule 5: a failed write is never durable
		}
		bit := uint32(1) << (in.ID - 1)
		if s.landed&bit == 0 {
			return nil
		}
		s.completed |= bit
		if !cfg.VolatileCache || in.FUA { // rules 3 and 4
			s.persist(in.ID)
		}
		return []any{s}
	case OpFlushSubmit:
		s.flushes |= 1 << (in.ID - 1)
		s.cover[in.ID-1] = s.completed // rule 2
		return []any{s}
	case OpFlushEnd:
		if s.flushes&(1<<(in.ID-1)) == 0 {
			return nil
		}
		if !cfg.VolatileCache {
			if out.Result != OK {
				return nil // rule 4: an empty flush completes at once
			}
			return []any{s}
		}
		if out.Result == OK {
			for m := s.cover[in.ID-1]; m != 0; m &= m - 1 {
				s.persist(bits.TrailingZeros32(m) + 1)
			}
		}
		return []any{s} // rule 5: a failed flush guarantees nothing
	case OpCrash:
		if s.crashed {
			return nil
		}
		// Only the content matters from now on; dropping the rest lets
		// porcupine merge states.
		var next []any
		if !s.initialGone {
			next = append(next, blockState{crashed: true})
		}
		for m := s.cand; m != 0; m &= m - 1 {
			next = append(next, blockState{crashed: true, post: uint8(bits.TrailingZeros32(m) + 1)})
		}
		return next
	case OpRead:
		want := s.vis
		if s.crashed {
			want = s.post
		}
		if out.Value != int(want) {
			return nil
		}
		return []any{s}
	}
	return nil
}

func (s blockState) land(id int) blockState {
	bit := uint32(1) << (id - 1)
	s.landedBefore[id-1] = s.landed
	s.landed |= bit
	s.cand |= bit
	s.vis = uint8(id)
	return s
}

// persist makes write id durable: what landed before it cannot come back.
func (s *blockState) persist(id int) {
	s.cand &^= s.landedBefore[id-1]
	s.initialGone = true
}

// String describes the state for porcupine's visualisation.
func (s blockState) String() string {
	if s.crashed {
		return "crashed, holds " + spec.ContentName(int(s.post))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "reads %s; crash may leave %v", spec.ContentName(int(s.vis)),
		spec.CrashSet{Writes: s.cand, Initial: !s.initialGone})
	if s.completed != 0 {
		fmt.Fprintf(&b, "; completed %s", writeList(s.completed))
	}
	return b.String()
}

// writeList renders a write mask as "W1 W3".
func writeList(m uint32) string {
	var parts []string
	for ; m != 0; m &= m - 1 {
		parts = append(parts, fmt.Sprintf("W%d", bits.TrailingZeros32(m)+1))
	}
	return strings.Join(parts, " ")
}
