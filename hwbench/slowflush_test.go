package hwbench

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSlowFlushDevice: -device=slowflush:D serves an image through
// crashlab's FUSE recorder under a loop device of its own, and every flush
// then takes at least D (the device limit case is one writer's write +
// flush). It needs root and /dev/fuse, and leaves nothing behind.
//
// Where it cannot run it is skipped, with the reason on stderr too, unless
// -device=slowflush:D asked for such a device: then it fails.
func TestSlowFlushDevice(t *testing.T) {
	asked := strings.HasPrefix(*flagDevice, "slowflush:")
	if _, err := os.Stat("/dev/fuse"); err != nil {
		unavailable(t, asked, "a slowflush device needs FUSE: %v", err)
	}
	cfg := Config{Duration: 200 * time.Millisecond, Span: 16 << 20, Writers: 4, Scenarios: []string{"S2"}}
	tg, err := OpenTarget(TargetOptions{Path: "slowflush:3ms", Region: cfg.Region()})
	if errors.Is(err, ErrLoopUnavailable) {
		unavailable(t, asked, "%v", err)
	}
	require.NoError(t, err)
	defer func() { require.NoError(t, tg.Close()) }()
	assert.Contains(t, tg.Kind, "flushes take 3ms")
	cfg.FIO = false
	rep, err := Run(context.Background(), tg, cfg)
	require.NoError(t, err)
	var limit *Result
	for i, r := range rep.Results {
		if r.Scenario == "S2" && r.Role == "reference" {
			limit = &rep.Results[i]
		}
	}
	require.NotNil(t, limit, "the device limit case ran")
	assert.GreaterOrEqual(t, limit.Percentile(1), 3*time.Millisecond, "a write + flush takes at least the flush delay")

	_, err = OpenTarget(TargetOptions{Path: "slowflush:soon", Region: cfg.Region()})
	assert.ErrorContains(t, err, "bad duration")
}
