// Package wal is a small write-ahead log with group commit, written as a
// WAL author would write one, against flushproof's spec interfaces: a
// device, two atomic64 words and a wait queue. Its test checks it in the
// model world (docs/world.md walks through it).
//
// Appenders take log sequence numbers (LSNs) from a counter and write
// record n to block n-1. To commit, an appender returns at once if the
// log is flushed up to its LSN; otherwise one committer at a time becomes
// the leader, flushes the device's cache for everyone, and raises the
// flushed LSN; the others wait for it and look again.
package wal

import (
	"encoding/binary"
	"slices"

	"github.com/flushproof/flushproof/spec"
)

// Log is the write-ahead log.
type Log struct {
	dev     spec.Device
	next    spec.Word // LSNs handed out
	flushed spec.Word // every record up to this LSN is durable
	queue   spec.WaitQueue
	st      *shared
	// HandedOut makes the leader claim every LSN handed out so far, instead
	// of those whose writes have completed: the bug of docs/world.md.
	HandedOut bool
}

// shared is the state the committers share, under the wait queue.
type shared struct {
	leader bool
	done   map[int64]bool // LSNs whose write completed
}

// written is the highest LSN up to which every record's write completed.
func (st *shared) written() int64 {
	n := int64(0)
	for st.done[n+1] {
		n++
	}
	return n
}

// New returns a log over dev, two words holding 0 and a wait queue.
func New(dev spec.Device, next, flushed spec.Word, queue spec.WaitQueue) *Log {
	return &Log{dev: dev, next: next, flushed: flushed, queue: queue, st: &shared{done: map[int64]bool{}}}
}

// With returns a log that shares l's state but acts through other
// handles (each task of the model world has its own).
func (l *Log) With(dev spec.Device, next, flushed spec.Word, queue spec.WaitQueue) *Log {
	c := *l
	c.dev, c.next, c.flushed, c.queue = dev, next, flushed, queue
	return &c
}

// Append writes rec as the next record and returns its LSN once the write
// completed (it is not durable yet: Commit).
func (l *Log) Append(rec []byte) (int64, error) {
	lsn := l.next.IncReturn()
	if err := l.dev.WriteAt(rec, (lsn-1)*int64(l.dev.BlockSize()), 0); err != nil {
		return 0, err
	}
	l.queue.Wake(func() { l.st.done[lsn] = true })
	return lsn, nil
}

// Commit returns nil once record lsn is durable, or the error of the flush
// that was to make it so.
func (l *Log) Commit(lsn int64) error {
	for {
		if l.flushed.Load() >= lsn {
			return nil
		}
		lead := false
		l.queue.Wake(func() {
			if !l.st.leader {
				l.st.leader, lead = true, true
			}
		})
		if !lead {
			l.queue.Wait(func() bool { return !l.st.leader })
			continue
		}
		// The leader: it waits until every record up to its own is
		// written, then claims the records written so far; each of them
		// completed before the flush is submitted, so the flush covers it.
		var upTo int64
		if l.HandedOut {
			upTo = l.next.Load()
		} else {
			l.queue.Wait(func() bool { return l.st.written() >= lsn })
			l.queue.Wake(func() { upTo = l.st.written() })
		}
		err := l.dev.Flush()
		if err == nil {
			for {
				f := l.flushed.Load()
				if f >= upTo || l.flushed.CompareAndSwap(f, upTo) {
					break
				}
			}
		}
		l.queue.Wake(func() { l.st.leader = false })
		if err != nil {
			return err
		}
	}
}

// AppendState encodes the state the committers share, for the model
// world's search (world.World.Shared).
func (l *Log) AppendState(b []byte) []byte {
	if l.st.leader {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	lsns := make([]int64, 0, len(l.st.done))
	for lsn := range l.st.done {
		lsns = append(lsns, lsn)
	}
	slices.Sort(lsns)
	for _, lsn := range lsns {
		b = binary.AppendVarint(b, lsn)
	}
	return b
}
