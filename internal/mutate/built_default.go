//go:build !mutants

package mutate

// Built reports whether the mutations are built in (the build tag
// mutants).
const Built = false

// On reports whether mutation m is switched on: never, without the build
// tag mutants, so that every guarded branch is dead code.
func On(Mutation) bool { return false }

// Active returns the mutation switched on: None.
func Active() Mutation { return None }

// Set skips t: the mutations are not built in. The test that asks for
// one runs with go test -tags mutants.
func Set(t TB, m Mutation) (restore func()) {
	t.Helper()
	t.Skipf("the mutation %v is built in only with the build tag mutants (go test -tags mutants)", m)
	return func() {}
}
