package durable

import (
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/internal/litmusvariants"
	"github.com/flushproof/flushproof/internal/mutate"
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/explore/exploretest"
	"github.com/flushproof/flushproof/model/litmus"
	"github.com/flushproof/flushproof/model/memory"
)

// symFiles are the example files the reduction tests walk; a .patch is a
// variant of examples/litmus (readTest).
var symFiles = []string{"../../examples/litmus/xfs-flushseq/xfs-flushseq-patched.litmus", "../../examples/litmus/xfs-flushseq/mutant-read-before-writeback.patch",
	"../../examples/litmus/xfs-flushseq/benign-plain-store-completed.patch", "testdata/durable/shared-block.litmus",
	"testdata/durable/xfs-flushseq-patched-3x1.litmus", "testdata/durable/async-bios-sym.litmus",
	"testdata/durable/async-bio-superseded.litmus"}

// readTest parses the litmus file at path or, for a .patch, the variant
// of examples/litmus it is: the base file beside it with the patch
// applied (litmusvariants), named by the patch in errors.
func readTest(t *testing.T, path string) *litmus.Test {
	t.Helper()
	if filepath.Ext(path) != ".patch" {
		tt, err := litmus.ParseFile(path)
		require.NoError(t, err)
		return tt
	}
	fs, err := litmusvariants.Dir(filepath.Dir(path))
	require.NoError(t, err)
	for _, f := range fs {
		if f.Patch == path {
			tt, err := litmus.Parse(path, f.Text)
			require.NoError(t, err)
			return tt
		}
	}
	require.FailNow(t, "no such variant", path)
	return nil
}

func durSys(t *testing.T, path string, m memory.Model) *durSystem {
	t.Helper()
	tt := readTest(t, path)
	d, err := Read(path, tt)
	require.NoError(t, err)
	sys, err := d.system(Config{Model: m, Device: d.Devices[0], Failures: d.Failures})
	require.NoError(t, err)
	return sys
}

// succ is the set of st's successors, each zeroed of dead registers.
func succ(sys *durSystem, st State, f func(State) State) []string {
	var out []string
	sys.Next(st, func(_ explore.Label, n State) { out = append(out, fmt.Sprintf("%v", f(n))) })
	sort.Strings(out)
	return out
}

// everyState calls f on every state of sys the search without reductions
// reaches (for small files).
func everyState(t *testing.T, sys *durSystem, f func(State)) {
	r := explore.Explore[State](sys, explore.Options{NoReduce: true, Workers: 1, MaxStates: 200_000})
	require.True(t, r.Exhausted || r.Violation != nil, "cut short")
	for i := 0; i < r.Len(); i++ {
		f(r.State(i))
	}
}

// randomStates walks random runs of sys and calls f on every state.
func randomStates(sys *durSystem, runs, steps int, f func(State)) {
	rng := rand.New(rand.NewSource(1))
	for run := 0; run < runs; run++ {
		st := sys.Init()[0]
		for k := 0; k < steps; k++ {
			f(st)
			var next []State
			sys.Next(st, func(_ explore.Label, n State) { next = append(next, n) })
			if len(next) == 0 {
				break
			}
			st = next[rng.Intn(len(next))]
		}
	}
}

// dead zeroes dead registers only (Canonical without renaming).
func dead(sys *durSystem) func(State) State {
	return func(st State) State {
		u := *sys
		u.noSym = true
		return u.Canonical(st)
	}
}

// TestDurableDeadRegisters: a state and the state with its dead registers
// zeroed have the same successors (zeroed alike), on random runs of the
// example files under each memory model.
func TestDurableDeadRegisters(t *testing.T) {
	for _, f := range symFiles {
		for _, m := range []memory.Model{memory.SC, memory.TSO, memory.LKMM} {
			sys := durSys(t, f, m)
			z := dead(sys)
			randomStates(sys, 100, 60, func(st State) {
				require.Equal(t, succ(sys, st, z), succ(sys, z(st), z), "%s under %v at %v", f, m, st.op.pc)
			})
		}
	}
}

// TestDurableThreadRenaming: renaming interchangeable threads (with their
// blocks, memory's views of them and what they wait for) commutes with
// every step: the successors of the renamed state are the renamed
// successors, for every renaming, on random runs of the example files.
// This is what makes sorting threads (Canonical) sound.
func TestDurableThreadRenaming(t *testing.T) {
	for _, f := range symFiles {
		for _, m := range []memory.Model{memory.SC, memory.TSO, memory.LKMM} {
			sys := durSys(t, f, m)
			if len(sys.sym) == 0 {
				continue // no interchangeable threads
			}
			c := sys.sym[0]
			z := dead(sys)
			perm := make([]int, len(c.members)) // a rotation: not its own inverse beyond 2 members
			for k := range perm {
				perm[k] = (k + 1) % len(perm)
			}
			randomStates(sys, 60, 60, func(st State) {
				ren := func(x State) State { return z(sys.permuteClass(x, c, perm)) }
				require.Equal(t, succ(sys, st, ren), succ(sys, ren(st), z), "%s under %v at %v", f, m, st.op.pc)
				// The same from the state with its dead registers zeroed, as
				// Canonical renames it.
				require.Equal(t, succ(sys, st, ren), succ(sys, ren(z(st)), z), "%s under %v at %v (dead registers zeroed)", f, m, st.op.pc)
			})
		}
	}
}

// TestDurableRenumbering: renaming writes and flushes commutes with every
// step (a write or flush submitted next keeps its number), for random
// renamings, on random runs of the example files.
func TestDurableRenumbering(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for _, f := range symFiles {
		for _, m := range []memory.Model{memory.SC, memory.LKMM} {
			sys := durSys(t, f, m)
			z := dead(sys)
			randomStates(sys, 60, 60, func(st State) {
				nw, nf := st.dev.Writes(), st.dev.Flushes()
				wp, fp := perm8(rng, nw), perm8(rng, nf)
				ren := func(x State) State {
					// The renaming extended by the identity on what x
					// submitted since st.
					w, f := append([]uint8(nil), wp...), append([]uint8(nil), fp...)
					for i := nw; i < x.dev.Writes(); i++ {
						w = append(w, uint8(i))
					}
					for i := nf; i < x.dev.Flushes(); i++ {
						f = append(f, uint8(i))
					}
					return z(sys.applyNumbering(x, w, f))
				}
				require.Equal(t, succ(sys, st, ren), succ(sys, ren(st), z), "%s under %v at %v", f, m, st.op.pc)
			})
		}
	}
}

func perm8(rng *rand.Rand, n int) []uint8 {
	out := make([]uint8, n)
	for i, p := range rng.Perm(n) {
		out[i] = uint8(p)
	}
	return out
}

var durableAll = flag.Bool("durable.all", false, "TestDurableReductionsKeepVerdicts on every example file (minutes)")

// TestDurableReductionsKeepVerdicts: every example file gets the same
// verdict, under its models (SC, TSO and LKMM unless its Models: line
// says otherwise), with all reductions, without the
// symmetry and renumbering alone, and without any (explore's NoReduce:
// no chains of local steps, no dead registers). Without -durable.all
// only the files whose unreduced search is small run; with it, a search
// cut short by the state or memory bound is logged and not compared.
func TestDurableReductionsKeepVerdicts(t *testing.T) {
	examples, err := litmusvariants.Tree("../../examples/litmus")
	require.NoError(t, err)
	mine, err := filepath.Glob("testdata/durable/*.litmus")
	require.NoError(t, err)
	// Each example and variant by its test's name, each file of mine by
	// its own; the text to check.
	type file struct {
		name, path string
		src        []byte
	}
	var files []file
	for _, f := range examples {
		files = append(files, file{f.Name(), f.Label(), f.Text})
	}
	for _, path := range mine {
		src, err := os.ReadFile(path)
		require.NoError(t, err)
		files = append(files, file{strings.TrimSuffix(filepath.Base(path), ".litmus"), path, src})
	}
	quick := map[string]bool{"xfs-flushseq-mutant-read-before-writeback": true, "xfs-flushseq-mutant-ge": true, "xfs-flushseq-mutant-advance-on-failed-flush": true,
		"shared-block": true, "fua-write": true, "daemon-flusher": true, "wait-only-reader": true,
		"ext4-fsync-mutant-trust-committing": true, "ext4-fsync-journal-barrier": true,
		"async-bios": true, "async-bios-one-wait": true, "async-bios-sym-one-wait": true,
		"completion-mp": true, "completion-early": true, "completion-all": true, "completion-one-for-two": true,
		"cond-assign-crash-point": true}
	for _, f := range files {
		name, path := f.name, f.path
		if !quick[name] && !*durableAll {
			continue
		}
		t.Run(name, func(t *testing.T) {
			tt, err := litmus.Parse(path, f.src)
			require.NoError(t, err)
			d, err := Read(path, tt)
			require.NoError(t, err)
			for _, m := range d.Models {
				for _, dev := range d.Devices {
					cfg := Config{Model: m, Device: dev, Failures: d.Failures, Crash: d.Crash}
					// verdict is "" for a search cut short by the
					// bounds (-durable.all only: the quick files must
					// finish): nothing to compare.
					verdict := func(noSym, noReduce bool) string {
						sys, err := d.system(cfg)
						require.NoError(t, err)
						sys.noSym = noSym
						r := explore.Explore[State](sys, explore.Options{NoReduce: noReduce, Liveness: true, MaxStates: 30_000_000, MaxMemory: 6 << 30})
						if !r.Exhausted && r.Violation == nil {
							require.True(t, *durableAll, "%s: cut short", name)
							t.Logf("%v %v (symmetry off %v, reductions off %v): cut short at %d states, not compared", m, dev, noSym, noReduce, r.Len())
							return ""
						}
						if r.Violation != nil {
							return fmt.Sprintf("UNSAFE %v", r.Violation.Kind)
						}
						return "SAFE"
					}
					all := verdict(false, false)
					for _, off := range []struct {
						noSym, noReduce bool
						what            string
					}{{true, false, "without symmetry and renumbering"}, {false, true, "without reductions"}} {
						if v := verdict(off.noSym, off.noReduce); all != "" && v != "" {
							assert.Equal(t, all, v, "%s %v %v: %s", name, m, dev, off.what)
						}
					}
				}
			}
		})
	}
}

// TestDurableForget: forgetting what the contract can no longer use
// (normalizing it, dropping commands, keeping the values of dropped
// writes and the results of dropped commands a thread waits for)
// commutes with every step: forgetting after the step gives the same
// states whether or not the state before it was forgotten.
func TestDurableForget(t *testing.T) {
	for _, f := range symFiles {
		for _, m := range []memory.Model{memory.SC, memory.LKMM} {
			sys := durSys(t, f, m)
			z := dead(sys)
			fg := func(x State) State { return z(sys.forget(x)) }
			check := func(st State) {
				require.Equal(t, succ(sys, st, fg), succ(sys, sys.forget(st), fg), "%s under %v at %v", f, m, st.op.pc)
			}
			randomStates(sys, 80, 80, check)
			if strings.HasSuffix(f, "shared-block.litmus") { // small enough to visit every state
				everyState(t, sys, check)
			}
		}
	}
}

// TestDurableFiles: every file in testdata/durable, and the tutorial's
// ext4 files, gets the verdict its header expects under its models (SC,
// TSO and LKMM unless its Models: line says otherwise) on each of its
// devices, and each
// bad-*.litmus file is refused with an error naming the file, a line and
// a column (by the parser, the header reader or, for a run beyond the
// checker's bounds, the search).
func TestDurableFiles(t *testing.T) {
	files, err := filepath.Glob("testdata/durable/*.litmus")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	srcs := map[string][]byte{}
	for _, path := range files {
		src, err := os.ReadFile(path)
		require.NoError(t, err)
		srcs[path] = src
	}
	// The tutorial's files and variants (docs/own-patch.md) have no
	// built-in model to be held to (props' examples tests): their headers
	// are the check.
	ext4, err := litmusvariants.Dir("../../examples/litmus/ext4-fsync")
	require.NoError(t, err)
	require.NotEmpty(t, ext4)
	for _, f := range ext4 {
		files = append(files, f.Label())
		srcs[f.Label()] = f.Text
	}
	for _, path := range files {
		bad := strings.HasPrefix(filepath.Base(path), "bad-")
		tt, err := litmus.Parse(path, srcs[path])
		var d *Test
		if err == nil {
			d, err = Read(path, tt)
		}
		if err != nil {
			require.True(t, bad, "%s: %v", path, err)
			var pe *litmus.Error
			require.ErrorAs(t, err, &pe, path)
			assert.True(t, pe.Line >= 1 && pe.Col >= 1, "%s: %v", path, err)
			continue
		}
		for _, r := range d.Rows(nil, false) { // the header's Models, else SC, TSO, LKMM
			v, err := r.Check(explore.Options{MaxStates: 2_000_000, Liveness: true})
			if bad {
				require.Error(t, err, "%s: %s", path, r.Name())
				assert.Regexp(t, `^`+regexp.QuoteMeta(path)+`:\d+:\d+: `, err.Error())
				continue
			}
			require.NoError(t, err, "%s: %s", path, r.Name())
			assert.True(t, v.Expected(), "%s: %s is %s", path, r.Name(), v.Result())
		}
	}
}

// TestDurableAsyncSymmetry: the writers of async-bios-sym are found
// interchangeable (so the renaming tests above exercise several commands
// in flight per thread).
func TestDurableAsyncSymmetry(t *testing.T) {
	sys := durSys(t, "testdata/durable/async-bios-sym.litmus", memory.SC)
	require.Len(t, sys.sym, 1)
	assert.Equal(t, []int{0, 1}, sys.sym[0].members)
	assert.Len(t, sys.sym[0].handles, 2)
}

// TestDeadlockNamesWhereAndDaemons: a deadlock names where each stuck
// thread waits, and suggests Daemons: for one stuck in a loop (a server
// waiting for work) and for nothing else.
func TestDeadlockNamesWhereAndDaemons(t *testing.T) {
	src := `C server
(*
 * Crash: none
 * Device: no-cache
 *)
{}
P0(int *work)
{
	int e;
	e = submit_bio_wait(0, 1, 0);
	WRITE_ONCE(*work, 1);
}
P1(int *work)
{
	int e;
	while (1) {
		wait_event(wq, READ_ONCE(*work) == 1);
		WRITE_ONCE(*work, 0);
		e = blkdev_issue_flush(bdev);
	}
}
forall (work=0 \/ work=1)
`
	tt, err := litmus.Parse("server.litmus", []byte(src))
	require.NoError(t, err)
	d, err := Read("server.litmus", tt)
	require.NoError(t, err)
	r, err := d.Search(Config{Model: memory.SC, Device: d.Devices[0], Crash: d.Crash}, explore.Options{})
	require.NoError(t, err)
	require.NotNil(t, r.Violation)
	assert.Equal(t, explore.Deadlock, r.Violation.Kind)
	assert.Contains(t, r.Violation.Err.Error(), "P1 waits at line 17, wait_event(READ_ONCE(*work) == 1), in a loop: if P1 is a server that waits for work forever, say so in the header (Daemons: P1)")

	d.Daemons = 1 << 1
	r, err = d.Search(Config{Model: memory.SC, Device: d.Devices[0], Crash: d.Crash}, explore.Options{})
	require.NoError(t, err)
	assert.Nil(t, r.Violation, "with Daemons: P1 the server may wait forever")
}

// TestCondAssignCrashPoint: an assignment under an if to a register the
// final condition names is a step of its own, so a crash between the
// submission before it and the assignment is judged
// (testdata/durable/cond-assign-crash-point.litmus is UNSAFE on every
// row, at that crash). Under mutate.CondAssignLocal the assignment rides
// along with the submission and every row turns SAFE: the file catches
// the mutation.
func TestCondAssignCrashPoint(t *testing.T) {
	const path = "testdata/durable/cond-assign-crash-point.litmus"
	verdicts := func() []string {
		tt, err := litmus.ParseFile(path)
		require.NoError(t, err)
		d, err := Read(path, tt)
		require.NoError(t, err)
		var out []string
		for _, r := range d.Rows(nil, false) {
			v, err := r.Check(explore.Options{Liveness: true})
			require.NoError(t, err, r.Name())
			out = append(out, v.Word())
		}
		return out
	}
	for _, v := range verdicts() {
		require.Equal(t, "UNSAFE", v)
	}
	defer mutate.Set(t, mutate.CondAssignLocal)()
	for _, v := range verdicts() {
		assert.Equal(t, "SAFE", v, "under %v", mutate.CondAssignLocal)
	}
}

// TestDurableCompactSameAsWhole: the reduction tests' files under SC and
// LKMM, searched with the states collapsed (the default for State) and
// whole, sequentially and in parallel, are one search each: the same
// states in the same order, the same verdict and counterexample.
func TestDurableCompactSameAsWhole(t *testing.T) {
	for _, f := range symFiles {
		for _, m := range []memory.Model{memory.SC, memory.LKMM} {
			sys := durSys(t, f, m)
			exploretest.SameWithStores[State](t, sys, explore.Options{Liveness: true}, 64, fmt.Sprintf("%s under %v", f, m))
		}
	}
}
