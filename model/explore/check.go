package explore

import "fmt"

// LabelsDetermine explores sys (up to its first violation, if any) and
// checks that in every reachable state one label leads to one state.
// Counterexample paths are lists of labels that Replay follows again, so a
// label must say everything a step chose: which store a load read, which
// task it waits for. A protocol's tests call it on a small instance. It
// looks at the states as Next yields them (Options.NoReduce).
func LabelsDetermine[S comparable](sys System[S]) error {
	r := Explore[S](sys, Options{NoReduce: true})
	for i := 0; i < r.Len(); i++ {
		seen := map[Label]S{}
		var err error
		sys.Next(r.State(i), func(l Label, n S) {
			if prev, ok := seen[l]; ok && prev != n && err == nil {
				err = fmt.Errorf("label %q leads to two different states", sys.Describe(l))
			}
			seen[l] = n
		})
		if err != nil {
			return err
		}
	}
	return nil
}
