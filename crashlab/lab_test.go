package crashlab

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func labPrereqs(t *testing.T, fs FS) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("crashlab needs root (FUSE mount, loop devices, mount)")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("no FUSE: %v", err)
	}
	if missing := ReplayTools(fs); len(missing) > 0 {
		t.Skipf("missing tools for %s: %v", fs, missing)
	}
}

// TestLabFsyncWritersLoseNothing records 4 fsync writers on ext4 through
// the FUSE + loop recorder and replays every flush point and 40 random
// crash states: no acknowledged record may be missing, and every state
// must mount and fsck clean.
func TestLabFsyncWritersLoseNothing(t *testing.T) {
	labPrereqs(t, Ext4)
	res, err := RunLab(context.Background(), LabOptions{FS: Ext4, Writers: 4, Records: 5, Random: 40, ImageSize: 32 << 20, Seed: 1, Progress: func(s string) { t.Log(s) }})
	require.NoError(t, err)
	t.Logf("%d ops, %d flushes, %d acked; %v", res.Ops, res.Flushes, res.Acked, res.Replay)
	assert.Equal(t, 20, res.Acked)
	assert.Zero(t, res.Lost, "acknowledged records lost:\n%v", res.Replay.Failures())
	assert.Greater(t, len(res.Replay.Results), 40)
	// Every flush-point state mounts and fscks clean. A random state may
	// fail to mount only if it tore a write at 512-byte sectors (the loop
	// device's physical block), which ext4 does not survive in its
	// superblock (docs/crashlab.md); nothing else may fail.
	for _, f := range res.Replay.Failures() {
		assert.True(t, f.State.Kind == Random && f.State.Torn && f.Status == StatusMountError,
			"%s: %v (%v)", f.State.Describe(), f.Status, f.Err)
	}
}

// TestLabEarlyAckLoses is the negative control: acknowledging before fsync
// must be caught losing records in some replays.
func TestLabEarlyAckLoses(t *testing.T) {
	labPrereqs(t, Ext4)
	res, err := RunLab(context.Background(), LabOptions{FS: Ext4, Workload: EarlyAck, Writers: 4, Records: 5, Random: 40, ImageSize: 32 << 20, Seed: 1})
	require.NoError(t, err)
	t.Logf("%d ops, %d acked; %d of %d replays lost an acknowledged record", res.Ops, res.Acked, res.Lost, len(res.Replay.Results))
	assert.Positive(t, res.Lost, "acknowledging before fsync was not caught")
}

// TestLabSyncerLosesNothing: the impl Syncer (group commit) over O_DIRECT
// files on ext4 loses no acknowledged record in any crash state.
func TestLabSyncerLosesNothing(t *testing.T) {
	labPrereqs(t, Ext4)
	res, err := RunLab(context.Background(), LabOptions{FS: Ext4, Workload: SyncerWriters, Writers: 4, Records: 5, Random: 40, ImageSize: 32 << 20, Seed: 2})
	require.NoError(t, err)
	t.Logf("%d ops, %d flushes, %d acked; %v", res.Ops, res.Flushes, res.Acked, res.Replay)
	assert.Equal(t, 20, res.Acked)
	assert.Zero(t, res.Lost, "acknowledged records lost:\n%v", res.Replay.Failures())
	for _, f := range res.Replay.Failures() {
		assert.True(t, f.State.Kind == Random && f.State.Torn && f.Status == StatusMountError,
			"%s: %v (%v)", f.State.Describe(), f.Status, f.Err)
	}
}
