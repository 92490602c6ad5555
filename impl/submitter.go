package impl

import "sync"

// Submitter runs I/O for one file either serialised (one at a time, as
// io-wq does for work hashed to the same inode) or in parallel (io_uring
// after the patch "io_uring: avoid hashing O_DIRECT writes if the
// filesystem doesn't need it", for file systems that set
// FMODE_DIO_PARALLEL_WRITE). Whether parallel submission is safe is the
// file system's business: docs/iowq.md checks the locking that makes it so.
// The zero value submits in parallel.
type Submitter struct {
	Serialised bool
	// Lock serialises the I/O when Serialised; nil means a mutex of the
	// Submitter's own. The model world passes a lock it can schedule.
	Lock sync.Locker
	mu   sync.Mutex
}

// Submit runs io, after the previous io when serialised.
func (s *Submitter) Submit(io func() error) error {
	if s.Serialised {
		l := s.Lock
		if l == nil {
			l = &s.mu
		}
		l.Lock()
		defer l.Unlock()
	}
	return io()
}
