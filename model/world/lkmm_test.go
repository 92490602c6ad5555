package world

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/memory"
)

// TestWorldLKMM: under LKMM the world offers, as steps of their own, the
// barrier after a task's fully ordered RMW taking effect, and every place
// a plain store may take in modification order; a store that follows an
// unfenced load of another word fails the run with memory.ErrUnordered,
// never a wrong answer.
func TestWorldLKMM(t *testing.T) {
	t.Run("barrier and places", func(t *testing.T) {
		w, err := New(Config{Memory: memory.LKMM, Tasks: 2, Words: 1})
		require.NoError(t, err)
		var barriers, places int
		ch := chooseFunc(func(acts []Action) int {
			for i, a := range acts {
				if a.Kind == ActBarrier {
					barriers++
					return i
				}
			}
			for i, a := range acts {
				if a.Kind == ActStore && a.Arg > 0 {
					places++
					return i
				}
			}
			return 0
		})
		_, err = w.Run(ch, func(tk *Task) {
			x := tk.Word(0)
			if tk.ID() == 0 {
				x.IncReturn()
				x.Store(5)
				return
			}
			x.Store(7)
		})
		require.NoError(t, err)
		assert.Positive(t, barriers, "no barrier took effect as a step")
		assert.Positive(t, places, "no store was placed before a newer one")
		assert.Contains(t, w.Format(0), "the barrier after task 0's read-modify-write takes effect")
	})
	t.Run("refused", func(t *testing.T) {
		w, err := New(Config{Memory: memory.LKMM, Tasks: 1, Words: 2})
		require.NoError(t, err)
		_, err = w.Run(NewRandomChooser(1), func(tk *Task) {
			tk.Word(0).Load()
			tk.Word(1).Store(1)
		})
		require.Error(t, err)
		assert.True(t, errors.Is(err, memory.ErrUnordered), "%v", err)
	})
}

type chooseFunc func([]Action) int

func (f chooseFunc) Choose(acts []Action) int { return f(acts) }
