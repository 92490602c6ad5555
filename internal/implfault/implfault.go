// Package implfault holds the deliberate bugs of package impl's code: the
// negative controls that the exhaustive check of that code in the model
// world (model/implcheck, the impl.* rows of flushproof check) must catch.
// They are internal so that no user of impl can switch one on: impl's
// exported API has no fault in it. impl registers, when it is loaded, the
// functions that give one of its values a fault (Syncer, DSyncWriter);
// model/implcheck calls them.
package implfault

import "fmt"

// Fault is a deliberate bug of impl's code. Never use one for real data.
type Fault uint8

// The faults.
const (
	None Fault = iota
	// GreaterEqual (Syncer) skips the flush when Completed >= S instead of
	// > S: the flush numbered S may have been submitted before the write
	// completed.
	GreaterEqual
	// JoinNoFallback (Syncer: Join, GroupCommit): when the joined flush
	// failed, Sync returns nil instead of flushing itself.
	JoinNoFallback
	// GroupNoWait (Syncer: GroupCommit): with nothing to join, Sync takes
	// a flush in flight, numbered before its sample, as covering its write
	// and returns nil without waiting for it.
	GroupNoWait
	// DropFUA (DSyncWriter, mode FUA): the write is sent without FUA, and
	// nothing flushes it.
	DropFUA
)

func (f Fault) String() string {
	switch f {
	case None:
		return "none"
	case GreaterEqual:
		return ">="
	case JoinNoFallback:
		return "join-without-fallback"
	case GroupNoWait:
		return "group-commit-without-wait"
	case DropFUA:
		return "drop-FUA"
	}
	return fmt.Sprintf("Fault(%d)", uint8(f))
}

// Set by package impl when it is loaded: Syncer returns a *impl.Syncer
// that shares the given one's state and handles, with fault f;
// DSyncWriter returns the impl.DSyncWriter given with fault f. A caller
// that imports impl finds them set.
var (
	Syncer      func(s any, f Fault) any
	DSyncWriter func(w any, f Fault) any
)
