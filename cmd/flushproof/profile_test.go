package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCheckProfiles: -cpuprofile and -memprofile write profiles pprof
// reads (gzip-compressed protocol buffers), and a file that exists is
// refused, not overwritten.
func TestCheckProfiles(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "mem.prof")
	var out, errb bytes.Buffer
	code := run([]string{"check", "-q", "-cpuprofile", cpu, "-memprofile", mem, "-run", `^device cache\+fua`}, &out, &errb)
	require.Equal(t, exitOK, code, "stderr: %s", errb.String())
	for _, p := range []string{cpu, mem} {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		require.Greater(t, len(b), 2, p)
		assert.Equal(t, []byte{0x1f, 0x8b}, b[:2], "%s: a gzip-compressed profile", p)
	}

	keep := filepath.Join(dir, "keep")
	require.NoError(t, os.WriteFile(keep, []byte("mine"), 0o644))
	for _, flagName := range []string{"-cpuprofile", "-memprofile"} {
		out.Reset()
		errb.Reset()
		code = run([]string{"check", "-q", flagName, keep, "-run", `^device cache\+fua`}, &out, &errb)
		assert.Equal(t, exitUsage, code)
		assert.Contains(t, errb.String(), flagName[1:]+": ")
		assert.Contains(t, errb.String(), "file exists")
		b, err := os.ReadFile(keep)
		require.NoError(t, err)
		assert.Equal(t, "mine", string(b), "not overwritten")
	}
}
