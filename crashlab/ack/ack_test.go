package ack

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAck runs this test binary as a child with the descriptor crashlab
// would pass (fd 3) and reads back what the helper wrote; without the
// variable the helper writes nothing and fails nothing.
func TestAck(t *testing.T) {
	if os.Getenv("ACK_TEST_CHILD") == "1" {
		var wg sync.WaitGroup
		for i := 0; i < 20; i++ {
			wg.Go(func() {
				if err := Value(fmt.Sprintf("k%d", i), "v w"); err != nil {
					panic(err)
				}
			})
		}
		wg.Wait()
		if err := Key("last"); err != nil {
			panic(err)
		}
		if err := Key("bad key"); err == nil {
			panic("a key with a space was taken")
		}
		return
	}
	require.NoError(t, Key("outside"), "outside crashlab: nothing to do")
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	rr, rw, err := os.Pipe()
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^TestAck$")
	cmd.Env = append(os.Environ(), "ACK_TEST_CHILD=1", EnvFD+"=3", EnvReplyFD+"=4")
	cmd.ExtraFiles = []*os.File{pw, rr}
	require.NoError(t, cmd.Start())
	pw.Close()
	rr.Close()
	var lines []string
	br := bufio.NewReader(pr)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			require.ErrorIs(t, err, io.EOF)
			require.Empty(t, line)
			break
		}
		lines = append(lines, strings.TrimSuffix(line, "\n"))
		// The helper waits for this answer before its next line: none
		// may come before it.
		require.NoError(t, pr.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
		_, err = br.Peek(1)
		require.ErrorIs(t, err, os.ErrDeadlineExceeded, "a line came before the answer to %q", line)
		require.NoError(t, pr.SetReadDeadline(time.Time{}))
		_, err = rw.WriteString("ok\n")
		require.NoError(t, err)
	}
	rw.Close()
	require.NoError(t, cmd.Wait())
	require.Len(t, lines, 21)
	seen := map[string]bool{}
	for _, l := range lines[:20] {
		seen[l] = true
	}
	for i := 0; i < 20; i++ {
		assert.True(t, seen[fmt.Sprintf("ack k%d v w", i)], "line of k%d whole", i)
	}
	assert.Equal(t, "ack last", lines[20])
}
