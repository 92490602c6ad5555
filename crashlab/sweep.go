//go:build linux

package crashlab

// The start-up sweep. A run's supervisor undoes the run when its worker
// dies (supervisor.go); when the supervisor was killed too, the kernel
// aborted the run's FUSE connection (its last /dev/fuse descriptor
// closed), so nothing waits on it, but mounts, loop devices and
// directories remain. The next run sweeps them: everything that carries
// the marker of a dead run (runmark.go), and nothing else.

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/flushproof/flushproof/internal/loopdev"
	"github.com/flushproof/flushproof/internal/mountinfo"
)

// sweepRoots are the directories whose entries the sweep checks for dead
// runs' directories: the temporary directory, /dev/shm, and the extra
// ones given (a Dir option), without duplicates.
func sweepRoots(extra ...string) []string {
	var roots []string
	seen := map[string]bool{}
	for _, d := range append([]string{os.TempDir(), "/dev/shm"}, extra...) {
		if d == "" {
			continue
		}
		if r, err := filepath.EvalSymlinks(d); err == nil {
			d = r
		}
		if !seen[d] {
			seen[d] = true
			roots = append(roots, d)
		}
	}
	return roots
}

// sweep undoes the leftovers of dead runs: mounts and loop devices whose
// path lies in a directory named by a dead run's marker, FUSE mounts named
// by one, and such directories in roots or holding such a mount or loop
// device's backing file. It reports one line per thing undone.
func sweep(roots []string, report func(string)) error {
	return sweepRuns(roots, report, runID.dead)
}

// sweepRuns is sweep with dead deciding which runs are dead.
func sweepRuns(roots []string, report func(string), dead func(runID) bool) error {
	deadRuns := map[runID]bool{}
	isDead := func(r runID) bool {
		d, ok := deadRuns[r]
		if !ok {
			d = dead(r)
			deadRuns[r] = d
		}
		return d
	}
	// deadDir returns the directory of a dead run that path lies in.
	deadDir := func(path string) (string, bool) {
		c := strings.Split(path, "/")
		for i := range c {
			if r, ok := parseMarker(c[i]); ok && isDead(r) {
				return strings.Join(c[:i+1], "/"), true
			}
		}
		return "", false
	}
	owns := func(path string) bool {
		_, ok := deadDir(path)
		return ok
	}

	var dirs []string
	seen := map[string]bool{}
	addDir := func(path string) {
		if d, ok := deadDir(path); ok && filepath.IsAbs(d) && !seen[d] {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	for _, root := range roots {
		entries, _ := os.ReadDir(root)
		for _, e := range entries {
			if e.IsDir() {
				addDir(filepath.Join(root, e.Name()))
			}
		}
	}
	mounts, err := mountinfo.Read()
	if err != nil {
		return fmt.Errorf("sweep leftovers of earlier runs: %w", err)
	}
	found := false
	loops := loopdev.List()
	for _, l := range loops {
		if owns(l.Backing) {
			found = true
			addDir(l.Backing)
		}
	}
	for _, m := range mounts {
		if owns(m.MountPoint) || owns(m.Source) {
			found = true
			addDir(m.MountPoint)
		}
	}
	if !found && len(dirs) == 0 {
		return nil
	}
	sort.Strings(dirs)
	say := func(s string) {
		if report != nil {
			report("swept a dead run's leftover: " + s)
		}
	}
	if err := undo(scope{owns: owns, dirs: dirs, report: say}); err != nil {
		return fmt.Errorf("sweep leftovers of earlier runs: %w", err)
	}
	return nil
}

// Leftovers lists, one line each, what still exists of the crashlab runs
// whose worker was process pid: their mounts, attached loop devices, FUSE
// connections, directories (in the temporary directory, /dev/shm and
// dirs), and supervisor processes still running. It is empty once such a
// run ended, or within a few seconds of its worker's death (its
// supervisor undoes it), or after the next run's start-up sweep if the
// supervisor was killed too. Tests check it after killing a worker; it
// also answers "did that run leave anything?" by hand.
func Leftovers(pid int, dirs ...string) []string {
	rm := runRemains(pid, dirs...)
	var out []string
	for _, l := range rm.loops {
		out = append(out, fmt.Sprintf("loop device %s over %s", l.Dev, l.Backing))
	}
	for _, m := range rm.mounts {
		out = append(out, fmt.Sprintf("%s mount of %s on %s", m.FSType, m.Source, m.MountPoint))
		if m.IsFUSE() {
			out = append(out, fmt.Sprintf("FUSE connection %d (%s)", m.Minor, m.MountPoint))
		}
	}
	for _, d := range rm.dirs {
		out = append(out, "directory "+d)
	}
	for _, sp := range rm.supervisors {
		out = append(out, fmt.Sprintf("supervisor process %d", sp))
	}
	return append(out, rm.errs...)
}

// remains are the resources of the runs of one worker process.
type remains struct {
	loops       []loopdev.Loop
	mounts      []mountinfo.Mount
	dirs        []string
	supervisors []int
	errs        []string
}

func (rm remains) empty() bool {
	return len(rm.loops)+len(rm.mounts)+len(rm.dirs)+len(rm.supervisors)+len(rm.errs) == 0
}

// runRemains finds what exists of the runs whose worker was pid.
func runRemains(pid int, dirs ...string) remains {
	ofPid := func(path string) bool {
		for _, r := range markersIn(path) {
			if r.worker.pid == pid {
				return true
			}
		}
		return false
	}
	var rm remains
	for _, l := range loopdev.List() {
		if ofPid(l.Backing) {
			rm.loops = append(rm.loops, l)
		}
	}
	mounts, err := mountinfo.Read()
	if err != nil {
		rm.errs = append(rm.errs, err.Error())
	}
	for _, m := range mounts {
		if ofPid(m.MountPoint) || ofPid(m.Source) {
			rm.mounts = append(rm.mounts, m)
		}
	}
	for _, root := range sweepRoots(dirs...) {
		entries, _ := os.ReadDir(root)
		for _, e := range entries {
			if ofPid(e.Name()) {
				rm.dirs = append(rm.dirs, filepath.Join(root, e.Name()))
			}
		}
	}
	rm.supervisors = supervisorsOf(pid)
	return rm
}

// supervisorsOf returns the running supervisor processes whose worker was
// pid, found by their command line (supervisor.go).
func supervisorsOf(pid int) []int {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var out []int
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) < 2 || args[0] != supervisorArg0 {
			continue
		}
		w, ok := parseProc(args[1])
		if !ok || w.pid != pid {
			continue
		}
		var sp int
		if _, err := fmt.Sscanf(filepath.Base(filepath.Dir(p)), "%d", &sp); err == nil {
			out = append(out, sp)
		}
	}
	return out
}
