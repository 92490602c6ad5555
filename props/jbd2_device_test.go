package props

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/flushproof/flushproof/internal/rapidctl"
	"github.com/flushproof/flushproof/model/device"
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/jbd2"
	"github.com/flushproof/flushproof/spec"
)

// TestJbd2DeviceAgreesWithOperationalDevice: the model's device is
// spec.Contract. On the histories this protocol produces (random schedules
// of every variant, with EIO), device.Device explains each history and may
// leave after a crash exactly what the contract allows, block by block.
func TestJbd2DeviceAgreesWithOperationalDevice(t *testing.T) {
	rapidctl.Check(t, 300, func(rt *rapid.T) {
		c := jbd2.StandardConfig(rapid.SampledFrom(jbd2.Variants()).Draw(rt, "variant"), rapid.SampledFrom(spec.Configs()).Draw(rt, "device"))
		c.Failures = rapid.Bool().Draw(rt, "EIO")
		sys, err := jbd2.NewSystem(c)
		require.NoError(rt, err)
		s := sys.Init()[0]
		var h []spec.Event
		for range rapid.IntRange(0, 30).Draw(rt, "steps") {
			type succ struct {
				l explore.Label
				s jbd2.State
			}
			var next []succ
			sys.Next(s, func(l explore.Label, n jbd2.State) { next = append(next, succ{l, n}) })
			if len(next) == 0 {
				break
			}
			pick := next[rapid.IntRange(0, len(next)-1).Draw(rt, "transition")]
			h = append(h, sys.DeviceEvents(pick.l)...)
			s = pick.s
		}
		devs, err := device.Explain(c.Device, device.Correct, h)
		require.NoError(rt, err, "device.Device cannot explain %v", h)
		for b := 0; b < c.Transactions*(c.Blocks+1); b++ {
			assert.Equal(rt, s.CrashSet(b).String(), device.CrashUnion(devs, b).String(), "b%d after %v", b, h)
		}
	})
}
