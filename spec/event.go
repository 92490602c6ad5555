package spec

import (
	"fmt"
	"math/bits"
	"strings"
)

// Kind is what happened in a device history.
type Kind uint8

// The events of a device history. Writes are numbered W1, W2, ... and flushes
// F1, F2, ... in submission order, each sequence starting at 1.
const (
	WriteSubmit Kind = iota + 1 // a write is queued to the device
	// WriteLand: the device applied the write's data to its cache (or media)
	// on the block(s) in Blocks.
	// Invisible to the operating system and ignored by the contract, which
	// allows every landing order; models use it to say which order they chose.
	WriteLand
	// WriteDataDone: with emulated FUA only, the data part of a FUA write
	// completed and the block layer submitted its post-flush
	// (blk-flush.c, blk_flush_complete_seq: REQ_FSEQ_DATA -> REQ_FSEQ_POSTFLUSH).
	WriteDataDone
	WriteComplete // the write completed successfully and the submitter was told
	WriteFail     // the write completed with an error (EIO)
	FlushSubmit   // an empty REQ_PREFLUSH is queued
	FlushComplete // the flush completed successfully
	FlushFail     // the flush completed with an error (EIO)
	Crash         // power is lost: every volatile state is gone
	Read          // a read of Block returned Value (a write number, 0 = initial content)
	// WritePreflushed: the PREFLUSH step of a write carrying REQ_PREFLUSH
	// completed successfully, so the writes it covers are durable, and the
	// block layer now sends the write's data (blk-flush.c,
	// blk_flush_complete_seq: REQ_FSEQ_PREFLUSH -> REQ_FSEQ_DATA). Before
	// it the data is not on its way to the device. (Numbered after Read so
	// that the older kinds keep their values.)
	WritePreflushed
)

var kindNames = [...]string{
	WriteSubmit: "submit", WriteLand: "lands", WriteDataDone: "data done, post-flush submitted",
	WriteComplete: "complete", WriteFail: "fail (EIO)", FlushSubmit: "submit",
	FlushComplete: "complete", FlushFail: "fail (EIO)", Crash: "crash", Read: "read",
	WritePreflushed: "preflushed, data sent",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// IsWrite reports whether the event concerns a write command.
func (k Kind) IsWrite() bool { return k >= WriteSubmit && k <= WriteFail || k == WritePreflushed }

// IsFlush reports whether the event concerns a flush command.
func (k Kind) IsFlush() bool { return k >= FlushSubmit && k <= FlushFail }

// Event is one step of a device history.
type Event struct {
	Kind   Kind
	ID     int   // write or flush number (1-based); unused for Crash and Read
	Blocks uint8 // WriteSubmit: the blocks written (bit i = block i); WriteLand: the block landed on; Read: the block read
	FUA    bool  // WriteSubmit: REQ_FUA set
	// Preflush, on WriteSubmit: REQ_PREFLUSH set, the device's cache is
	// flushed before the data is written (blk-flush.c, REQ_FSEQ_PREFLUSH).
	Preflush bool
	Value    int // Read: the write number whose data was returned, 0 = initial content
}

func (e Event) String() string {
	switch {
	case e.Kind == WriteSubmit:
		s := fmt.Sprintf("W%d submit %s", e.ID, BlockList(e.Blocks))
		if e.Preflush {
			s += " PREFLUSH"
		}
		if e.FUA {
			s += " FUA"
		}
		return s
	case e.Kind == WriteLand && e.Blocks != 0:
		return fmt.Sprintf("W%d lands on %s", e.ID, BlockList(e.Blocks))
	case e.Kind.IsWrite():
		return fmt.Sprintf("W%d %s", e.ID, e.Kind)
	case e.Kind.IsFlush():
		return fmt.Sprintf("F%d %s", e.ID, e.Kind)
	case e.Kind == Read:
		return fmt.Sprintf("read %s = %s", BlockList(e.Blocks), ContentName(e.Value))
	}
	return e.Kind.String()
}

// BlockList renders a block mask as "b0" or "b0,b2".
func BlockList(m uint8) string {
	var parts []string
	for m != 0 {
		b := bits.TrailingZeros8(m)
		parts = append(parts, fmt.Sprintf("b%d", b))
		m &^= 1 << b
	}
	return strings.Join(parts, ",")
}

// ContentName renders a block content: "W3" or "initial".
func ContentName(w int) string {
	if w == 0 {
		return "initial"
	}
	return fmt.Sprintf("W%d", w)
}
