package props

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/flushproof/flushproof/internal/rapidctl"
	"github.com/flushproof/flushproof/model/device"
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/explore/exploretest"
	"github.com/flushproof/flushproof/model/odsync"
	"github.com/flushproof/flushproof/spec"
)

// TestODSyncDeviceAgreesWithOperationalDevice: the model's device is
// spec.Contract. On the histories this protocol produces (random schedules
// of the real variants, with EIO and the flusher), the operational device
// device.Device, over every landing order, explains each history and may
// leave after a crash exactly what the contract allows, block by block.
func TestODSyncDeviceAgreesWithOperationalDevice(t *testing.T) {
	rapidctl.Check(t, 400, func(rt *rapid.T) {
		c := odsync.Config{
			Variant:   rapid.SampledFrom([]odsync.Variant{odsync.Baseline, odsync.Patched}).Draw(rt, "variant"),
			Device:    rapid.SampledFrom(spec.Configs()).Draw(rt, "device"),
			Tasks:     2,
			Writes:    2,
			Blocks:    2,
			Failures:  rapid.Bool().Draw(rt, "EIO"),
			Writeback: rapid.Bool().Draw(rt, "background write-back"),
		}
		sys, err := odsync.NewSystem(c)
		require.NoError(rt, err)
		path, end := exploretest.Walk(rt, sys, rapid.IntRange(1, 120).Draw(rt, "steps"))
		steps := make([]explore.Step, len(path))
		for i, l := range path {
			steps[i] = explore.Step{Label: l}
		}
		h := exploretest.Collect(steps, sys.DeviceEvent)
		devs, err := device.Explain(c.Device, device.Correct, h)
		require.NoError(rt, err, "model.Device cannot explain the history %v", h)
		for b := 0; b < c.Tasks*c.Blocks; b++ {
			assert.Equal(rt, end.CrashSet(b).String(), device.CrashUnion(devs, b).String(), "b%d after %v", b, h)
		}
	})
}
