// Package flagcheck checks flag values and says what is wrong in the words
// every flushproof command uses: the flag's name and the allowed range.
//
//   - [IntIn], [DurationIn], [FractionIn]: one value against its range.
//   - [First]: the first error of a list, nil if there is none.
package flagcheck

import (
	"fmt"
	"math"
	"time"
)

// IntIn checks that -name is an integer from lo to hi.
func IntIn(name string, v, lo, hi int) error {
	if v < lo || v > hi {
		return fmt.Errorf("-%s must be an integer from %d to %d, got %d", name, lo, hi, v)
	}
	return nil
}

// DurationIn checks that -name is a duration in (lo, hi], or [lo, hi] when
// closed.
func DurationIn(name string, v, lo, hi time.Duration, closed bool) error {
	if v < lo || v > hi || !closed && v == lo {
		open := "("
		if closed {
			open = "["
		}
		return fmt.Errorf("-%s must be a duration in %s%v, %v], got %v", name, open, lo, hi, v)
	}
	return nil
}

// FractionIn checks that -name is a finite number from 0 to 1.
func FractionIn(name string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > 1 {
		return fmt.Errorf("-%s must be a number from 0 to 1, got %v", name, v)
	}
	return nil
}

// First returns the first non-nil error of errs, or nil.
func First(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
