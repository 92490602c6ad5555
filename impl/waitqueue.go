package impl

import "sync"

// WaitQueue is spec.WaitQueue over a mutex and a condition variable. The
// zero value is ready to use.
type WaitQueue struct {
	mu   sync.Mutex
	cond sync.Cond
	once sync.Once
}

func (q *WaitQueue) init() { q.once.Do(func() { q.cond.L = &q.mu }) }

// Wake runs change under the lock and wakes every waiter.
func (q *WaitQueue) Wake(change func()) {
	q.init()
	q.mu.Lock()
	change()
	q.mu.Unlock()
	q.cond.Broadcast()
}

// Wait blocks until cond, evaluated under the lock, holds. Taking and
// releasing the mutex orders memory as a full barrier would for this
// purpose (the Go memory model: a Lock is synchronized after the previous
// Unlock).
func (q *WaitQueue) Wait(cond func() bool) {
	q.init()
	q.mu.Lock()
	for !cond() {
		q.cond.Wait()
	}
	q.mu.Unlock()
}
