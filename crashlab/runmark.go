//go:build linux

package crashlab

// Run markers. Everything crashlab creates outside the user's own files
// (directories under the temporary directory and /dev/shm, the mount
// points and loop devices inside them, the FUSE mount's source name)
// carries the marker of the run that made it:
//
//	flushproof-crashlab-<worker pid>-<worker start>-<supervisor pid>-<supervisor start>
//
// followed, for a directory, by "-" and a random suffix. A run is the life
// of one worker process (the program that records and replays) together
// with the supervisor process it started (supervisor.go). A start time is
// field 22 of /proc/PID/stat (clock ticks after boot), so a pid the kernel
// has since given to another process is not mistaken for the run's. A
// run whose worker and supervisor are both gone is dead, and its leftovers
// may be swept (sweep.go); anything of a run with either process alive,
// and anything without a well-formed marker, is never touched.

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// markerPrefix starts every marker.
const markerPrefix = "flushproof-crashlab-"

// proc names one process over time: its pid and its start time.
type proc struct {
	pid   int
	start uint64
}

// procStat reads the state (field 3) and start time (field 22) of process
// pid from /proc/PID/stat.
func procStat(pid int) (state byte, start uint64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces
	// and parentheses itself: the fields that follow start after the last
	// ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 > len(b) {
		return 0, 0, fmt.Errorf("parse /proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+2:]))
	if len(f) < 20 || len(f[0]) != 1 {
		return 0, 0, fmt.Errorf("parse /proc/%d/stat: %d fields after the command name", pid, len(f))
	}
	start, err = strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("parse /proc/%d/stat: start time: %w", pid, err)
	}
	return f[0][0], start, nil
}

// self is this process.
func self() (proc, error) {
	pid := os.Getpid()
	_, start, err := procStat(pid)
	if err != nil {
		return proc{}, fmt.Errorf("identify this process: %w", err)
	}
	return proc{pid, start}, nil
}

// alive reports whether p is still running: its pid exists, started at
// p's start time, and is not a zombie (a zombie has no threads left: all
// its I/O has ended and its files are closed).
func (p proc) alive() bool {
	state, start, err := procStat(p.pid)
	return err == nil && start == p.start && state != 'Z' && state != 'X'
}

func (p proc) String() string { return fmt.Sprintf("%d-%d", p.pid, p.start) }

// parseProc parses what proc.String prints.
func parseProc(s string) (proc, bool) {
	pid, start, ok := strings.Cut(s, "-")
	if !ok {
		return proc{}, false
	}
	n, err1 := strconv.Atoi(pid)
	t, err2 := strconv.ParseUint(start, 10, 64)
	if err1 != nil || err2 != nil || n <= 0 {
		return proc{}, false
	}
	return proc{n, t}, true
}

// runID names a run by its two processes.
type runID struct {
	worker, supervisor proc
}

// marker is the run's marker, the prefix of each of its directories'
// names and its FUSE mount's source.
func (r runID) marker() string {
	return markerPrefix + r.worker.String() + "-" + r.supervisor.String()
}

// dead reports whether both of the run's processes are gone.
func (r runID) dead() bool { return !r.worker.alive() && !r.supervisor.alive() }

// parseMarker reads the run from a path component that is a marker, or a
// marker followed by "-" and a suffix without "-" or "/" (a directory
// name). Anything else is not ours.
func parseMarker(name string) (runID, bool) {
	rest, ok := strings.CutPrefix(name, markerPrefix)
	if !ok {
		return runID{}, false
	}
	f := strings.Split(rest, "-")
	if len(f) != 4 && len(f) != 5 {
		return runID{}, false
	}
	var n [4]uint64
	for i := range n {
		v, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil || (i%2 == 0 && (v == 0 || v > 1<<22)) {
			// pids are at most 2^22 (include/linux/threads.h, PID_MAX_LIMIT)
			return runID{}, false
		}
		n[i] = v
	}
	if len(f) == 5 && (f[4] == "" || strings.Contains(f[4], "/")) {
		return runID{}, false
	}
	return runID{proc{int(n[0]), n[1]}, proc{int(n[2]), n[3]}}, true
}

// markersIn returns the runs named by the components of path.
func markersIn(path string) []runID {
	var out []runID
	for _, c := range strings.Split(path, "/") {
		if r, ok := parseMarker(c); ok {
			out = append(out, r)
		}
	}
	return out
}
