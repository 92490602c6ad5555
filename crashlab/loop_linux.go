//go:build linux

package crashlab

// Loop devices: attached through losetup(8) (the recorder over its FUSE
// image, replay over each state's image), detached by undo (undo_linux.go)
// with LOOP_CLR_FD, only when attached to a file of the run.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// attachLoop attaches a free loop device to path with direct I/O on and
// returns its name (/dev/loopN).
func attachLoop(path string, directIO bool) (string, error) {
	losetup, err := exec.LookPath("losetup")
	if err != nil {
		return "", fmt.Errorf("attach a loop device to %s: %w", path, err)
	}
	args := []string{"--find", "--show", path}
	if directIO {
		args = []string{"--find", "--show", "--direct-io=on", path}
	}
	out, err := combinedOutput(command(context.Background(), losetup, args...))
	if err != nil {
		return "", fmt.Errorf("attach a loop device to %s (losetup %s): %w: %s", path, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	dev := strings.TrimSpace(string(out))
	if !strings.HasPrefix(dev, "/dev/loop") || strings.ContainsAny(dev, " \n") {
		// Nothing to detach safely: we do not know which device it is.
		return "", fmt.Errorf("attach a loop device to %s: losetup printed %q, not a loop device", path, out)
	}
	return dev, nil
}

// loopBackingFile is the file the loop device dev is attached to, or ""
// if it is detached. A file since removed is named by the path it had
// (sysfs adds " (deleted)", dropped here).
func loopBackingFile(dev string) string {
	b, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(dev), "loop", "backing_file"))
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(strings.TrimSpace(string(b)), " (deleted)")
}

// loopDirectIO reports the loop device's loop/dio attribute ("1" when it
// does direct I/O to its backing file).
func loopDirectIO(dev string) string {
	b, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(dev), "loop", "dio"))
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}
