package crashlab

// The pre-flight check: everything a lab run needs from the machine,
// checked before anything is created, and reported in one message.

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
)

// Tool is an external command crashlab runs.
type Tool struct {
	Name    string // the command, looked up in $PATH
	Package string // the Debian package that provides it
	// Replay says that Replay runs it; the others only recording does.
	Replay bool
}

// Tools returns every command a lab run on fs runs: mkfs while recording,
// mount and umount for the recorder and for each replay, and the file
// system's fsck for each replay. Loop devices are attached and detached
// with the loop driver's ioctls (internal/loopdev), by no command.
func Tools(fs FS) []Tool {
	tools := []Tool{
		{Name: "mount", Package: "mount", Replay: true},
		{Name: "umount", Package: "mount", Replay: true},
	}
	switch fs {
	case Ext4:
		tools = append(tools, Tool{Name: "mkfs.ext4", Package: "e2fsprogs"}, Tool{Name: "e2fsck", Package: "e2fsprogs", Replay: true})
	case XFS:
		tools = append(tools, Tool{Name: "mkfs.xfs", Package: "xfsprogs"}, Tool{Name: "xfs_repair", Package: "xfsprogs", Replay: true})
	}
	return tools
}

// PreflightError lists everything that keeps a lab run (or a replay) from
// running here, all at once.
type PreflightError struct {
	FS       FS
	Problems []string // not root, a missing device node
	Missing  []Tool   // commands not found in $PATH
}

func (e *PreflightError) Error() string {
	var parts []string
	parts = append(parts, e.Problems...)
	if len(e.Missing) > 0 {
		var names, pkgs []string
		for _, t := range e.Missing {
			names = append(names, fmt.Sprintf("%s (Debian package %s)", t.Name, t.Package))
			if !slices.Contains(pkgs, t.Package) {
				pkgs = append(pkgs, t.Package)
			}
		}
		parts = append(parts, fmt.Sprintf("missing tools: %s; install them with: apt-get install %s (PATH is %s)",
			strings.Join(names, ", "), strings.Join(pkgs, " "), os.Getenv("PATH")))
	}
	return fmt.Sprintf("cannot run the %s crash lab here: %s", e.FS, strings.Join(parts, "; "))
}

// Preflight checks that RunLab can run on fs here: root, /dev/fuse,
// /dev/loop-control and every tool of Tools(fs). It creates nothing. The
// error is a *PreflightError naming every problem.
func Preflight(fs FS) error { return preflight(fs, true) }

// preflight checks what a lab run needs (record) or what Replay alone
// needs.
func preflight(fs FS, record bool) error {
	e := &PreflightError{FS: fs}
	if os.Geteuid() != 0 {
		e.Problems = append(e.Problems, "not root (a FUSE mount, loop devices and mount need root)")
	}
	if record {
		if _, err := os.Stat("/dev/fuse"); err != nil {
			e.Problems = append(e.Problems, fmt.Sprintf("no FUSE (%v; try modprobe fuse)", err))
		}
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		e.Problems = append(e.Problems, fmt.Sprintf("no loop devices (%v; try modprobe loop)", err))
	}
	for _, t := range Tools(fs) {
		if !record && !t.Replay {
			continue
		}
		if _, err := exec.LookPath(t.Name); err != nil {
			e.Missing = append(e.Missing, t)
		}
	}
	if len(e.Problems) == 0 && len(e.Missing) == 0 {
		return nil
	}
	return e
}
