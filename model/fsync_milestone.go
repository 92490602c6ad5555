package model

import "fmt"

// FsyncStep is a milestone of the flush-sequence protocol in a model-world
// trace. The code that runs the protocol in the world (FsyncProgram, or a
// workload driving impl.Syncer) emits them, with Task.Reached or as the
// Milestone of a Select branch; ValidateFsyncTrace and the timed runs
// (SimulateFsyncCode) follow them by type and value, never by text.
type FsyncStep uint8

// The milestones.
const (
	// FsyncReturned: fsync returned 0; from now on the task's last write
	// must survive a crash (the obligation).
	FsyncReturned   FsyncStep = iota + 1
	FsyncFailed               // fsync returned -EIO
	FsyncLogNothing           // the log force found nothing to write
	FsyncLogOwn               // the log force writes the iclog itself (a PREFLUSH flush)
	FsyncLogJoin              // the log force waits for the iclog another task writes next
	FsyncLogEscape            // nobody wrote the awaited iclog: the log force writes it
	FsyncLogOut               // woken: the iclog another task wrote is out
	FsyncJoinWoken            // woken: the in-flight flush numbered above S (Seq) that it joined ended
	FsyncDrainWoken           // group commit, woken: no flush numbered <= S (Seq) is in flight
)

// FsyncMilestone is a milestone of the flush-sequence protocol: a step and,
// for the wake-ups, the flush number it concerns.
type FsyncMilestone struct {
	Step FsyncStep
	Seq  int64 // FsyncJoinWoken: the flush joined; FsyncDrainWoken: S
}

// fsyncLogSteps are the log force's branches in the order FsyncSystem's
// labels number them (kLogNothing, kLogOwn, kLogJoin, kLogEscape).
var fsyncLogSteps = [...]FsyncStep{FsyncLogNothing, FsyncLogOwn, FsyncLogJoin, FsyncLogEscape}

func (m FsyncMilestone) String() string {
	switch m.Step {
	case FsyncReturned:
		return "fsync returns 0"
	case FsyncFailed:
		return "fsync returns -EIO"
	case FsyncLogNothing:
		return "log force: nothing to write"
	case FsyncLogOwn:
		return "log force: writes the iclog (PREFLUSH)"
	case FsyncLogJoin:
		return "log force: waits for the iclog another task writes next"
	case FsyncLogEscape:
		return "log force: nobody wrote the iclog, writes it (PREFLUSH)"
	case FsyncLogOut:
		return "log force: the iclog is out"
	case FsyncJoinWoken:
		return fmt.Sprintf("woken: flush seq %d ended", m.Seq)
	case FsyncDrainWoken:
		return fmt.Sprintf("woken: no flush numbered <= S=%d in flight", m.Seq)
	}
	return fmt.Sprintf("FsyncStep(%d)", uint8(m.Step))
}
