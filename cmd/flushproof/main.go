// Command flushproof checks durability protocols against an executable
// semantics of block devices with volatile write caches.
//
//	flushproof check [flags]       print the verdict table of every model
//	flushproof cost [flags]        what each variant of each protocol costs
//	flushproof skipshare [flags]   cost -protocol xfs-flushseq: fsyncs that share a flush
//	flushproof crashlab [flags]    record fsync writers on a real file system, replay crash states
//	flushproof litmus [flags] FILE...  herd7 C litmus files under each memory model
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
  cost       the cost tables of the protocols, computed from the models: fsyncs that
             share a flush (xfs flush sequence), device commands per O_DSYNC write(),
             io-wq lock waits, counter updates per direct I/O
  skipshare  cost -protocol xfs-flushseq: the flush-sequence code under a latency model
  crashlab   record fsync writers on ext4 or xfs through a FUSE + loop recorder and check
             every acknowledged record in the crash states the log allows (root)
  litmus     run herd7 C litmus files under each memory model: outcomes, herd7's answer,
             a witness timeline; -expect compares with the files' Result: lines

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
		return runCost("skipshare", "xfs-flushseq", args[1:], stdout, stderr)
	case "cost":
		return runCost("cost", "", args[1:], stdout, stderr)
	case "crashlab":
		return runCrashlab(args[1:], stdout, stderr)
	case "litmus":
		return runLitmus(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "flushproof: unknown command %q\n\n%s", args[0], usage)
	return exitUsage
}
