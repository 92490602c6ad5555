package crashlab

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// savedRecording writes ops as a log and saves r with it into dir.
func savedRecording(t *testing.T, dir string, r *Recording, ops []Op) string {
	t.Helper()
	logPath := filepath.Join(dir, "ops.log")
	w, err := NewLogWriter(logPath, 1<<20)
	require.NoError(t, err)
	for _, op := range ops {
		require.NoError(t, w.Append(op))
	}
	require.NoError(t, w.Close())
	path := filepath.Join(dir, "run.rec")
	require.NoError(t, r.save(path, logPath))
	return path
}

func TestRecordingRoundTrip(t *testing.T) {
	dir := t.TempDir()
	ops := synthLog(3, 16, 30)
	r := &Recording{FS: Ext4, ImageSize: 16 * SectorSize, Ready: 4, Workload: CommandWorkload, Command: []string{"/bin/true", "a b"},
		Acks: []Ack{{Key: "k1", Value: "v 1", HasValue: true, Seq: 7, Line: 1}, {Key: "k2", Seq: 20, Line: 2}}}
	path := savedRecording(t, dir, r, ops)
	require.Len(t, r.ID, 16)
	got, err := LoadRecording(path)
	require.NoError(t, err)
	assert.Equal(t, r.ID, got.ID, "the ID is the file's")
	got.Ops, r.Ops = nil, nil
	assert.Equal(t, r, got)
	got, _ = LoadRecording(path)
	assert.Equal(t, len(ops), len(got.Ops))
	for i := range ops {
		assert.Equal(t, ops[i].Seq, got.Ops[i].Seq)
		assert.Equal(t, ops[i].Data, got.Ops[i].Data)
	}

	// Never overwritten; a file that is not one is refused.
	assert.ErrorContains(t, r.save(path, filepath.Join(dir, "ops.log")), "exists, and crashlab does not overwrite it")
	_, err = LoadRecording(filepath.Join(dir, "ops.log"))
	assert.ErrorContains(t, err, "not a crashlab recording")
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	bad := filepath.Join(dir, "bad.rec")
	require.NoError(t, os.WriteFile(bad, bytes.Replace(raw, []byte(`"fs":"ext4"`), []byte(`"fs":"ext9"`), 1), 0o644))
	_, err = LoadRecording(bad)
	assert.ErrorContains(t, err, `file system "ext9"`)
	require.NoError(t, os.WriteFile(bad, bytes.Replace(raw, []byte(`"ready":4`), []byte(`"ready":4,"extra":1`), 1), 0o644))
	_, err = LoadRecording(bad)
	assert.ErrorContains(t, err, "unknown field")
}

// TestBuildState: the state rebuilt from a recording is the one replay
// builds, with the acknowledgements at its cut and its description.
func TestBuildState(t *testing.T) {
	dir := t.TempDir()
	ops := synthLog(4, 16, 40)
	r := &Recording{FS: Ext4, ImageSize: 16 * SectorSize, Workload: CommandWorkload, Command: []string{"/bin/true"},
		Acks: []Ack{{Key: "early", Seq: 3, Line: 1}, {Key: "late", Value: "x", HasValue: true, Seq: 35, Line: 2}}}
	path := savedRecording(t, dir, r, ops)
	rec, err := LoadRecording(path)
	require.NoError(t, err)
	opt := LabOptions{Random: 10, Seed: 9, Epoch: true, K: 1}
	states, _ := LabStates(rec.Ops, opt, 0)
	var epoch CrashState
	for _, st := range states {
		if st.Kind == Epoch && len(st.Changes) == 1 && st.Cut > 3 && st.Cut < 35 {
			epoch = st
			break
		}
	}
	require.Equal(t, Epoch, epoch.Kind)
	keep := filepath.Join(dir, "keep")
	st, err := BuildState(rec, opt, epoch.Index, keep)
	require.NoError(t, err)
	assert.Equal(t, epoch.Describe(), st.Describe())
	img, err := os.ReadFile(filepath.Join(keep, "image"))
	require.NoError(t, err)
	assert.Equal(t, readImage(t, epoch, ops, 16*SectorSize), img)
	acks, err := os.ReadFile(filepath.Join(keep, "acks"))
	require.NoError(t, err)
	assert.Equal(t, "early\n", string(acks), "held to what was acknowledged at or before op %d", epoch.Cut)
	desc, err := os.ReadFile(filepath.Join(keep, "state"))
	require.NoError(t, err)
	assert.Contains(t, string(desc), epoch.Describe())

	_, err = BuildState(rec, opt, epoch.Index, keep)
	assert.ErrorContains(t, err, "exists, and crashlab does not write into it")
	_, err = BuildState(rec, opt, len(states), filepath.Join(dir, "k2"))
	assert.ErrorContains(t, err, "the recording has states 0 to")
}

// TestLabSaveLoadShard: a recording saved by one run and replayed by
// another gives the same results, and so do its three shards together,
// each state in exactly one.
func TestLabSaveLoadShard(t *testing.T) {
	labPrereqs(t, Ext4)
	dir := t.TempDir()
	path := filepath.Join(dir, "run.rec")
	base := LabOptions{FS: Ext4, Command: []string{"/bin/sh", "-c", earlyScript}, Random: 10, Epoch: true, K: 1, ImageSize: 32 << 20, Seed: 1}
	opt := base
	opt.Save = path
	first, err := RunLab(context.Background(), opt)
	require.NoError(t, err)
	require.NotEmpty(t, first.Recording)
	rec, err := LoadRecording(path)
	require.NoError(t, err)
	assert.Equal(t, first.Recording, rec.ID)

	summary := func(res LabResult) map[int]ReplayStatus {
		out := map[int]ReplayStatus{}
		for _, r := range res.Replay.Results {
			out[r.State.Index] = r.Status
		}
		return out
	}
	load := LabOptions{Load: rec, Random: base.Random, Epoch: true, K: 1, Seed: 1}
	again, err := RunLab(context.Background(), load)
	require.NoError(t, err)
	assert.Equal(t, first.Recording, again.Recording)
	assert.Equal(t, summary(first), summary(again), "the same states, the same results")
	assert.Equal(t, first.Lost, again.Lost)
	assert.Positive(t, again.Lost, "the negative control")

	union := map[int]ReplayStatus{}
	for i := 1; i <= 3; i++ {
		opt := load
		opt.Shard, opt.Shards = i, 3
		part, err := RunLab(context.Background(), opt)
		require.NoError(t, err)
		assert.Equal(t, first.Generated, part.Generated)
		for idx, st := range summary(part) {
			_, dup := union[idx]
			require.False(t, dup, "state %d in two shards", idx)
			union[idx] = st
		}
	}
	assert.Equal(t, summary(first), union, "the shards together are the whole run")
	keys := make([]int, 0, len(union))
	for k := range union {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	t.Logf("%d states in 3 shards", len(keys))
}
