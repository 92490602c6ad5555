// Package mountinfo reads the kernel's mount table, /proc/PID/mountinfo
// (proc(5)), for the code that must know what is mounted where before it
// writes (hwbench's target checks) or what it must undo (crashlab's
// supervisor and start-up sweep).
package mountinfo

import (
	"errors"
	"os"
	"strconv"
	"strings"
)

// Mount is one line of mountinfo.
type Mount struct {
	ID           int    // the mount's id (field 1)
	Major, Minor uint32 // st_dev of the files on it (field 3); a FUSE mount's Minor is its connection number
	MountPoint   string // octal escapes undone
	FSType       string // e.g. "ext4", "tmpfs", "devtmpfs", "fuse.sshfs"
	Source       string // e.g. "/dev/vda1", "tmpfs", "none"; octal escapes undone
}

// IsFUSE reports whether the mount is a FUSE file system.
func (m Mount) IsFUSE() bool {
	return m.FSType == "fuse" || strings.HasPrefix(m.FSType, "fuse.")
}

// Parse reads the lines of a mountinfo file: "36 35 98:0 /mnt1 /mnt2
// rw,noatime master:1 - ext3 /dev/root rw,errors=continue". The optional
// fields end at "-", then come the file system type, the source and the
// super-block options. Lines that do not parse are skipped.
func Parse(data string) []Mount {
	var out []Mount
	for _, line := range strings.Split(data, "\n") {
		f := strings.Fields(line)
		if len(f) < 10 {
			continue
		}
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+2 >= len(f) {
			continue
		}
		id, err := strconv.Atoi(f[0])
		if err != nil {
			continue
		}
		majS, minS, ok := strings.Cut(f[2], ":")
		if !ok {
			continue
		}
		maj, err1 := strconv.ParseUint(majS, 10, 32)
		mnr, err2 := strconv.ParseUint(minS, 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		out = append(out, Mount{
			ID: id, Major: uint32(maj), Minor: uint32(mnr),
			MountPoint: Unescape(f[4]),
			FSType:     f[sep+1],
			Source:     Unescape(f[sep+2]),
		})
	}
	return out
}

// Read parses this process's mount table, /proc/self/mountinfo.
func Read() ([]Mount, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	m := Parse(string(data))
	if len(m) == 0 {
		return nil, errors.New("/proc/self/mountinfo: no mount parsed")
	}
	return m, nil
}

// Unescape undoes the octal escapes (\040 for a space, \011, \012, \134)
// with which the kernel writes paths in mountinfo, /proc/mounts and
// /proc/swaps (fs/proc_namespace.c, mangle()).
func Unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
