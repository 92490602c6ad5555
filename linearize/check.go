package linearize

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// DefaultTimeout bounds one porcupine search; a search cut short is a
// failure (Result porcupine.Unknown), never a pass.
const DefaultTimeout = 10 * time.Second

// NotLinearizable is the error Check returns for a history that the model
// does not explain.
type NotLinearizable struct {
	Model   string                // the name given to Check
	Result  porcupine.CheckResult // Illegal, or Unknown if porcupine ran out of time
	Timeout time.Duration
	History History
	// Visualization is the path of porcupine's HTML rendering of the
	// history and of its longest partial linearizations ("" if it could not
	// be written; VisualizationErr says why).
	Visualization    string
	VisualizationErr error
}

// Error names the model, renders the history as a timeline and gives the
// visualisation's path.
func (e *NotLinearizable) Error() string {
	head := fmt.Sprintf("the history below is not linearizable with respect to %s", e.Model)
	if e.Result == porcupine.Unknown {
		head = fmt.Sprintf("porcupine could not decide within %v whether the history below is linearizable with respect to %s", e.Timeout, e.Model)
	}
	vis := "porcupine visualisation: " + e.Visualization
	if e.Visualization == "" {
		vis = fmt.Sprintf("porcupine visualisation not written: %v", e.VisualizationErr)
	}
	return fmt.Sprintf("%s:\n%s%s", head, e.History, vis)
}

// VisualizationDir is the directory Check and CheckFile write porcupine's
// HTML visualisations to; "" means os.TempDir(). It is read at each
// failure, so set it before checking (tests point it at a directory of
// their own, which they remove, so that a test run leaves no files behind).
var VisualizationDir string

// VisualizationPath is where Check writes the visualisation for a model
// name: one file per name in VisualizationDir, overwritten by the next
// failure with that name. Under rapid the last failure is the shrunk
// counterexample that rapid prints, so the file shows that one.
func VisualizationPath(name string) string {
	dir := VisualizationDir
	if dir == "" {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "flushproof-linearize-"+unsafeChars.ReplaceAllString(name, "-")+".html")
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._+-]+`)

// Check checks that h is linearizable with respect to m, within timeout (0 =
// DefaultTimeout). name names the model in messages and the visualisation
// file. It returns nil if porcupine finds a linearization, a
// *NotLinearizable if it finds none or runs out of time, and another error
// if h is malformed.
func Check(name string, m porcupine.NondeterministicModel, h History, timeout time.Duration) error {
	ops, err := h.Operations()
	if err != nil {
		return fmt.Errorf("check against %s: %w", name, err)
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	res, vis, visErr := checkOperations(name, powerSet(m), ops, timeout)
	if res == porcupine.Ok {
		return nil
	}
	return &NotLinearizable{Model: name, Result: res, Timeout: timeout, History: h, Visualization: vis, VisualizationErr: visErr}
}

// checkOperations runs porcupine on ops within timeout. When the history is
// not linearizable it runs again, verbose (only failures pay for the
// partial linearizations), and writes the HTML visualisation to
// VisualizationPath(name); it returns the path or why there is none.
func checkOperations(name string, m porcupine.Model, ops []porcupine.Operation, timeout time.Duration) (porcupine.CheckResult, string, error) {
	res := porcupine.CheckOperationsTimeout(m, ops, timeout)
	switch res {
	case porcupine.Ok:
		return res, "", nil
	case porcupine.Illegal:
		_, info := porcupine.CheckOperationsVerbose(m, ops, timeout)
		path := VisualizationPath(name)
		if err := porcupine.VisualizePath(m, info, path); err != nil {
			return res, "", fmt.Errorf("write %s: %w", path, err)
		}
		return res, path, nil
	}
	return res, "", fmt.Errorf("porcupine timed out, so it has no linearization to show")
}

// powerSet turns a nondeterministic model into a deterministic one whose
// states are sets of the model's states, like porcupine's ToModel, but
// merges and compares the sets through the model's Hash: ToModel compares
// every pair of states, which dominates the search once a few failed or
// unfinished writes have multiplied the device's possible states. A model
// without Hash falls back to ToModel.
func powerSet(nm porcupine.NondeterministicModel) porcupine.Model {
	if nm.Hash == nil || nm.Equal == nil || nm.Step == nil {
		return nm.ToModel()
	}
	add := func(set *stateSet, index map[uint64][]int, s any) {
		h := nm.Hash(s)
		for _, i := range index[h] {
			if nm.Equal(set.states[i], s) {
				return
			}
		}
		index[h] = append(index[h], len(set.states))
		set.states = append(set.states, s)
		set.hashes = append(set.hashes, h)
		set.hash ^= h
	}
	describe := nm.DescribeState
	if describe == nil {
		describe = func(s any) string { return fmt.Sprintf("%v", s) }
	}
	return porcupine.Model{
		Partition: nm.Partition,
		Init: func() any {
			set, index := &stateSet{}, map[uint64][]int{}
			for _, s := range nm.Init() {
				add(set, index, s)
			}
			return set
		},
		Step: func(state, in, out any) (bool, any) {
			set, index := &stateSet{}, map[uint64][]int{}
			for _, s := range state.(*stateSet).states {
				for _, n := range nm.Step(s, in, out) {
					add(set, index, n)
				}
			}
			return len(set.states) > 0, set
		},
		Equal: func(a, b any) bool {
			x, y := a.(*stateSet), b.(*stateSet)
			if x.hash != y.hash || len(x.states) != len(y.states) {
				return false
			}
			index := make(map[uint64][]int, len(y.states))
			for i, h := range y.hashes {
				index[h] = append(index[h], i)
			}
		next:
			for i, s := range x.states {
				for _, j := range index[x.hashes[i]] {
					if nm.Equal(s, y.states[j]) {
						continue next
					}
				}
				return false
			}
			return true
		},
		Hash:              func(s any) uint64 { return s.(*stateSet).hash },
		DescribeOperation: nm.DescribeOperation,
		DescribeState: func(s any) string {
			var parts []string
			for _, st := range s.(*stateSet).states {
				parts = append(parts, describe(st))
			}
			return "{" + strings.Join(parts, " | ") + "}"
		},
	}
}

// stateSet is a state of powerSet: a set of states of the underlying model,
// each with its hash, and the XOR of the hashes (order-independent).
type stateSet struct {
	states []any
	hashes []uint64
	hash   uint64
}
