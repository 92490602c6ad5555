package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"time"
)

// parseFlags parses args into fs and checks that nothing is left over. It
// returns -1 to go on, or the exit status: 0 for -h (fs.Usage was printed),
// 2 for a bad flag (the flag package said what is wrong) or an argument.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) int {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "flushproof %s: unexpected arguments %q (it takes flags only)\n", fs.Name(), fs.Args())
		return exitUsage
	}
	return -1
}

// intIn checks that -name is an integer from lo to hi.
func intIn(name string, v, lo, hi int) error {
	if v < lo || v > hi {
		return fmt.Errorf("-%s must be an integer from %d to %d, got %d", name, lo, hi, v)
	}
	return nil
}

// durationIn checks that -name is a duration in (lo, hi], or [lo, hi]
// when closed.
func durationIn(name string, v, lo, hi time.Duration, closed bool) error {
	if v < lo || v > hi || !closed && v == lo {
		open := "("
		if closed {
			open = "["
		}
		return fmt.Errorf("-%s must be a duration in %s%v, %v], got %v", name, open, lo, hi, v)
	}
	return nil
}

// fractionIn checks that -name is a finite number from 0 to 1.
func fractionIn(name string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > 1 {
		return fmt.Errorf("-%s must be a number from 0 to 1, got %v", name, v)
	}
	return nil
}

// usageError prints the first of errs as a usage error of command cmd and
// returns 2, or returns -1 if there is none.
func usageError(stderr io.Writer, cmd string, errs ...error) int {
	for _, err := range errs {
		if err != nil {
			fmt.Fprintf(stderr, "flushproof %s: %v\n", cmd, err)
			return exitUsage
		}
	}
	return -1
}

// jsonLines writes one JSON object per line (JSON Lines), with <, > and &
// as they are (counterexamples and variant names contain them).
func jsonLines(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc
}
