package linearize

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/iowq"
)

func fileW(client int, sectors uint8, value int, call, ret int64) FileOp {
	return FileOp{Client: client, Kind: FileWrite, Sectors: sectors, Value: value, Call: call, Return: ret}
}

func fileR(client int, sector, value int, call, ret int64) FileOp {
	return FileOp{Client: client, Kind: FileRead, Sectors: 1 << sector, Value: value, Call: call, Return: ret}
}

// TestFileModel: the register-per-sector semantics on small hand-made
// histories, both verdicts.
func TestFileModel(t *testing.T) {
	pending := fileW(0, 0b01, 1, 1, 0)
	pending.Pending = true
	for _, tc := range []struct {
		name string
		ops  []FileOp
		ok   bool
	}{
		{"read after write sees it", []FileOp{fileW(0, 1, 1, 1, 2), fileR(1, 0, 1, 3, 4)}, true},
		{"read after write sees the initial content", []FileOp{fileW(0, 1, 1, 1, 2), fileR(1, 0, 0, 3, 4)}, false},
		{"concurrent read sees the old value", []FileOp{fileW(0, 1, 1, 1, 4), fileR(1, 0, 0, 2, 3)}, true},
		{"concurrent read sees the new value", []FileOp{fileW(0, 1, 1, 1, 4), fileR(1, 0, 1, 2, 3)}, true},
		{"new then old is not a register", []FileOp{fileW(0, 1, 1, 1, 10), fileR(1, 0, 1, 2, 3), fileR(1, 0, 0, 4, 5)}, false},
		{"a later write wins", []FileOp{fileW(0, 1, 1, 1, 2), fileW(1, 1, 2, 3, 4), fileR(2, 0, 2, 5, 6)}, true},
		{"an overwritten write cannot come back", []FileOp{fileW(0, 1, 1, 1, 2), fileW(1, 1, 2, 3, 4), fileR(2, 0, 1, 5, 6)}, false},
		{"concurrent writes land in either order", []FileOp{fileW(0, 1, 1, 1, 4), fileW(1, 1, 2, 2, 3), fileR(2, 0, 1, 5, 6)}, true},
		{"a two-sector write may tear", []FileOp{fileW(0, 0b11, 1, 1, 4), fileW(1, 0b11, 2, 2, 3), fileR(2, 0, 1, 5, 6), fileR(2, 1, 2, 7, 8)}, true},
		{"sectors are independent", []FileOp{fileW(0, 0b01, 1, 1, 2), fileR(1, 1, 0, 3, 4)}, true},
		{"a value nobody wrote", []FileOp{fileR(0, 0, iowq.Stale, 1, 2)}, false},
		{"a pending write may have happened", []FileOp{pending, fileR(1, 0, 1, 5, 6)}, true},
		{"or not", []FileOp{pending, fileR(1, 0, 0, 5, 6)}, true},
		{"closed intervals: a return and a call at the same time overlap", []FileOp{fileW(0, 1, 1, 1, 3), fileR(1, 0, 0, 3, 4)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckFile("file-model-"+tc.name, FileHistory{Ops: tc.ops}, 0)
			if tc.ok {
				assert.NoError(t, err)
				return
			}
			var nl *FileNotLinearizable
			require.ErrorAs(t, err, &nl)
			assert.Equal(t, porcupine.Illegal, nl.Result)
		})
	}
}

// TestFileHistoryMalformed: histories that mean nothing are errors, not
// verdicts.
func TestFileHistoryMalformed(t *testing.T) {
	pendingRead := fileR(0, 0, 0, 1, 2)
	pendingRead.Pending = true
	for name, ops := range map[string][]FileOp{
		"return before call":      {fileW(0, 1, 1, 5, 4)},
		"empty write":             {fileW(0, 0, 1, 1, 2)},
		"write of value 0":        {fileW(0, 1, 0, 1, 2)},
		"two writes of one value": {fileW(0, 1, 1, 1, 2), fileW(1, 2, 1, 1, 2)},
		"read of two sectors":     {{Client: 0, Kind: FileRead, Sectors: 0b11, Call: 1, Return: 2}},
		"pending read":            {pendingRead},
		"negative client":         {fileW(-1, 1, 1, 1, 2)},
	} {
		err := CheckFile("malformed", FileHistory{Ops: ops}, 0)
		var nl *FileNotLinearizable
		assert.Error(t, err, name)
		assert.False(t, errors.As(err, &nl), "%s: a malformed history is not a verdict", name)
	}
}

// TestCheckFileVisualization: a rejected history comes with its timeline
// and porcupine's HTML visualisation.
func TestCheckFileVisualization(t *testing.T) {
	name := "file-visualization-test"
	path := VisualizationPath(name)
	_ = os.Remove(path)
	h := FileHistory{Ops: []FileOp{fileW(0, 1, 1, 1, 2), fileR(1, 0, 0, 3, 4)}, Clients: []string{"A", "reader"}}
	err := CheckFile(name, h, 0)
	var nl *FileNotLinearizable
	require.ErrorAs(t, err, &nl)
	assert.Equal(t, path, nl.Visualization)
	html, rerr := os.ReadFile(path)
	require.NoError(t, rerr, "the visualisation must be written")
	assert.Contains(t, string(html), `read s0 -\u003e 0`, "the operations are described in it")
	assert.Contains(t, err.Error(), "[t=1] W1: write s0")
	assert.Contains(t, err.Error(), "[t=3] read s0 = 0")
	assert.Contains(t, err.Error(), "porcupine visualisation: "+path)
}

// follow returns a chooser that takes path's steps in order, then the
// first enabled step.
func followIOWQPath(path []explore.Step) func([]explore.Label) int {
	i := 0
	return func(ls []explore.Label) int {
		if i < len(path) {
			for j, l := range ls {
				if l == path[i].Label {
					i++
					return j
				}
			}
			panic("the path does not replay")
		}
		return 0
	}
}

// TestIOWQCounterexampleNotLinearizable: the explorer's shortest
// counterexample for each mutant row, run on to the end, is a history
// porcupine rejects: the lost write is seen, independently of the model's
// own check, in the final content.
func TestIOWQCounterexampleNotLinearizable(t *testing.T) {
	n := 0
	for _, c := range iowq.Checks() {
		if !c.ExpectUnsafe() {
			continue
		}
		n++
		t.Run(c.Row().Name(), func(t *testing.T) {
			v, err := iowq.Check(c, explore.Options{})
			require.NoError(t, err)
			require.NotNil(t, v.Violation)
			sys, err := iowq.NewSystem(c)
			require.NoError(t, err)
			run, err := RecordIOWQ(sys, followIOWQPath(v.Violation.Path), 0)
			require.NoError(t, err)
			require.Error(t, run.Violation)
			err = CheckFile("iowq-counterexample", run.History, 0)
			var nl *FileNotLinearizable
			require.ErrorAs(t, err, &nl, "history:\n%s", run.History)
			assert.Equal(t, porcupine.Illegal, nl.Result)
		})
	}
	assert.Equal(t, 8, n, "every mutant row that must be caught")
}

// TestIOWQRecordedHistoriesLinearizable: seeded random schedules of every
// row that must be safe give histories porcupine accepts; the runs must
// have read something other than the initial content, or the check says
// little.
func TestIOWQRecordedHistoriesLinearizable(t *testing.T) {
	for _, c := range iowq.Checks() {
		if c.ExpectUnsafe() {
			continue
		}
		t.Run(c.Row().Name(), func(t *testing.T) {
			sys, err := iowq.NewSystem(c)
			require.NoError(t, err)
			rng := rand.New(rand.NewPCG(3, 4))
			sawData := false
			for i := 0; i < 200; i++ {
				run, err := RecordIOWQ(sys, func(ls []explore.Label) int { return rng.IntN(len(ls)) }, 0)
				require.NoError(t, err)
				require.NoError(t, run.Violation)
				require.NoError(t, CheckFile("iowq-recorded", run.History, 0))
				for _, op := range run.History.Ops {
					sawData = sawData || (op.Kind == FileRead && op.Value != 0)
				}
			}
			assert.True(t, sawData)
		})
	}
}

// TestVisualizationDir: a rejected history's visualisation goes to
// VisualizationDir, so that tests (and users) choose where the HTML goes
// and a test run leaves nothing in $TMPDIR.
func TestVisualizationDir(t *testing.T) {
	saved := VisualizationDir
	t.Cleanup(func() { VisualizationDir = saved })
	VisualizationDir = t.TempDir()
	h := FileHistory{Ops: []FileOp{fileW(0, 1, 1, 1, 2), fileR(1, 0, 0, 3, 4)}, Clients: []string{"A", "reader"}}
	var nl *FileNotLinearizable
	require.ErrorAs(t, CheckFile("dir-test", h, 0), &nl)
	assert.Equal(t, filepath.Join(VisualizationDir, "flushproof-linearize-dir-test.html"), nl.Visualization)
	_, err := os.Stat(nl.Visualization)
	assert.NoError(t, err, "the visualisation is written there")
}
