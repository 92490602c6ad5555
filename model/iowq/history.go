package iowq

import (
	"fmt"
	"github.com/flushproof/flushproof/model/explore"
)

// What a client of the file sees of an System run: when each write and
// read began and ended, and what each read returned. linearize turns these
// events into porcupine operations.

// EventKind says what a step of a path means to a client of the file.
type EventKind uint8

// The events.
const (
	WriteCall   EventKind = iota + 1 // a worker takes the write: its interval begins
	WriteReturn                      // end_io ran: the write completed (its CQE)
	ReadCall                         // the reader starts a read
	ReadReturn                       // the read returned Value
)

func (k EventKind) String() string {
	switch k {
	case WriteCall:
		return "write call"
	case WriteReturn:
		return "write return"
	case ReadCall:
		return "read call"
	case ReadReturn:
		return "read return"
	}
	return fmt.Sprintf("IOWQEventKind(%d)", uint8(k))
}

// Event is one client-visible event of a run.
type Event struct {
	Step    int // position of the step in the path, from 1
	Client  int // the worker that owns the write, or the reader's actor number
	Kind    EventKind
	ID      int   // write number, or read number (from 1)
	Sectors uint8 // the sectors written (bit s = sector s), or the one read
	Value   int   // a write's data (its number); what a read returned (0, a write number or IOWQStale)
}

// Events returns the client-visible events of a path from the initial
// state, in order.
func (s *System) Events(path []explore.Label) []Event {
	var out []Event
	for i, l := range path {
		step := i + 1
		switch l.Kind {
		case kPick:
			w := s.info(int(l.ID))
			out = append(out, Event{Step: step, Client: w.worker, Kind: WriteCall, ID: int(l.ID), Sectors: w.sectors, Value: int(l.ID)})
		case kEndIO:
			w := s.info(int(l.ID))
			out = append(out, Event{Step: step, Client: w.worker, Kind: WriteReturn, ID: int(l.ID), Sectors: w.sectors, Value: int(l.ID)})
		case kReadLock:
			out = append(out, Event{Step: step, Client: s.reader, Kind: ReadCall, ID: int(l.ID) + 1, Sectors: 1 << (l.Arg & 0xff)})
		case kRead:
			out = append(out, Event{Step: step, Client: s.reader, Kind: ReadReturn, ID: int(l.ID) + 1, Sectors: 1 << (l.Arg & 0xff), Value: int(l.Arg >> 8)})
		}
	}
	return out
}

// Sectors returns the number of sectors of the file.
func (s *System) Sectors() int { return s.sectors() }
