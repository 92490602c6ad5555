package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// The exit statuses of every flushproof command (docs/cli.md).
const (
	exitOK         = 0   // everything as expected; also -h
	exitUnexpected = 1   // a result not as expected
	exitUsage      = 2   // unknown flag, bad flag value, unexpected argument
	exitFailed     = 3   // an error or panic in a search or in the environment
	exitIncomplete = 4   // some rows UNKNOWN (a budget), nothing else wrong
	exitSIGINT     = 130 // interrupted by SIGINT, what was finished printed first
	exitSIGTERM    = 143 // the same for SIGTERM
)

// interruptReason is the reason an interrupted search gives
// (explore.Options.Stop): its row reads "UNKNOWN (interrupted)".
const interruptReason = "interrupted"

// interrupts catches SIGINT and SIGTERM while a command runs, so that it can
// stop its work, print what it finished and exit 130 or 143. A second
// signal ends the process at once with the same status, unless the command
// must finish cleaning up first (catchInterrupts' exitOnSecond).
type interrupts struct {
	ch     chan os.Signal
	done   chan struct{} // closed at the first signal
	once   sync.Once
	mu     sync.Mutex
	sig    os.Signal
	quit   chan struct{}
	cancel context.CancelCauseFunc // of context(), if asked for
}

// catchInterrupts starts catching; release stops it. With exitOnSecond, a
// second signal ends the process at once; without, it is ignored (crashlab:
// dying half way through its clean-up would leave mounts behind).
func catchInterrupts(stderr io.Writer, exitOnSecond bool) *interrupts {
	in := &interrupts{ch: make(chan os.Signal, 2), done: make(chan struct{}), quit: make(chan struct{})}
	signal.Notify(in.ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		for {
			select {
			case s := <-in.ch:
				if in.deliver(s) || !exitOnSecond {
					continue
				}
				fmt.Fprintf(stderr, "flushproof: %v again, exiting now\n", s)
				os.Exit(exitCodeOf(s))
			case <-in.quit:
				return
			}
		}
	}()
	return in
}

// interruptCause is the cause (context.Cause) of a context that a signal
// canceled.
type interruptCause struct{ sig os.Signal }

func (c interruptCause) Error() string { return "interrupted by " + signalName(c.sig) }

// context returns a context canceled at the first signal, with an
// interruptCause as its cause. Call it before the signals can come.
func (in *interrupts) context() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	in.mu.Lock()
	in.cancel = cancel
	in.mu.Unlock()
	return ctx
}

// deliver records signal s; it reports whether s was the first one.
func (in *interrupts) deliver(s os.Signal) bool {
	first := false
	in.once.Do(func() {
		in.mu.Lock()
		in.sig = s
		cancel := in.cancel
		in.mu.Unlock()
		close(in.done)
		if cancel != nil {
			cancel(interruptCause{s})
		}
		first = true
	})
	return first
}

func (in *interrupts) release() {
	signal.Stop(in.ch)
	close(in.quit)
	in.mu.Lock()
	if in.cancel != nil {
		in.cancel(nil)
	}
	in.mu.Unlock()
}

// signal returns the first signal caught, or nil.
func (in *interrupts) signal() os.Signal {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.sig
}

// stop is an explore.Options.Stop hook: "interrupted" once a signal came.
func (in *interrupts) stop() string {
	select {
	case <-in.done:
		return interruptReason
	default:
		return ""
	}
}

// exitCode is 130 or 143 for the first signal caught, 0 if none.
func (in *interrupts) exitCode() int {
	if s := in.signal(); s != nil {
		return exitCodeOf(s)
	}
	return 0
}

// signalName is "SIGINT" or "SIGTERM", "" if no signal came.
func (in *interrupts) signalName() string { return signalName(in.signal()) }

// signalName names s: "SIGINT", "SIGTERM", or "" for nil.
func signalName(s os.Signal) string {
	switch s {
	case nil:
		return ""
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return "SIGINT"
}

func exitCodeOf(s os.Signal) int {
	if s == syscall.SIGTERM {
		return exitSIGTERM
	}
	return exitSIGINT
}
