package linearize

import (
	"fmt"
	"hash/maphash"
	"math/bits"
	"strings"

	"github.com/anishathalye/porcupine"

	"github.com/flushproof/flushproof/model/device"
	"github.com/flushproof/flushproof/spec"
)

// DeviceModel is device.Device (or one of its wrong variants) lifted to a
// porcupine model: a history is linearizable with respect to it when some
// landing order, and after the crash some choice among what the device may
// leave, lets device.Device produce exactly what the OS saw. Checking the
// contract's own histories against it is the completeness direction: every
// outcome the contract allows must be one the device can produce.
//
// Each operation applies device.Device events at its linearization point:
//
//	land W    one operation per block of W: the first to be linearized
//	on b      submits W (WriteSubmit), each lands W on its block
//	          (WriteLand); once every block landed, for an emulated FUA
//	          write (unless the bug is EmulatedFUANoPostFlush), also
//	          WriteDataDone, so the post-flush covers what the device had
//	          completed at that point, which porcupine may place anywhere in
//	          the write's interval. A write that failed or was in flight at
//	          the crash may also not have landed on a block, or have landed
//	          without its data completing (emulated FUA).
//	end W     WriteComplete or WriteFail
//	flush     FlushSubmit; FlushComplete or FlushFail
//	crash     Crash
//	read      before the crash, spec.Read must be accepted (the device's
//	          cache holds that version); after it, the block's content must
//	          be one the device may leave, and stay the same for later reads
//
// The device numbers writes in the order it sees them submitted, which here
// is the order of their first landing, so the state maps the history's write
// numbers to the device's. A write that never landed anywhere is left out of
// the device: submitted, never landed, then failed changes nothing in
// device.Device, and one in flight at the crash is remembered per block as
// such, since the device's CrashSet includes it (it may land as power fails). That keeps the numbering, and
// porcupine's cache, independent of where porcupine places such a point.
// After the crash a block's content is chosen at its first read; since
// blocks are independent, that accepts the same histories as choosing every
// combination at the crash, with far fewer states.
//
// The model is partitioned (see partitionByWrites): per block without
// emulated FUA, by groups of blocks that writes and post-flushes connect
// with it. This is exact, not an approximation: device.Device's behaviour on
// a block depends only on the landings on that block (what landed on it
// before each write, which writes are durable, which are in flight) and on
// what makes writes durable: completions and flushes, whose order is fixed
// by zero-width operations present in every partition that needs them, and
// post-flushes, kept with everything they may cover. Without partitions
// porcupine would search every interleaving of landings on unrelated blocks.
func DeviceModel(cfg spec.Config, bug device.Bug) porcupine.NondeterministicModel {
	return porcupine.NondeterministicModel{
		Partition: partitionByWrites(cfg),
		Init:      func() []any { return []any{deviceState{dev: device.New(cfg, bug)}} },
		Step: func(s, in, out any) []any {
			return s.(deviceState).step(bug, in.(Input), out.(Output))
		},
		Equal:             func(a, b any) bool { return a.(deviceState) == b.(deviceState) },
		Hash:              func(s any) uint64 { return maphash.Comparable(hashSeed, s.(deviceState)) },
		DescribeOperation: describeOperation,
		DescribeState:     func(s any) string { return s.(deviceState).String() },
	}
}

// partitionByWrites splits a history for DeviceModel.
//
// Without emulated FUA, one partition per block. device.Device lands a write
// block by block, and what it does on block b depends only on the landings
// on b, on which writes completed (fixed by the zero-width end operations)
// and on flushes (in every partition). So in block b's partition each write
// is submitted to the device as a write of b alone (its land operation's
// Write is narrowed to b).
//
// With emulated FUA, a FUA write's data must have landed on all its blocks
// before its post-flush, and the post-flush covers writes to any block, so
// such a write joins every block into one group; otherwise the groups are
// the blocks that writes connect.
func partitionByWrites(cfg spec.Config) func([]porcupine.Operation) [][]porcupine.Operation {
	return func(ops []porcupine.Operation) [][]porcupine.Operation {
		var all uint8
		for _, op := range ops {
			all |= op.Input.(Input).Blocks
		}
		if !cfg.EmulatesFUA() {
			parts := partitionPerBlock(ops)
			for _, part := range parts {
				for i, op := range part {
					if in := op.Input.(Input); in.Kind == OpLand {
						in.Write = in.Blocks
						part[i].Input = in
					}
				}
			}
			return parts
		}
		var groups []uint8
		for _, op := range ops {
			in := op.Input.(Input)
			g := in.Blocks
			if in.Kind == OpLand {
				g = in.Write // a write's blocks stay together
				if in.FUA {
					g = all // its post-flush covers writes to any block
				}
			}
			if g == 0 {
				continue
			}
			var rest []uint8
			for _, h := range groups {
				if h&g != 0 {
					g |= h
				} else {
					rest = append(rest, h)
				}
			}
			groups = append(rest, g)
		}
		return partition(ops, groups)
	}
}

// deviceState is device.Device plus the bookkeeping of the lifting. It is
// comparable.
type deviceState struct {
	dev       device.Device
	devNum    [spec.MaxWrites]uint8 // history write W(i+1) -> the device's number for it (0 = not submitted)
	submitted uint8                 // writes submitted to the device
	// ended: the history's writes (bit i = W(i+1)) whose end was linearized;
	// unlandedOn[b]: writes in flight at the crash that, in this
	// linearization, never landed on block b (they may as power fails).
	ended      uint32
	unlandedOn [spec.MaxBlocks]uint32
	post       [spec.MaxBlocks]uint8 // after the crash: the content of each block read so far
	postRead   uint8                 // blocks whose post-crash content a read fixed
}

func (s deviceState) apply(e spec.Event) (deviceState, bool) {
	d, err := s.dev.Apply(e)
	if err != nil {
		return s, false
	}
	s.dev = d
	return s, true
}

func (s deviceState) step(bug device.Bug, in Input, out Output) []any {
	switch in.Kind {
	case OpLand:
		return s.land(bug, in, out)
	case OpWriteEnd:
		s.ended |= 1 << (in.ID - 1)
		n := int(s.devNum[in.ID-1])
		if n == 0 { // never landed anywhere: the device never saw it
			if out.Result == OK {
				return nil
			}
			return []any{s}
		}
		kind := spec.WriteComplete
		if out.Result != OK {
			kind = spec.WriteFail
		}
		return successor(s.apply(spec.Event{Kind: kind, ID: n}))
	case OpFlushSubmit:
		return successor(s.apply(spec.Event{Kind: spec.FlushSubmit, ID: in.ID}))
	case OpFlushEnd:
		kind := spec.FlushComplete
		if out.Result != OK {
			kind = spec.FlushFail
		}
		return successor(s.apply(spec.Event{Kind: kind, ID: in.ID}))
	case OpCrash:
		return successor(s.apply(spec.Event{Kind: spec.Crash}))
	case OpRead:
		return s.read(in, out)
	}
	return nil
}

// land applies one block's land operation. A write that completed landed on
// every block; one that failed or was in flight at the crash may or may not
// have landed on this one.
func (s deviceState) land(bug device.Bug, in Input, out Output) []any {
	bit := uint32(1) << (in.ID - 1)
	var next []any
	if out.Result != OK {
		never := s
		if out.Result == InFlight {
			never.unlandedOn[bits.TrailingZeros8(in.Blocks)] |= bit
		}
		next = append(next, never)
	}
	if s.dev.Crashed() || s.ended&bit != 0 {
		if out.Result == OK {
			return nil // a completed write landed before it ended
		}
		return next // nothing lands after the crash, or after the write ended
	}
	n := int(s.devNum[in.ID-1])
	ok := true
	if n == 0 { // the first block to land submits the write to the device
		n = int(s.submitted) + 1
		s.submitted++
		s.devNum[in.ID-1] = uint8(n)
		s, ok = s.apply(spec.Event{Kind: spec.WriteSubmit, ID: n, Blocks: in.Write, FUA: in.FUA})
	}
	if !ok {
		return next
	}
	landed, ok := s.apply(spec.Event{Kind: spec.WriteLand, ID: n, Blocks: in.Blocks})
	if !ok {
		return next
	}
	if landed.dev.Config().EmulatesFUA() && in.FUA && bug != device.EmulatedFUANoPostFlush {
		// Once the last block landed the data is done and the post-flush
		// goes out; a write that never completed may have stopped before.
		if dataDone, ok := landed.apply(spec.Event{Kind: spec.WriteDataDone, ID: n}); ok {
			next = append(next, dataDone)
			if out.Result == OK {
				return next
			}
		}
	}
	return append(next, landed)
}

func (s deviceState) read(in Input, out Output) []any {
	b := bits.TrailingZeros8(in.Blocks)
	v := out.Value
	if v < 0 || v > spec.MaxWrites {
		return nil
	}
	devV := 0
	if v > 0 {
		devV = int(s.devNum[v-1])
	}
	if !s.dev.Crashed() {
		if v > 0 && devV == 0 {
			return nil // that write has not landed
		}
		return successor(s.apply(spec.Event{Kind: spec.Read, Blocks: in.Blocks, Value: devV}))
	}
	if s.postRead&in.Blocks != 0 {
		if int(s.post[b]) != v {
			return nil
		}
		return []any{s}
	}
	may := v == 0 && s.dev.CrashSet(b).Initial ||
		devV > 0 && s.dev.CrashSet(b).Has(devV) ||
		v > 0 && s.unlandedOn[b]&(1<<(v-1)) != 0
	if !may {
		return nil
	}
	s.post[b] = uint8(v)
	s.postRead |= in.Blocks
	return []any{s}
}

func successor(s deviceState, ok bool) []any {
	if !ok {
		return nil
	}
	return []any{s}
}

// historyNum maps a device write number back to the history's (0 stays 0,
// the initial content).
func (s deviceState) historyNum(n int) int {
	if n == 0 {
		return 0
	}
	for i, d := range s.devNum {
		if int(d) == n {
			return i + 1
		}
	}
	return 0
}

// crashSet is what the device may leave on block b, in history numbers.
func (s deviceState) crashSet(b int) spec.CrashSet {
	cs := s.dev.CrashSet(b)
	out := spec.CrashSet{Initial: cs.Initial, Writes: s.unlandedOn[b]}
	for m := cs.Writes; m != 0; m &= m - 1 {
		if w := s.historyNum(bits.TrailingZeros32(m) + 1); w > 0 {
			out.Writes |= 1 << (w - 1)
		}
	}
	return out
}

// String describes the state for porcupine's visualisation, in the
// history's write numbers.
func (s deviceState) String() string {
	var parts []string
	for b := 0; b < spec.MaxBlocks; b++ {
		cs := s.crashSet(b)
		untouched := cs == (spec.CrashSet{Initial: true})
		switch {
		case s.dev.Crashed() && s.postRead&(1<<b) != 0:
			parts = append(parts, fmt.Sprintf("b%d holds %s", b, spec.ContentName(int(s.post[b]))))
		case s.dev.Crashed():
			if !untouched {
				parts = append(parts, fmt.Sprintf("b%d may hold %v", b, cs))
			}
		default:
			vis := s.historyNum(s.dev.ReadValue(b))
			if vis != 0 || !untouched {
				parts = append(parts, fmt.Sprintf("b%d reads %s, crash may leave %v", b, spec.ContentName(vis), cs))
			}
		}
	}
	prefix := ""
	if s.dev.Crashed() {
		prefix = "crashed: "
	}
	if len(parts) == 0 {
		return prefix + "every block initial"
	}
	return prefix + strings.Join(parts, "; ")
}
