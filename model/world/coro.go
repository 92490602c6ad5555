package world

import (
	"iter"
)

// The coroutines the tasks run on, and the call by which a task hands a
// request to the scheduler and waits for its response.

// coro is a coroutine that runs one task's body after another: a replay
// takes its tasks' coroutines from the search's pool and gives them back,
// so that runs do not each start coroutines and grow their stacks anew;
// any other run stops its own.
type coro struct {
	next  func() (struct{}, bool)
	stop  func()
	yield func(struct{}) bool
	job   func() // the body to run when resumed idle
}

// newCoro starts a coroutine, idle until its job is set and it is resumed.
// A job that unwinds from a crash (errCrashed) ends quietly; any other
// panic goes to the caller of next.
func newCoro() *coro {
	c := &coro{}
	c.next, c.stop = iter.Pull(func(yield func(struct{}) bool) {
		c.yield = yield
		for {
			func() {
				defer func() {
					if r := recover(); r != nil && r != errCrashed { //nolint:errorlint // sentinel identity
						panic(r)
					}
				}()
				c.job()
			}()
			c.job = nil
			if !yield(struct{}{}) {
				return
			}
		}
	})
	return c
}

// resume runs the task until its next call or its end. Its first resume
// (its start) is one of its results too, so that the key tells a task
// that has started from one that has not.
func (t *Task) resume() {
	if s := t.w.srch; s != nil && !t.w.noSeq {
		t.seq = s.extend(t.seq, &t.resp)
	}
	t.started = true
	t.resumes++
	t.w.inTask = t.id + 1
	_, ok := t.c.next()
	t.w.inTask = 0
	if !ok {
		t.done = true
	}
	if t.done && !t.forgot {
		// It takes no step any more: memory forgets its views (and a
		// barrier of its still pending), as the state machines' memory
		// does when a thread ends (memory.Memory.DropReader).
		t.forgot = true
		t.w.mem.Forget(t.id)
	}
}

// call makes a request and waits for the scheduler to serve it.
// A call while the task unwinds (a deferred one, such as an Unlock that
// Wakes) unwinds too, without a step: the run is over.
func (t *Task) call(r request) response {
	if t.abort {
		panic(errCrashed)
	}
	t.req = r
	if !t.yield(struct{}{}) || t.abort {
		t.abort = true
		panic(errCrashed)
	}
	return t.resp
}

// coro returns an idle coroutine of the pool.
func (s *Search) coro() *coro {
	s.cmu.Lock()
	defer s.cmu.Unlock()
	if n := len(s.idle); n > 0 {
		c := s.idle[n-1]
		s.idle = s.idle[:n-1]
		return c
	}
	return newCoro()
}

// release gives back an idle coroutine (its job finished or unwound).
func (s *Search) release(c *coro) {
	s.cmu.Lock()
	s.idle = append(s.idle, c)
	s.cmu.Unlock()
}

// closeCoros ends the idle coroutines.
func (s *Search) closeCoros() {
	s.cmu.Lock()
	idle := s.idle
	s.idle = nil
	s.cmu.Unlock()
	for _, c := range idle {
		c.stop()
	}
}
