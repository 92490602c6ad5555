package hwbench

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInterruptPrintsResults runs `go test ./hwbench -device=FILE` (the
// test binary, as go test runs it) on a file it creates, and interrupts
// it with SIGINT or SIGTERM while S1 runs, after S4 finished: it prints
// S4's results, fails, and cleans up (the file it created is removed).
func TestInterruptPrintsResults(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the benchmark in a child process")
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			target := filepath.Join(dir, "bench.bin")
			cmd := exec.Command(os.Args[0], "-test.run=^TestScenarios$", "-test.count=1",
				"-device="+target, "-scenarios=S4,S1", "-duration=1s", "-span=1MiB", "-fio=false")
			var stdout bytes.Buffer
			cmd.Stdout = &stdout
			stderr, err := cmd.StderrPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			t.Cleanup(func() { _ = cmd.Process.Kill() })

			// Progress lines go to stderr; "S1 on" says S4 is done.
			started := make(chan struct{})
			var log bytes.Buffer
			go func() {
				sc := bufio.NewScanner(stderr)
				once := false
				for sc.Scan() {
					log.WriteString(sc.Text() + "\n")
					if !once && strings.Contains(sc.Text(), "S1 on ") {
						once = true
						close(started)
					}
				}
			}()
			select {
			case <-started:
			case <-time.After(2 * time.Minute):
				t.Fatalf("S1 did not start within 2 minutes; stderr:\n%s", log.String())
			}
			time.Sleep(200 * time.Millisecond) // inside S1's first slice
			require.NoError(t, cmd.Process.Signal(sig))
			err = cmd.Wait()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "the run fails when interrupted")
			out := stdout.String()
			t.Logf("stdout:\n%s", out)
			assert.Contains(t, out, "hwbench: interrupted by "+sig.String()+": the results of the scenarios finished so far (S4)")
			assert.Contains(t, out, "Device: "+target+" (file")
			assert.Regexp(t, `(?m)^S4 `, out, "S4's table")
			assert.NotRegexp(t, `(?m)^S1 `, out, "no table of the interrupted S1")
			assert.Contains(t, out, "interrupted by "+sig.String()+"; the results finished so far are on standard output")
			_, err = os.Stat(target)
			assert.ErrorIs(t, err, os.ErrNotExist, "the file the run created is removed")
		})
	}
}
