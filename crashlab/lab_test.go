package crashlab

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func labPrereqs(t *testing.T, fs FS) {
	t.Helper()
	if err := Preflight(fs); err != nil {
		t.Skip(err)
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
	assertOnlyAllowedFailures(t, res)
	assert.Equal(t, res.States, len(res.Replay.Results), "every state replayed")
	assert.False(t, res.Interrupted)
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
	assertOnlyAllowedFailures(t, res)
}

// assertOnlyAllowedFailures: every flush-point and end-of-log state mounts,
// checks and fscks clean. A random state may fail to mount or fsck only if
// it tears a write inside a file-system block (ext4 does not survive that
// in its superblock; docs/crashlab.md); nothing else may fail.
func assertOnlyAllowedFailures(t *testing.T, res LabResult) {
	t.Helper()
	for _, f := range res.Replay.Failures() {
		assert.Equal(t, VerdictAllowed, f.Verdict(), "%s: %s", f.State.Describe(), f.Reason())
		assert.Contains(t, []ReplayStatus{StatusMountError, StatusFsckError}, f.Status)
		assert.Equal(t, Random, f.State.Kind)
		assert.NotEmpty(t, f.TornWrites)
	}
}

func TestLabOptionsValidate(t *testing.T) {
	ok := LabOptions{FS: Ext4}
	require.NoError(t, ok.Validate(), "zero fields take their defaults")
	require.NoError(t, LabOptions{FS: XFS, Random: 0, ImageSize: 300 << 20}.Validate())
	for _, tc := range []struct {
		opt   LabOptions
		field string
		want  string
	}{
		{LabOptions{}, "FS", `FS is "", want ext4 or xfs`},
		{LabOptions{FS: "btrfs"}, "FS", `FS is "btrfs", want ext4 or xfs`},
		{LabOptions{FS: Ext4, Workload: "nope"}, "Workload", "want fsync, early-ack, syncer or syncer-early-sample"},
		{LabOptions{FS: Ext4, Writers: -1}, "Writers", "Writers is -1, want 1 to 256"},
		{LabOptions{FS: Ext4, Writers: MaxWriters + 1}, "Writers", "want 1 to 256"},
		{LabOptions{FS: Ext4, Records: -1}, "Records", "want 1 to 100000"},
		{LabOptions{FS: Ext4, Random: -1}, "Random", "want 0 to 100000"},
		{LabOptions{FS: Ext4, Parallel: MaxParallel + 1}, "Parallel", "want 1 to 32"},
		{LabOptions{FS: Ext4, FlushDelay: -time.Millisecond}, "FlushDelay", "FlushDelay is -1ms, want 0 to 1s"},
		{LabOptions{FS: Ext4, ImageSize: 32<<20 + 512}, "ImageSize", "a multiple of 4096 from 16777216 (16 MiB, the least ext4 takes)"},
		{LabOptions{FS: Ext4, ImageSize: -4096}, "ImageSize", "a multiple of 4096"},
		{LabOptions{FS: XFS, ImageSize: 128 << 20}, "ImageSize", "from 314572800 (300 MiB, the least xfs takes)"},
		{LabOptions{FS: Ext4, ImageSize: 16 << 20, Writers: 100, Records: 100}, "ImageSize", "at least twice the records' 40960000 bytes"},
	} {
		err := tc.opt.Validate()
		var oe *OptionError
		if assert.ErrorAs(t, err, &oe, "%+v", tc.opt) {
			assert.Equal(t, tc.field, oe.Field)
			assert.Contains(t, err.Error(), tc.want)
			assert.True(t, strings.HasPrefix(err.Error(), "lab options: "+tc.field+" is "), err.Error())
		}
	}
}
