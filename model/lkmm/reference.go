package lkmm

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/flushproof/flushproof/model/litmus"
)

// ErrUnsupported says the reference refuses a test: a primitive it does
// not model, or a use of locks lock.cat flags. It wraps
// [litmus.ErrUnsupported], so a caller treats it as any model's refusal.
var ErrUnsupported = fmt.Errorf("lkmm: %w", litmus.ErrUnsupported)

// ErrTooLarge is wrapped, with [litmus.ErrCutShort], by a search that
// reached its budget (Reference.Candidates or Reference.Timeout): the
// test is too large for the budget given, and its answer unknown.
var ErrTooLarge = fmt.Errorf("lkmm: %w", litmus.ErrCutShort)

// ErrFault says an execution LKMM allows accesses memory through a value
// that is no location's address (a null or integer pointer): the test
// has no answer, as herd7 fails on it too.
var ErrFault = errors.New("lkmm: an access through a value that is no address")

// Features are the constructs of the LKMM language (litmus.Feature) the
// reference models: all of them.
const Features = litmus.AllFeatures

// Reference is the axiomatic Linux kernel memory model: the outcomes of a
// test are those of its candidate executions that satisfy the axioms of
// tools/memory-model/linux-kernel.cat. It implements [litmus.Model] and
// [litmus.Decider]. There is no bound on the threads, locations, events
// or values of a test: a search runs until it is done or its budget is
// spent, and then fails with an error wrapping [litmus.ErrCutShort].
type Reference struct {
	// Candidates, if not 0, bounds the steps of one search: the
	// candidate executions it checks, partial ones included, and the
	// threads' runs it makes (property tests keep each program cheap).
	Candidates int
	// Timeout, if not 0, bounds the time one search takes.
	Timeout time.Duration
	// InOrder keeps only the executions in which po | rf is acyclic: those
	// a machine running each thread in program order, each load reading a
	// store already made, can produce. The outcomes it drops need load
	// buffering (a load reading a store that depends on nothing the load
	// precedes, made later in program order).
	InOrder bool
}

// Name returns "LKMM-ref", the reference's one spelling in every
// command and doc (LKMM alone is memory.LKMM, the explorer's model;
// LKMM-op is Promise).
func (Reference) Name() string { return "LKMM-ref" }

// Outcomes returns every final state of t that some execution allowed by
// LKMM reaches, each once: every thread's registers (those its code
// assigns, 0 if never set on the path taken) and every location's final
// value (its co-last write; a spin lock is 0 free, 1 held). The filter
// clause is not applied (Judge applies it). A search that spends its
// budget, or a test using a construct the reference refuses (see the
// package doc and locks.go), is an error wrapping [litmus.ErrCutShort]
// or [ErrUnsupported]. A test whose every execution deadlocks (a lock
// never released that another thread waits for, a lock taken twice) has
// no outcome: the result is empty, not an error.
func (r Reference) Outcomes(t *litmus.Test) ([]litmus.Outcome, error) {
	s, err := r.prepare(t)
	if err != nil {
		return nil, err
	}
	s.found = map[string]litmus.Outcome{}
	s.run()
	if err := r.failed(s); err != nil {
		return nil, err
	}
	out := make([]litmus.Outcome, 0, len(s.found))
	for _, o := range s.found {
		out = append(out, o)
	}
	sortOutcomes(out)
	return out, nil
}

// Decide answers t's condition as Judge would from Outcomes, with one
// search that stops as soon as it has an allowed outcome satisfying the
// condition and one not satisfying it (both of executions whose final
// state the filter keeps), and that leaves a branch as soon as what it
// has chosen decides the condition (or the filter) against every side
// still wanted (cond.go).
func (r Reference) Decide(t *litmus.Test) (litmus.Decision, error) {
	s, err := r.prepare(t)
	if err != nil {
		return litmus.Decision{}, err
	}
	if s.flagged {
		// A flag (a data race...) may be raised by any execution: every
		// one is visited, as Outcomes does, and the decision read from
		// the outcomes.
		s.found = map[string]litmus.Outcome{}
		s.run()
		if err := r.failed(s); err != nil {
			return litmus.Decision{}, err
		}
		return decideFrom(t, s.found)
	}
	s.decide = true
	s.run()
	if err := r.failed(s); err != nil {
		return litmus.Decision{}, err
	}
	return litmus.Decision{Sat: s.got[0], Unsat: s.got[1]}, nil
}

// decideFrom reads a decision from every outcome: the first (by key)
// that the filter keeps on each side of the condition, and the flags of
// all the filter keeps.
func decideFrom(t *litmus.Test, found map[string]litmus.Outcome) (litmus.Decision, error) {
	outs := make([]litmus.Outcome, 0, len(found))
	for _, o := range found {
		outs = append(outs, o)
	}
	sortOutcomes(outs)
	var d litmus.Decision
	for i := range outs {
		o := &outs[i]
		keep, err := o.Filtered(t)
		if err != nil {
			return litmus.Decision{}, err
		}
		if !keep {
			continue
		}
		d.Flags = litmus.UnionFlags(d.Flags, o.Flags)
		sat, err := o.Satisfies(t.Cond)
		if err != nil {
			return litmus.Decision{}, err
		}
		if sat && d.Sat == nil {
			d.Sat = o
		}
		if !sat && d.Unsat == nil {
			d.Unsat = o
		}
	}
	return d, nil
}

// prepare refuses what the reference does not model and makes the
// threads' runs.
func (r Reference) prepare(t *litmus.Test) (*search, error) {
	if err := litmus.MemoryOps(t); err != nil {
		return nil, err
	}
	if err := t.Refuse(r.Name(), Features); err != nil {
		return nil, err
	}
	locks, err := lockLocs(t)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.Name, err)
	}
	b := &budget{max: r.Candidates, timeout: r.Timeout, start: time.Now()}
	roots, err := threadRuns(t, testLocs(t), locks, b)
	if errors.Is(err, errBudget) {
		return nil, r.cutShort(t, b, 0)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: running the threads: %w", t.Name, err)
	}
	return newSearch(t, locks, roots, b, r.InOrder), nil
}

// failed returns the search's error: the budget's, with the counts, or
// one evaluating the condition.
func (r Reference) failed(s *search) error {
	if s.b.err != nil {
		return r.cutShort(s.t, s.b, s.maxEvents)
	}
	if s.err != nil {
		return fmt.Errorf("%s: %w", s.t.Name, s.err)
	}
	return nil
}

func (r Reference) cutShort(t *litmus.Test, b *budget, events int) error {
	var spent []string
	if r.Candidates > 0 && b.steps > r.Candidates {
		spent = append(spent, fmt.Sprintf("%d steps", r.Candidates))
	}
	if r.Timeout > 0 && time.Since(b.start) > r.Timeout {
		spent = append(spent, r.Timeout.String())
	}
	size := fmt.Sprintf("%d threads", len(t.Threads))
	if events > 0 {
		size += fmt.Sprintf(", up to %d events", events)
	}
	return fmt.Errorf("%s: %w: the budget (%s) spent after %d candidate executions checked (partial ones included) and %d nodes of the threads' runs in %v: %s",
		t.Name, ErrTooLarge, strings.Join(spent, ", "), b.checks, b.runs, time.Since(b.start).Round(time.Millisecond), size)
}

// testLocs lists the test's locations: t.Locs, then any other the initial
// state or the code names.
func testLocs(t *litmus.Test) []string {
	seen := map[string]bool{}
	var out []string
	add := func(l string) {
		if l != "" && !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	for _, l := range t.Locs {
		add(l)
	}
	var walk func([]litmus.Stmt)
	walk = func(body []litmus.Stmt) {
		for _, s := range body {
			if s.Access != nil {
				add(s.Access.Loc)
			}
			if s.If != nil {
				walk(s.If.Then)
				walk(s.If.Else)
			}
		}
	}
	for _, th := range t.Threads {
		walk(th.Body)
	}
	init := make([]string, 0, len(t.Init))
	for l := range t.Init {
		init = append(init, l)
	}
	sort.Strings(init)
	for _, l := range init {
		add(l)
	}
	return out
}

// Reference is a litmus.Model and a litmus.Decider.
var (
	_ litmus.Model   = Reference{}
	_ litmus.Decider = Reference{}
)
