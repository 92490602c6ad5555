package flushseq

import "fmt"

// Step is a milestone of the flush-sequence protocol in a model-world
// trace. The code that runs the protocol in the world (Program, or a
// workload driving impl.Syncer) emits them, with Task.Reached or as the
// Milestone of a Select branch; ValidateTrace and the timed runs
// (SimulateCode) follow them by type and value, never by text.
type Step uint8

// The milestones.
const (
	// Returned: fsync returned 0; from now on the task's last write
	// must survive a crash (the obligation).
	Returned   Step = iota + 1
	Failed          // fsync returned -EIO
	LogNothing      // the log force found nothing to write
	LogOwn          // the log force writes the iclog itself (a PREFLUSH flush)
	LogJoin         // the log force waits for the iclog another task writes next
	LogEscape       // nobody wrote the awaited iclog: the log force writes it
	LogOut          // woken: the iclog another task wrote is out
	JoinWoken       // woken: the in-flight flush numbered above S (Seq) that it joined ended
	DrainWoken      // group commit, woken: no flush numbered <= S (Seq) is in flight
)

// Milestone is a milestone of the flush-sequence protocol: a step and,
// for the wake-ups, the flush number it concerns.
type Milestone struct {
	Step Step
	Seq  int64 // FsyncJoinWoken: the flush joined; FsyncDrainWoken: S
}

// fsyncLogSteps are the log force's branches in the order System's
// labels number them (kLogNothing, kLogOwn, kLogJoin, kLogEscape).
var fsyncLogSteps = [...]Step{LogNothing, LogOwn, LogJoin, LogEscape}

func (m Milestone) String() string {
	switch m.Step {
	case Returned:
		return "fsync returns 0"
	case Failed:
		return "fsync returns -EIO"
	case LogNothing:
		return "log force: nothing to write"
	case LogOwn:
		return "log force: writes the iclog (PREFLUSH)"
	case LogJoin:
		return "log force: waits for the iclog another task writes next"
	case LogEscape:
		return "log force: nobody wrote the iclog, writes it (PREFLUSH)"
	case LogOut:
		return "log force: the iclog is out"
	case JoinWoken:
		return fmt.Sprintf("woken: flush seq %d ended", m.Seq)
	case DrainWoken:
		return fmt.Sprintf("woken: no flush numbered <= S=%d in flight", m.Seq)
	}
	return fmt.Sprintf("FsyncStep(%d)", uint8(m.Step))
}
