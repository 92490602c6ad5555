package device

import (
	"fmt"

	"github.com/flushproof/flushproof/spec"
)

// Explain returns every state the device can be in after the visible history
// h (any events but WriteLand, which the device chooses itself), over every
// landing order, closed under further landing. It is empty when no landing
// order explains h; the error then names the first event that nothing
// explains. Reads in h must return what the device's cache holds.
//
// This is how recorded or generated histories are checked against the
// device: rapid uses it for completeness, and linearize for its porcupine
// model of the device.
func Explain(cfg spec.Config, bug Bug, h []spec.Event) ([]Device, error) {
	cur := closeLanding([]Device{New(cfg, bug)})
	for i, e := range h {
		if e.Kind == spec.WriteLand {
			return nil, fmt.Errorf("event %d (%v): landing is the device's choice, leave it out", i+1, e)
		}
		var next []Device
		for _, d := range cur {
			if n, err := d.Apply(e); err == nil {
				next = append(next, n)
			}
		}
		if len(next) == 0 {
			return nil, fmt.Errorf("event %d (%v): no landing order of the device explains it", i+1, e)
		}
		cur = closeLanding(next)
	}
	return cur, nil
}

// CrashUnion returns the union of the devices' crash sets for block b.
func CrashUnion(devs []Device, b int) spec.CrashSet {
	var s spec.CrashSet
	for i := range devs {
		s = s.Union(devs[i].CrashSet(b))
	}
	return s
}

// closeLanding adds every state reachable by landing writes, deduplicated.
func closeLanding(devs []Device) []Device {
	seen := make(map[Device]bool, len(devs))
	var out []Device
	for _, d := range devs {
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	for i := 0; i < len(out); i++ {
		d := out[i]
		d.Steps(false, func(e spec.Event) {
			if e.Kind != spec.WriteLand {
				return
			}
			if n, err := d.Apply(e); err == nil && !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		})
	}
	return out
}
