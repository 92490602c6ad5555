package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCheckPrintsTheVerdictTable(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"check", "-q", "-run", "cache\\+fua|no-postflush"}, &out, &errb)
	assert.Equal(t, 0, code, "stderr: %s", errb.String())
	for _, want := range []string{
		"MODEL", "device", "cache+fua", "SAFE", "2 writers, 4 writes, 1 flush, EIO, crash",
		"bug-flush-covers-in-flight", "bug-emulated-fua-no-postflush", "UNSAFE", "yes (negative control)",
		"shortest counterexample", "step | A",
	} {
		assert.Contains(t, out.String(), want)
	}
	assert.NotContains(t, out.String(), "no-cache", "-run filters rows")
	assert.Empty(t, errb.String(), "-q: no progress")
}

func TestCheckBudgetIsNotAProof(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"check", "-q", "-max-states", "100", "-run", "^device no-cache"}, &out, &errb)
	assert.Equal(t, 1, code, "a search cut by the budget must not pass as SAFE")
	assert.Contains(t, out.String(), "UNKNOWN (budget)")
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{nil, {"frobnicate"}, {"check", "extra"}, {"check", "-max-states", "-1"}, {"check", "-run", "("}, {"check", "-run", "nothing-matches"}} {
		var out, errb bytes.Buffer
		assert.Equal(t, 2, run(args, &out, &errb), "%q", args)
		assert.NotEmpty(t, errb.String(), "%q must say what is wrong", args)
	}
}

func TestSkipShare(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"skipshare", "-runs", "2", "-fsyncs", "5"}, &out, &errb)
	assert.Equal(t, 0, code, "stderr: %s", errb.String())
	for _, want := range []string{"VARIANT", "baseline", "patched", "improved", "mutant-read-before-writeback", "NOT DURABLE AT RETURN"} {
		assert.Contains(t, out.String(), want)
	}
	for _, args := range [][]string{{"skipshare", "-runs", "0"}, {"skipshare", "-jitter", "2"}, {"skipshare", "-tasks", "0"}, {"skipshare", "-fsyncs", "-1"}, {"skipshare", "extra"}} {
		out.Reset()
		errb.Reset()
		assert.Equal(t, 2, run(args, &out, &errb), "%q", args)
		assert.NotEmpty(t, errb.String(), "%q", args)
	}
}

func TestCost(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"cost", "-runs", "2"}, &out, &errb)
	assert.Equal(t, 0, code, "stderr: %s", errb.String())
	for _, want := range []string{"O_DSYNC", "cache+emulated-fua", "inode_dio_begin", "io-wq", "HASH WAITS/W"} {
		assert.Contains(t, out.String(), want)
	}
	out.Reset()
	assert.Equal(t, 0, run([]string{"cost", "-protocol", "odsync", "-random"}, &out, &errb))
	assert.Contains(t, out.String(), "random")
	assert.NotContains(t, out.String(), "inode_dio_begin")
	for _, args := range [][]string{{"cost", "-protocol", "nope"}, {"cost", "-flush", "0s"}, {"cost", "-runs", "0"}, {"cost", "extra"}} {
		out.Reset()
		errb.Reset()
		assert.Equal(t, 2, run(args, &out, &errb), "%q", args)
		assert.NotEmpty(t, errb.String(), "%q", args)
	}
}

func TestCrashlabArgs(t *testing.T) {
	var out, errb bytes.Buffer
	for _, args := range [][]string{{"crashlab", "extra"}, {"crashlab", "-fs", "btrfs", "-q"}, {"crashlab", "-workload", "nope", "-q"}, {"crashlab", "-writers", "0", "-q"}} {
		out.Reset()
		errb.Reset()
		assert.Equal(t, 2, run(args, &out, &errb), "%q", args)
		assert.NotEmpty(t, errb.String(), "%q", args)
	}
}
