package world

import (
	"fmt"

	"github.com/flushproof/flushproof/model/explore"
)

// Choices returns the choices of a counterexample of the search (as Path
// does for a state): what Replay and Script take.
func Choices(v *explore.Violation) []int {
	path := make([]int, len(v.Path))
	for i, st := range v.Path {
		path[i] = int(st.Label.ID)
	}
	return path
}

// eventText is an event for a timeline's column of actor.
func (w *World) eventText(ev Event, actor int) string {
	d := w.describe(ev)
	if ev.Task >= 0 && ev.Task != actor {
		return fmt.Sprintf("task %d: %s", ev.Task, d)
	}
	return d
}

// Replay runs the program with the given choices (Path) and returns the
// world, its trace recorded, and the run's violation if it has one: a
// task's Fail or Assert, or an obligation that a crash after the last
// step would break. It returns an error without a world if the choices do
// not fit the program.
func (s *Search) Replay(path []int) (w *World, err error) {
	w, err = New(s.cfg)
	if err != nil {
		return nil, err
	}
	defer w.close()
	w.srch = s
	w.start(s.prog(w))
	for k, c := range path {
		if w.fail != nil {
			return nil, fmt.Errorf("the run failed at step %d of %d: %w", k, len(path), w.fail)
		}
		acts := w.actions(nil)
		if c < 0 || c >= len(acts) {
			return nil, fmt.Errorf("step %d: choice %d of %d actions", k+1, c, len(acts))
		}
		w.step++
		w.perform(acts[c])
	}
	if w.fail == nil {
		w.checkObligations()
	}
	return w, w.fail
}

// Script is a Chooser that makes the given choices in order, a path of the
// search (Search.Path), and then stops the run: World.Run returns the run's
// violation if the path reaches one, else an error that the script ended.
type Script struct{ Choices []int }

// Choose implements Chooser.
func (sc *Script) Choose(acts []Action) int {
	if len(sc.Choices) == 0 {
		return -1
	}
	c := sc.Choices[0]
	sc.Choices = sc.Choices[1:]
	return c
}
