package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
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

// parseFlagsFiles is parseFlags for a command that also takes FILE
// arguments, among its flags in any order; it returns them.
func parseFlagsFiles(fs *flag.FlagSet, args []string) ([]string, int) {
	var files []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, exitOK
			}
			return nil, exitUsage
		}
		if fs.NArg() == 0 {
			return files, -1
		}
		rest := fs.Args()
		if rest[0] == "--" {
			return append(files, rest[1:]...), -1
		}
		files = append(files, rest[0])
		args = rest[1:]
	}
}
