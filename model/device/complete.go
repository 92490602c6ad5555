package device

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/spec"
)

// Completeness is the other direction of the device check: every content the
// contract allows after a history must be left by the device for that same
// history under some landing order. A device that misses an allowed
// behaviour makes protocols look safer than they are (the negative control
// FlushCoversInFlight is such a device).
//
// Landing is the device's only hidden choice, so the check is a subset
// construction: a state of CompletenessSystem is the set of device states
// reachable with one visible history (every event but WriteLand), closed
// under landing. After a crash, the union of the members' crash sets must
// contain what the contract allows.
type CompletenessSystem struct {
	ds     *System
	intern map[Device]uint32
	devs   []Device
}

// HistoryClass is a state of the CompletenessSystem: the device states that
// one visible history can lead to. It holds the visible part shared by all
// members, and the members as a sorted list of interned device numbers (4
// bytes each). It is comparable.
type HistoryClass struct {
	base    State // dev is zero; tasks, contract and illegal are shared
	members string
}

// NewCompletenessSystem returns the subset construction for a workload.
func NewCompletenessSystem(w Workload) (*CompletenessSystem, error) {
	ds, err := NewSystem(w)
	if err != nil {
		return nil, err
	}
	return &CompletenessSystem{ds: ds, intern: make(map[Device]uint32)}, nil
}

func (c *CompletenessSystem) id(d Device) uint32 {
	if i, ok := c.intern[d]; ok {
		return i
	}
	i := uint32(len(c.devs))
	c.intern[d] = i
	c.devs = append(c.devs, d)
	return i
}

func (c *CompletenessSystem) members(s HistoryClass) []Device {
	out := make([]Device, 0, len(s.members)/4)
	for i := 0; i < len(s.members); i += 4 {
		out = append(out, c.devs[binary.LittleEndian.Uint32([]byte(s.members[i:i+4]))])
	}
	return out
}

// class closes a set of devices under landing and packs it with base.
func (c *CompletenessSystem) class(base State, devs []Device) HistoryClass {
	closed := closeLanding(devs)
	ids := make([]uint32, 0, len(closed))
	for _, d := range closed {
		ids = append(ids, c.id(d))
	}
	slices.Sort(ids)
	buf := make([]byte, 4*len(ids))
	for i, id := range ids {
		binary.LittleEndian.PutUint32(buf[4*i:], id)
	}
	base.dev = Device{}
	return HistoryClass{base: base, members: string(buf)}
}

// Actors implements System.
func (c *CompletenessSystem) Actors() []string { return c.ds.Actors() }

// Describe implements System.
func (c *CompletenessSystem) Describe(l explore.Label) string { return c.ds.Describe(l) }

// Init implements System.
func (c *CompletenessSystem) Init() []HistoryClass {
	st := c.ds.Init()[0]
	return []HistoryClass{c.class(st, []Device{st.dev})}
}

// Next implements System: one successor class per visible event.
func (c *CompletenessSystem) Next(s HistoryClass, yield func(explore.Label, HistoryClass)) {
	type succ struct {
		base State
		devs []Device
	}
	var order []explore.Label
	next := make(map[explore.Label]*succ)
	for _, d := range c.members(s) {
		st := s.base
		st.dev = d
		c.ds.Next(st, func(l explore.Label, t State) {
			if spec.Kind(l.Kind) == spec.WriteLand {
				return
			}
			n := next[l]
			if n == nil {
				n = &succ{base: t}
				next[l] = n
				order = append(order, l)
			}
			n.devs = append(n.devs, t.dev)
		})
	}
	for _, l := range order {
		n := next[l]
		yield(l, c.class(n.base, n.devs))
	}
}

// Unfinished implements System: the tasks that have not returned after
// the class's history. Every member agrees: a command's end is a visible
// event, and the tasks' progress is in the shared part.
func (c *CompletenessSystem) Unfinished(s HistoryClass) uint64 {
	if len(s.members) == 0 {
		return 0
	}
	st := s.base
	st.dev = c.devs[binary.LittleEndian.Uint32([]byte(s.members[:4]))]
	return c.ds.Unfinished(st)
}

// Check implements System: after a crash, every allowed content is left by
// some member.
func (c *CompletenessSystem) Check(s HistoryClass) error {
	devs := c.members(s)
	if len(devs) == 0 || !devs[0].Crashed() || s.base.illegal.Kind != 0 {
		return nil
	}
	for b := 0; b < c.ds.blocks; b++ {
		var seen spec.CrashSet
		for i := range devs {
			seen = seen.Union(devs[i].CrashSet(b))
		}
		missing := s.base.con.Allowed(b).Minus(seen)
		if !missing.Empty() {
			return fmt.Errorf("incomplete device: after this history the contract allows b%d = %s, but under no landing order does the device leave it (only %v)",
				b, spec.ContentName(missing.Contents()[0]), seen)
		}
	}
	return nil
}

// CheckComplete runs the completeness search for a workload.
func CheckComplete(w Workload, opt explore.Options) (*explore.Result[HistoryClass], error) {
	c, err := NewCompletenessSystem(w)
	if err != nil {
		return nil, err
	}
	return explore.Explore[HistoryClass](c, opt), nil
}

// SequentialOnly implements explore.Sequential: the completeness system interns device states while it
// computes successors (c.intern, c.devs), which is not safe for concurrent
// use, so it is searched by one worker.
func (c *CompletenessSystem) SequentialOnly() {}

var _ explore.Sequential = (*CompletenessSystem)(nil)
