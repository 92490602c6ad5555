package crashlab

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPreflightNamesEveryMissingTool: with nothing in $PATH, the pre-flight
// names every tool the run needs, the package of each, once each, in one
// error; and RunLab stops there, before creating anything.
func TestPreflightNamesEveryMissingTool(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for _, tc := range []struct {
		fs    FS
		tools []string
		pkgs  string
	}{
		{Ext4, []string{"mount (Debian package mount)", "umount (Debian package mount)", "mkfs.ext4 (Debian package e2fsprogs)", "e2fsck (Debian package e2fsprogs)"}, "apt-get install mount e2fsprogs"},
		{XFS, []string{"mkfs.xfs (Debian package xfsprogs)", "xfs_repair (Debian package xfsprogs)"}, "apt-get install mount xfsprogs"},
	} {
		err := Preflight(tc.fs)
		var pe *PreflightError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, Tools(tc.fs), pe.Missing, "every tool missing")
		msg := err.Error()
		for _, want := range tc.tools {
			assert.Contains(t, msg, want)
		}
		assert.Contains(t, msg, tc.pkgs)
		assert.Equal(t, 1, strings.Count(msg, "cannot run"), "one message: %q", msg)

		dir := t.TempDir()
		_, err = RunLab(context.Background(), LabOptions{FS: tc.fs, Dir: dir, Writers: 1, Records: 1})
		require.ErrorAs(t, err, &pe)
		entries, rerr := os.ReadDir(dir)
		require.NoError(t, rerr)
		assert.Empty(t, entries, "nothing created before the pre-flight passed")
	}
	// Replay alone needs no mkfs.
	var pe *PreflightError
	require.True(t, errors.As(preflight(Ext4, false), &pe))
	for _, tool := range pe.Missing {
		assert.True(t, tool.Replay, "%s is not needed to replay", tool.Name)
	}
}
