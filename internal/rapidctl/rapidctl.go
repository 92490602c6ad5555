// Package rapidctl runs a rapid property that is expected to fail (a
// negative control) and replays the failure from the seed rapid printed.
//
// A negative control is only worth something if the check really finds the
// bug and the counterexample really replays: Expect runs the property with a
// recording testing.TB, asserts that rapid failed, extracts the seed from
// rapid's own "To reproduce" line, runs the property again with exactly that
// seed and one check, and asserts that it fails again the same way.
package rapidctl

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"

	"pgregory.net/rapid"
)

// Failure is what a failing rapid run reported.
type Failure struct {
	Seed   string // the -rapid.seed value that replays it
	Output string // everything rapid logged, including the shrunk counterexample
}

// recorder is a testing.TB for rapid that records instead of failing.
type recorder struct {
	testing.TB // only for Name and Helper; never failed through
	mu         sync.Mutex
	failed     bool
	out        strings.Builder
}

func (r *recorder) Helper() {}
func (r *recorder) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(&r.out, format+"\n", args...)
}
func (r *recorder) Log(args ...any)                   { r.Logf("%s", fmt.Sprint(args...)) }
func (r *recorder) Errorf(format string, args ...any) { r.Logf(format, args...); r.Fail() }
func (r *recorder) Error(args ...any)                 { r.Log(args...); r.Fail() }
func (r *recorder) Fatalf(format string, args ...any) { r.Errorf(format, args...); r.FailNow() }
func (r *recorder) Fatal(args ...any)                 { r.Error(args...); r.FailNow() }
func (r *recorder) Fail()                             { r.mu.Lock(); r.failed = true; r.mu.Unlock() }
func (r *recorder) FailNow()                          { r.Fail(); panic(stopRun{}) }
func (r *recorder) Failed() bool                      { r.mu.Lock(); defer r.mu.Unlock(); return r.failed }
func (r *recorder) Skipf(format string, args ...any)  { r.Logf(format, args...); panic(stopRun{}) }
func (r *recorder) Skip(args ...any)                  { r.Log(args...); panic(stopRun{}) }
func (r *recorder) SkipNow()                          { panic(stopRun{}) }

type stopRun struct{}

var seedRE = regexp.MustCompile(`-rapid\.seed=(\d+)`)

// flagMu serialises the runs that change rapid's global flags.
var flagMu sync.Mutex

// run checks prop with the given rapid flags set, restoring them afterwards.
func run(t testing.TB, name string, flags map[string]string, prop func(*rapid.T)) (rec *recorder) {
	t.Helper()
	userChecks() // decide before the flags are touched
	flagMu.Lock()
	defer flagMu.Unlock()
	old := map[string]string{}
	for k, v := range flags {
		f := flag.Lookup(k)
		if f == nil {
			t.Fatalf("rapid flag %s is not registered", k)
		}
		old[k] = f.Value.String()
		if err := flag.Set(k, v); err != nil {
			t.Fatalf("set -%s=%s: %v", k, v, err)
		}
	}
	defer func() {
		for k, v := range old {
			_ = flag.Set(k, v)
		}
	}()
	rec = &recorder{TB: t}
	defer func() {
		if p := recover(); p != nil {
			if _, ok := p.(stopRun); !ok {
				panic(p)
			}
		}
	}()
	rapid.Check(&named{rec, name}, prop)
	return rec
}

// named gives the recorder a test name of its own (rapid uses it for fail
// file names; Expect turns fail files off).
type named struct {
	*recorder
	name string
}

func (n *named) Name() string { return n.name }

// Expect runs prop, which must fail within checks test cases, then replays
// the failure from its seed. It returns the replayed failure, whose Output
// holds the shrunk counterexample. It fails t if rapid finds nothing or the
// seed does not reproduce the failure.
func Expect(t testing.TB, checks int, prop func(*rapid.T)) Failure {
	t.Helper()
	name := t.Name() + "/negative-control"
	first := run(t, name, map[string]string{"rapid.checks": fmt.Sprint(checks), "rapid.nofailfile": "true", "rapid.seed": "0"}, prop)
	if !first.Failed() {
		t.Fatalf("negative control not caught: rapid found no counterexample in %d checks\n%s", checks, first.out.String())
		return Failure{}
	}
	m := seedRE.FindStringSubmatch(first.out.String())
	if m == nil {
		t.Fatalf("rapid failed but printed no seed to replay:\n%s", first.out.String())
		return Failure{}
	}
	// The seed is the first case rapid runs; 5 checks (not 1) because
	// -short divides the count by 5.
	replay := run(t, name, map[string]string{"rapid.checks": "5", "rapid.nofailfile": "true", "rapid.seed": m[1]}, prop)
	if !replay.Failed() {
		t.Fatalf("counterexample does not replay from -rapid.seed=%s:\nfirst run:\n%s\nreplay:\n%s", m[1], first.out.String(), replay.out.String())
	}
	return Failure{Seed: m[1], Output: replay.out.String()}
}

// userChecks reports whether the user chose the number of checks
// (-rapid.checks or RAPID_CHECKS). It is decided once, before this package
// sets the flag itself (which would make it look set).
var userChecks = sync.OnceValue(func() bool {
	_, set := os.LookupEnv("RAPID_CHECKS")
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.checks" })
	return set
})

// Check is rapid.Check with defaultChecks test cases instead of rapid's
// default of 100, unless the user chose a number (-rapid.checks or
// RAPID_CHECKS), which wins. rapid itself divides the count by 5 under
// -short.
func Check(t *testing.T, defaultChecks int, prop func(*rapid.T)) {
	t.Helper()
	if userChecks() {
		rapid.Check(t, prop)
		return
	}
	flagMu.Lock()
	f := flag.Lookup("rapid.checks")
	old := f.Value.String()
	err := flag.Set("rapid.checks", fmt.Sprint(defaultChecks))
	flagMu.Unlock()
	if err != nil {
		t.Fatalf("set -rapid.checks: %v", err)
	}
	defer func() {
		flagMu.Lock()
		_ = flag.Set("rapid.checks", old)
		flagMu.Unlock()
	}()
	rapid.Check(t, prop)
}
