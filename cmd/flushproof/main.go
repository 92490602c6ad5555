// Command flushproof checks durability protocols against an executable
// semantics of block devices with volatile write caches.
//
//	flushproof check [flags]       print the verdict table of every model
//	flushproof skipshare [flags]   fsyncs that skip their flush, under a latency model
//	flushproof cost [flags]        what each variant of the seed protocols costs
//	flushproof crashlab [flags]    record fsync writers on a real file system, replay crash states
//
// See README.md and docs/ for what each verdict means.
package main

import (
	"fmt"
	"io"
	"os"
)

const usage = `usage: flushproof <command> [flags]

commands:
  check      explore every model exhaustively at its bound and print the verdict table
             (SAFE with the bound and statistics, UNSAFE with the shortest counterexample)
  skipshare  run the xfs flush-sequence model under a latency model and count the
             fsyncs that skip their flush
  cost       the cost tables of the seed protocols, counted from the models: device
             commands per O_DSYNC write(), counter updates per direct I/O, io-wq lock waits
  crashlab   record fsync writers on ext4 or xfs through a FUSE + loop recorder and check
             every acknowledged record in the crash states the log allows (root)

run "flushproof <command> -h" for the flags of a command; docs/cli.md describes
the flags, the exit statuses and the -json output of every command
`

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run is main without the process: it returns the exit status (0 all as
// expected, 1 a result not as expected, 2 bad usage, 3 a failed run, 4
// incomplete, 130/143 interrupted; the constants in signals.go).
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "check":
		return runCheck(args[1:], stdout, stderr)
	case "skipshare":
		return runSkipShare(args[1:], stdout, stderr)
	case "cost":
		return runCost(args[1:], stdout, stderr)
	case "crashlab":
		return runCrashlab(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "flushproof: unknown command %q\n\n%s", args[0], usage)
	return exitUsage
}
