package explore

import (
	"fmt"
	"reflect"
	"slices"
)

// Diff reports the first way in which r and o, two searches of one system,
// differ: statistics, whether the space was exhausted, the numbering of the
// states, the transition that found each one first, and the violation with
// its path. nil means they are the same search, which is what a parallel
// search must give whatever Options.Workers says (elapsed time aside).
func (r *Result[S]) Diff(o *Result[S]) error {
	switch {
	case r.States != o.States:
		return fmt.Errorf("states: %d vs %d", r.States, o.States)
	case r.Transitions != o.Transitions:
		return fmt.Errorf("transitions: %d vs %d", r.Transitions, o.Transitions)
	case r.MaxDepth != o.MaxDepth:
		return fmt.Errorf("depth: %d vs %d", r.MaxDepth, o.MaxDepth)
	case r.Exhausted != o.Exhausted:
		return fmt.Errorf("exhausted: %v vs %v", r.Exhausted, o.Exhausted)
	case r.Stopped != o.Stopped:
		return fmt.Errorf("stopped: %q vs %q", r.Stopped, o.Stopped)
	case r.Len() != o.Len():
		return fmt.Errorf("states kept: %d vs %d", r.Len(), o.Len())
	case !sameValues(&r.parent, &o.parent):
		return fmt.Errorf("the parents of the states differ")
	case !r.label.same(&o.label):
		return fmt.Errorf("the labels of the states differ")
	}
	for i := 0; i < r.Len(); i++ {
		if r.State(i) != o.State(i) {
			return fmt.Errorf("state %d differs: %v vs %v", i, r.State(i), o.State(i))
		}
	}
	a, b := r.Violation, o.Violation
	switch {
	case (a == nil) != (b == nil):
		return fmt.Errorf("violation: %v vs %v", a, b)
	case a == nil:
		return nil
	case a.Kind != b.Kind || a.Err.Error() != b.Err.Error():
		return fmt.Errorf("violation: %v vs %v", a, b)
	case !slices.EqualFunc(a.Path, b.Path, func(x, y Step) bool {
		return x.Actor == y.Actor && x.Text == y.Text && x.Label == y.Label && reflect.DeepEqual(x.Facts, y.Facts)
	}):
		return fmt.Errorf("the counterexamples differ:\n%s\nvs\n%s", a.Timeline(), b.Timeline())
	}
	return nil
}
