package linearize

import (
	"fmt"
	"math/bits"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/iowq"
)

// A file as porcupine sees it: every sector is a register of its own.
//
// Direct I/O promises nothing about a write of several sectors as a whole
// (another write may land on some of its sectors before, some after), but a
// sector is read and written as a unit and must behave as a linearizable
// register: a read returns the initial content or the data of a write that
// started before the read returned, and not one that a write which started
// after it completed has replaced before the read began. So a write of
// several sectors is one register write per sector, each with the write's
// interval, and the history is checked one sector at a time (porcupine's
// Partition), which is exact for independent registers.
//
// Values: 0 is a sector's initial content (and zeros); a write writes its
// own value, distinct from every other write's and not 0, so that a read
// names the write whose data it found.

// FileOpKind says what a file operation is.
type FileOpKind uint8

// The operations.
const (
	FileWrite FileOpKind = iota + 1
	FileRead
)

func (k FileOpKind) String() string {
	switch k {
	case FileWrite:
		return "write"
	case FileRead:
		return "read"
	}
	return fmt.Sprintf("FileOpKind(%d)", uint8(k))
}

// FileOp is one operation on the file as its client saw it: called at Call,
// returned at Return (a closed interval, as porcupine reads it: an
// operation that returned at t and one called at t are concurrent).
type FileOp struct {
	Client  int
	Kind    FileOpKind
	Sectors uint8 // write: the sectors written (bit s = sector s); read: the one sector read
	Value   int   // write: the data it wrote (distinct, not 0); read: what it returned (0: initial content)
	Call    int64
	Return  int64
	// Pending marks a write that had not returned when the history
	// stopped: it may have taken effect at any time after its call, or not
	// at all. (A pending read constrains nothing; leave it out.)
	Pending bool
	_       struct{}
}

// FileHistory is a history of writes and reads of one file.
type FileHistory struct {
	Ops     []FileOp
	Clients []string // client names for timelines (optional; default C0, C1, ...)
	_       struct{}
}

// FileInput is a porcupine operation's input: one sector's part of a write,
// or a read.
type FileInput struct {
	Kind   FileOpKind
	Op     int // index in FileHistory.Ops
	Sector int
	Value  int // write: the value written
}

// FileOutput is a porcupine operation's output: what a read returned.
type FileOutput struct {
	Value int
}

// Operations encodes the history for porcupine: one operation per sector
// written and one per read. It returns an error for a malformed history: a
// return before its call, an empty write, a read of not exactly one sector,
// a write value that is 0 or not unique.
func (h FileHistory) Operations() ([]porcupine.Operation, error) {
	var last int64
	for _, op := range h.Ops {
		last = max(last, op.Call, op.Return)
	}
	seen := map[int]int{}
	var ops []porcupine.Operation
	for i, op := range h.Ops {
		bad := func(format string, args ...any) error {
			return fmt.Errorf("file history op %d (%v by client %d, [%d, %d]): %s", i+1, op.Kind, op.Client, op.Call, op.Return, fmt.Sprintf(format, args...))
		}
		if op.Client < 0 {
			return nil, bad("negative client")
		}
		ret := op.Return
		if op.Pending {
			// It may take effect after everything else, which no read sees.
			ret = last + 1
		} else if op.Return < op.Call {
			return nil, bad("returns before it is called")
		}
		switch op.Kind {
		case FileWrite:
			if op.Sectors == 0 {
				return nil, bad("a write covers at least one sector")
			}
			if op.Value == 0 {
				return nil, bad("a write's value must not be 0 (the initial content)")
			}
			if j, dup := seen[op.Value]; dup {
				return nil, bad("op %d writes the same value %d", j+1, op.Value)
			}
			seen[op.Value] = i
			for m := op.Sectors; m != 0; m &= m - 1 {
				ops = append(ops, porcupine.Operation{
					ClientId: op.Client,
					Input:    FileInput{Kind: FileWrite, Op: i, Sector: bits.TrailingZeros8(m), Value: op.Value},
					Output:   FileOutput{},
					Call:     op.Call, Return: ret,
				})
			}
		case FileRead:
			if bits.OnesCount8(op.Sectors) != 1 {
				return nil, bad("a read is of exactly one sector")
			}
			if op.Pending {
				return nil, bad("a pending read constrains nothing: leave it out")
			}
			ops = append(ops, porcupine.Operation{
				ClientId: op.Client,
				Input:    FileInput{Kind: FileRead, Op: i, Sector: bits.TrailingZeros8(op.Sectors)},
				Output:   FileOutput{Value: op.Value},
				Call:     op.Call, Return: op.Return,
			})
		default:
			return nil, bad("unknown kind")
		}
	}
	return ops, nil
}

// FileModel is the porcupine model of a file of sectors: a register per
// sector, initially 0, partitioned per sector.
func FileModel() porcupine.Model {
	return porcupine.Model{
		Partition: filePartitionPerSector,
		Init:      func() any { return 0 },
		Step: func(state, in, out any) (bool, any) {
			v, i := state.(int), in.(FileInput)
			if i.Kind == FileWrite {
				return true, i.Value
			}
			return out.(FileOutput).Value == v, v
		},
		Equal: func(a, b any) bool { return a.(int) == b.(int) },
		DescribeOperation: func(in, out any) string {
			i := in.(FileInput)
			if i.Kind == FileWrite {
				return fmt.Sprintf("write s%d = %s", i.Sector, fileValueName(i.Value))
			}
			return fmt.Sprintf("read s%d -> %s", i.Sector, fileValueName(out.(FileOutput).Value))
		},
		DescribeState: func(s any) string { return "holds " + fileValueName(s.(int)) },
	}
}

// filePartitionPerSector splits a history into one partition per sector.
func filePartitionPerSector(ops []porcupine.Operation) [][]porcupine.Operation {
	bySector := map[int][]porcupine.Operation{}
	var sectors []int
	for _, op := range ops {
		s := op.Input.(FileInput).Sector
		if _, ok := bySector[s]; !ok {
			sectors = append(sectors, s)
		}
		bySector[s] = append(bySector[s], op)
	}
	sort.Ints(sectors)
	parts := make([][]porcupine.Operation, 0, len(sectors))
	for _, s := range sectors {
		parts = append(parts, bySector[s])
	}
	return parts
}

// fileValueName names a value: 0 is the initial content, iowq.Stale
// another file's data, anything else the write that wrote it.
func fileValueName(v int) string {
	switch v {
	case 0:
		return "0"
	case iowq.Stale:
		return "stale"
	}
	return fmt.Sprintf("W%d", v)
}

// FileNotLinearizable is the error CheckFile returns for a history that no
// per-sector register explains.
type FileNotLinearizable struct {
	Name    string                // the name given to CheckFile
	Result  porcupine.CheckResult // Illegal, or Unknown if porcupine ran out of time
	Timeout time.Duration
	History FileHistory
	// Visualization is the path of porcupine's HTML rendering of the
	// history and its longest partial linearizations ("" if it could not
	// be written; VisualizationErr says why).
	Visualization    string
	VisualizationErr error
}

func (e *FileNotLinearizable) Error() string {
	head := fmt.Sprintf("%s: the file history below is not linearizable (a register per sector)", e.Name)
	if e.Result == porcupine.Unknown {
		head = fmt.Sprintf("%s: porcupine could not decide within %v whether the file history below is linearizable", e.Name, e.Timeout)
	}
	vis := "porcupine visualisation: " + e.Visualization
	if e.Visualization == "" {
		vis = fmt.Sprintf("porcupine visualisation not written: %v", e.VisualizationErr)
	}
	return fmt.Sprintf("%s:\n%s%s", head, e.History, vis)
}

// CheckFile checks that h is linearizable as a register per sector, within
// timeout (0 = DefaultTimeout). It returns nil if porcupine finds a
// linearization, a *FileNotLinearizable if it finds none or runs out of
// time (then porcupine's HTML visualisation is written to
// VisualizationPath(name)), and another error if h is malformed.
func CheckFile(name string, h FileHistory, timeout time.Duration) error {
	ops, err := h.Operations()
	if err != nil {
		return fmt.Errorf("check %s: %w", name, err)
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	res, vis, visErr := checkOperations(name, FileModel(), ops, timeout)
	if res == porcupine.Ok {
		return nil
	}
	return &FileNotLinearizable{Name: name, Result: res, Timeout: timeout, History: h, Visualization: vis, VisualizationErr: visErr}
}

// String renders the history as a timeline, one column per client, calls
// and returns in time order; an operation whose return directly follows its
// call is one step.
func (h FileHistory) String() string {
	type event struct {
		t      int64
		op     int
		isCall bool
	}
	var evs []event
	nClients := len(h.Clients)
	for i, op := range h.Ops {
		nClients = max(nClients, op.Client+1)
		evs = append(evs, event{op.Call, i, true})
		if !op.Pending {
			evs = append(evs, event{op.Return, i, false})
		}
	}
	sort.SliceStable(evs, func(a, b int) bool {
		if evs[a].t != evs[b].t {
			return evs[a].t < evs[b].t
		}
		return evs[a].isCall && !evs[b].isCall
	})
	actors := make([]string, nClients)
	for c := range actors {
		actors[c] = fmt.Sprintf("C%d", c)
		if c < len(h.Clients) && h.Clients[c] != "" {
			actors[c] = h.Clients[c]
		}
	}
	var path []explore.Step
	var pending []string
	for i := 0; i < len(evs); i++ {
		e := evs[i]
		op := h.Ops[e.op]
		what := fmt.Sprintf("W%d: write %s", op.Value, fileSectorList(op.Sectors))
		if op.Kind == FileRead {
			what = "read " + fileSectorList(op.Sectors)
		}
		got := ""
		if op.Kind == FileRead {
			got = " = " + fileValueName(op.Value)
		}
		var text string
		switch {
		case e.isCall && i+1 < len(evs) && evs[i+1].op == e.op:
			text = what + got
			i++
		case e.isCall:
			text = what + " ..."
			if op.Pending {
				pending = append(pending, fmt.Sprintf("W%d", op.Value))
			}
		default:
			text = "... " + what + got + " returns"
		}
		path = append(path, explore.Step{Actor: op.Client, Text: fmt.Sprintf("[t=%d] %s", e.t, text)})
	}
	s := explore.Timeline(actors, path)
	if len(pending) > 0 {
		s += "never returned (may or may not have taken effect): " + strings.Join(pending, " ") + "\n"
	}
	return s
}

// fileSectorList renders a sector mask as "s0,s1".
func fileSectorList(m uint8) string {
	var parts []string
	for ; m != 0; m &= m - 1 {
		parts = append(parts, fmt.Sprintf("s%d", bits.TrailingZeros8(m)))
	}
	return strings.Join(parts, ",")
}
