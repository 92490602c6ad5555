//go:build linux

package crashlab

// Loop devices, through losetup(8): the recorder attaches one over the
// FUSE image and detaches it again, and touches no other loop device.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// loopDetachWait bounds how long detachLoop waits for the kernel to let go
// of the backing file. LOOP_CLR_FD on a device someone still holds open
// only sets autoclear (drivers/block/loop.c, loop_clr_fd), and the detach
// happens at the last close.
const loopDetachWait = 5 * time.Second

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
// if it is detached.
func loopBackingFile(dev string) string {
	b, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(dev), "loop", "backing_file"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
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

// detachLoop detaches dev if it is still attached to backing, and waits
// until the kernel has let go of backing. It never detaches a device that
// is attached to another file (the number may have been reused).
func detachLoop(dev, backing string) error {
	if got := loopBackingFile(dev); got == "" {
		return nil
	} else if got != backing {
		return fmt.Errorf("detach %s: attached to %s, not to our %s; left alone", dev, got, backing)
	}
	losetup, err := exec.LookPath("losetup")
	if err != nil {
		return fmt.Errorf("detach %s: %w", dev, err)
	}
	if out, err := combinedOutput(command(context.Background(), losetup, "-d", dev)); err != nil {
		return fmt.Errorf("detach %s (losetup -d): %w: %s", dev, err, strings.TrimSpace(string(out)))
	}
	deadline := time.Now().Add(loopDetachWait)
	for loopBackingFile(dev) == backing {
		if time.Now().After(deadline) {
			return fmt.Errorf("detach %s: still attached to %s after %v (is it open or mounted?)",
				dev, backing, loopDetachWait)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}
