package model

import "fmt"

// What a client of the file sees of an IOWQSystem run: when each write and
// read began and ended, and what each read returned. linearize turns these
// events into porcupine operations.

// IOWQEventKind says what a step of a path means to a client of the file.
type IOWQEventKind uint8

// The events.
const (
	IOWQWriteCall   IOWQEventKind = iota + 1 // a worker takes the write: its interval begins
	IOWQWriteReturn                          // end_io ran: the write completed (its CQE)
	IOWQReadCall                             // the reader starts a read
	IOWQReadReturn                           // the read returned Value
)

func (k IOWQEventKind) String() string {
	switch k {
	case IOWQWriteCall:
		return "write call"
	case IOWQWriteReturn:
		return "write return"
	case IOWQReadCall:
		return "read call"
	case IOWQReadReturn:
		return "read return"
	}
	return fmt.Sprintf("IOWQEventKind(%d)", uint8(k))
}

// IOWQEvent is one client-visible event of a run.
type IOWQEvent struct {
	Step    int // position of the step in the path, from 1
	Client  int // the worker that owns the write, or the reader's actor number
	Kind    IOWQEventKind
	ID      int   // write number, or read number (from 1)
	Sectors uint8 // the sectors written (bit s = sector s), or the one read
	Value   int   // a write's data (its number); what a read returned (0, a write number or IOWQStale)
}

// Events returns the client-visible events of a path from the initial
// state, in order.
func (s *IOWQSystem) Events(path []Label) []IOWQEvent {
	var out []IOWQEvent
	for i, l := range path {
		step := i + 1
		switch l.Kind {
		case iowqKPick:
			w := s.info(int(l.ID))
			out = append(out, IOWQEvent{Step: step, Client: w.worker, Kind: IOWQWriteCall, ID: int(l.ID), Sectors: w.sectors, Value: int(l.ID)})
		case iowqKEndIO:
			w := s.info(int(l.ID))
			out = append(out, IOWQEvent{Step: step, Client: w.worker, Kind: IOWQWriteReturn, ID: int(l.ID), Sectors: w.sectors, Value: int(l.ID)})
		case iowqKReadLock:
			out = append(out, IOWQEvent{Step: step, Client: s.reader, Kind: IOWQReadCall, ID: int(l.ID) + 1, Sectors: 1 << (l.Arg & 0xff)})
		case iowqKRead:
			out = append(out, IOWQEvent{Step: step, Client: s.reader, Kind: IOWQReadReturn, ID: int(l.ID) + 1, Sectors: 1 << (l.Arg & 0xff), Value: int(l.Arg >> 8)})
		}
	}
	return out
}

// Sectors returns the number of sectors of the file.
func (s *IOWQSystem) Sectors() int { return s.sectors() }
