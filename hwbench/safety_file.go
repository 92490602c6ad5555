// Who uses a regular file the user named, so that hwbench never writes to
// one the kernel or another process depends on: a loop device's backing
// file, an active swap file, the source of a mounted file system, a file
// another process has mapped or holds open for writing. Files are compared
// by device and inode number, not by name, so a hard link, a bind mount or
// a renamed file is recognised as the same file. Everything here reads
// sysfs and /proc; nothing is opened for writing.

package hwbench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/flushproof/flushproof/internal/loopdev"
	"github.com/flushproof/flushproof/internal/mountinfo"
)

// fileID is a file's identity: the device and inode number stat(2) gives.
type fileID struct {
	Major, Minor uint32
	Ino          uint64
}

func idOf(st *unix.Stat_t) fileID {
	return fileID{Major: unix.Major(st.Dev), Minor: unix.Minor(st.Dev), Ino: st.Ino}
}

// deletedSuffix is what d_path appends to the name of an unlinked file
// (fs/d_path.c), in backing_file, /proc/swaps, maps and fd links.
const deletedSuffix = " (deleted)"

func stripDeleted(p string) (string, bool) {
	s, ok := strings.CutSuffix(p, deletedSuffix)
	return s, ok
}

// fdInfo is what /proc/PID/fdinfo/FD says about an open file
// (Documentation/filesystems/proc.rst, "fdinfo").
type fdInfo struct {
	Flags  int    // open flags, written in octal
	Ino    uint64 // the open file's inode number (Linux 5.14 and later)
	HasIno bool
	MntID  int // the id of the mount the file was opened on (Linux 3.15 and later)
	HasMnt bool
}

// parseFdinfo reads the "name:\tvalue" lines of an fdinfo file.
func parseFdinfo(data string) (fdInfo, error) {
	var fi fdInfo
	hasFlags := false
	for _, line := range strings.Split(data, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch k {
		case "flags":
			n, err := strconv.ParseUint(v, 8, 32)
			if err != nil {
				return fi, fmt.Errorf("fdinfo flags %q: %w", v, err)
			}
			fi.Flags, hasFlags = int(n), true
		case "ino":
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return fi, fmt.Errorf("fdinfo ino %q: %w", v, err)
			}
			fi.Ino, fi.HasIno = n, true
		case "mnt_id":
			n, err := strconv.Atoi(v)
			if err != nil {
				return fi, fmt.Errorf("fdinfo mnt_id %q: %w", v, err)
			}
			fi.MntID, fi.HasMnt = n, true
		}
	}
	if !hasFlags {
		return fi, errors.New("fdinfo has no flags line")
	}
	return fi, nil
}

// writable reports whether the flags open the file for writing: an access
// mode of O_WRONLY or O_RDWR (an O_PATH descriptor has neither).
func (fi fdInfo) writable() bool {
	if fi.Flags&unix.O_PATH != 0 {
		return false
	}
	acc := fi.Flags & unix.O_ACCMODE
	return acc == unix.O_WRONLY || acc == unix.O_RDWR
}

// mapping is a file mapped into a process, from a line of /proc/PID/maps:
// "7f2c4a1d5000-7f2c4a1f7000 r--p 00000000 08:01 1836 /usr/lib/libc.so.6"
// (proc(5): address, permissions, offset, device in hex, inode, path).
type mapping struct {
	Major, Minor uint32
	Ino          uint64
	Path         string // may end in " (deleted)"; may contain spaces
}

// parseMaps returns the file mappings of a maps file (inode not 0).
func parseMaps(data string) []mapping {
	var out []mapping
	for _, line := range strings.Split(data, "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		ino, err := strconv.ParseUint(f[4], 10, 64)
		if err != nil || ino == 0 {
			continue
		}
		maj, mnr, ok := parseMajorMinor(f[3], 16)
		if !ok {
			continue
		}
		m := mapping{Major: maj, Minor: mnr, Ino: ino}
		if len(f) > 5 {
			// The path is the rest of the line after the inode and its
			// padding, spaces included.
			rest := line
			for i := 0; i < 5; i++ {
				rest = strings.TrimLeft(rest, " \t")
				rest = rest[strings.IndexAny(rest, " \t"):] // found: len(f) > 5
			}
			m.Path = strings.TrimLeft(rest, " \t")
		}
		out = append(out, m)
	}
	return out
}

// swapArea is a line of /proc/swaps.
type swapArea struct {
	Path string // octal escapes undone; may end in " (deleted)"
	Type string // "file" or "partition"
}

// parseSwaps reads /proc/swaps: a header line, then "Filename Type Size
// Used Priority" per active area; mm/swapfile.c (swap_show) escapes space,
// tab, newline and backslash in the name as octal.
func parseSwaps(data string) []swapArea {
	var out []swapArea
	for i, line := range strings.Split(data, "\n") {
		f := strings.Fields(line)
		if i == 0 || len(f) < 2 {
			continue
		}
		out = append(out, swapArea{Path: mountinfo.Unescape(f[0]), Type: f[1]})
	}
	return out
}

// fileUse is what uses a regular file, as far as this process can see.
type fileUse struct {
	why   []string // each a reason the file is in use
	notes []string // what could not be checked, and why
}

// maxUsers is how many processes a refusal names before "and N more".
const maxUsers = 5

// fileInUse looks for every use of the regular file at path (absolute,
// symbolic links resolved; st its stat) that writing to it would break.
func fileInUse(path string, st *unix.Stat_t, mounts []mountinfo.Mount) fileUse {
	return fileInUseExcept(path, idOf(st), mounts, "")
}

// fileInUseExcept is fileInUse for the file of identity id, where the
// loop device exceptLoop (loopN), the one a named device's stack came
// through, is not a user.
func fileInUseExcept(path string, id fileID, mounts []mountinfo.Mount, exceptLoop string) fileUse {
	s := &sameFileCache{id: id, path: path, mounts: mounts, seen: map[string]sameFile{}, exceptLoop: exceptLoop}
	var u fileUse
	u.loops(s)
	u.swaps(s)
	u.mountSources(s)
	u.processes(s)
	return u
}

// sameFileCache answers "is the file at p the target?" for names found in
// sysfs and /proc, stat'ing each name once.
type sameFileCache struct {
	id     fileID
	path   string
	mounts []mountinfo.Mount
	seen   map[string]sameFile
	// exceptLoop is a loop device (loopN) over the file that does not
	// count as a use of it.
	exceptLoop string
}

// sameFile is what a stat of a name said.
type sameFile struct{ same, exists bool }

// is reports whether p names the target: the same name, or a file of the
// same device and inode.
func (s *sameFileCache) is(p string) bool { return s.lookup(p).same }

// lookup says whether p names the target, and whether p exists. A name on
// a FUSE mount of another device is not stat'ed: it cannot be the target,
// and a FUSE server that hangs would hang the stat (a loop device over a
// FUSE file is how -device=slowflush and crashlab work).
func (s *sameFileCache) lookup(p string) sameFile {
	if p == s.path {
		return sameFile{same: true, exists: true}
	}
	if !strings.HasPrefix(p, "/") {
		return sameFile{}
	}
	if r, ok := s.seen[p]; ok {
		return r
	}
	var r sameFile
	if s.mayBe(p) {
		var st unix.Stat_t
		r.exists = unix.Stat(p, &st) == nil
		r.same = r.exists && st.Mode&unix.S_IFMT == unix.S_IFREG && idOf(&st) == s.id
	} else {
		r.exists = true // on another device: certainly not the target
	}
	s.seen[p] = r
	return r
}

// mayBe is false if p lies on a FUSE mount other than the target's.
func (s *sameFileCache) mayBe(p string) bool {
	m, ok := mountOf(s.mounts, p, 0, false)
	if !ok || !strings.HasPrefix(m.FSType, "fuse") {
		return true
	}
	return m.Major == s.id.Major && m.Minor == s.id.Minor
}

// loops finds the loop devices backed by the file. sysfs names each
// backing file (drivers/block/loop.c, loop_attr_backing_file_show); where
// that name leads nowhere (the file was unlinked and shows "(deleted)",
// was attached in another mount namespace, or lies in a directory this
// process cannot search), LOOP_GET_STATUS64 gives its device and inode,
// as losetup -j does. That needs read access to /dev/loopN (root).
func (u *fileUse) loops(s *sameFileCache) {
	var unknown []string // loop devices that could not be asked
	firstReason := ""
	for _, l := range loopdev.List() {
		name, backing, deleted := l.Name, l.Backing, l.Deleted
		if name == s.exceptLoop {
			continue
		}
		shown := backing
		if deleted {
			shown += deletedSuffix
		}
		var r sameFile
		if !deleted {
			r = s.lookup(backing)
		}
		match := r.same
		// Asked only when the name cannot answer, so that hwbench rarely
		// holds another's loop device open: one marked to detach at its
		// last close would then detach at hwbench's close instead.
		if !r.exists && s.mayBe(backing) {
			var reason string
			match, reason = loopBacks(name, s.id)
			if reason != "" {
				unknown = append(unknown, fmt.Sprintf("/dev/%s (over %s)", name, shown))
				if firstReason == "" {
					firstReason = reason
				}
			}
		}
		if !match {
			continue
		}
		dev := "/dev/" + name
		why := "it backs the loop device " + dev
		if off, limit, ok := loopdev.Window(name); ok && (off > 0 || limit > 0) {
			why += fmt.Sprintf(" from byte %d", off)
			if limit > 0 {
				why += fmt.Sprintf(", %d bytes", limit)
			}
		}
		if bd, err := lookupBlockDev(dev); err == nil {
			if busy := inUse(bd); len(busy) > 0 {
				why += " (" + strings.Join(busy, "; ") + ")"
			}
		}
		u.why = append(u.why, why)
	}
	if len(unknown) > 0 {
		verb := "are"
		if len(unknown) == 1 {
			verb = "is"
		}
		u.notes = append(u.notes, fmt.Sprintf("could not tell whether %s %s backed by %s: the name of the backing file does not lead to a file this process can stat, and the device cannot be asked (%s; root can)",
			listSome(unknown), verb, s.path, firstReason))
	}
}

// loopBacks asks the loop device /dev/NAME for its backing file's device
// and inode (loopdev.BackingID) and reports whether they are id's, or why
// it could not tell.
func loopBacks(name string, id fileID) (bool, string) {
	got, err := loopdev.BackingID(name)
	if err != nil {
		return false, err.Error()
	}
	return got.Major == id.Major && got.Minor == id.Minor && got.Ino == id.Ino, ""
}

// swaps finds the file among the active swap areas. An unlinked swap file
// cannot be compared; the kernel itself refuses writes to a swap file
// (ETXTBSY, mm/swapfile.c marks the inode S_SWAPFILE).
func (u *fileUse) swaps(s *sameFileCache) {
	data, err := os.ReadFile("/proc/swaps")
	if err != nil {
		return
	}
	for _, a := range parseSwaps(string(data)) {
		p, deleted := stripDeleted(a.Path)
		if a.Type == "file" && !deleted && s.is(p) {
			u.why = append(u.why, "it is an active swap file (/proc/swaps)")
		}
	}
}

// mountSources finds file systems mounted with the file as their source
// (a file-backed erofs, a FUSE file system such as fuse2fs naming its
// image, or anything mounted by path).
func (u *fileUse) mountSources(s *sameFileCache) {
	for _, m := range s.mounts {
		p, _ := stripDeleted(m.Source)
		if s.is(p) {
			u.why = append(u.why, fmt.Sprintf("it is the source of the %s file system mounted on %s", m.FSType, m.MountPoint))
		}
	}
}

// processes finds the processes that map the file, or hold it open for
// writing (this one's own descriptors excepted), among those whose /proc
// entries this process may read: all as root, only its own user's
// otherwise (proc(5): maps and fd need ptrace read access).
func (u *fileUse) processes(s *sameFileCache) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		u.notes = append(u.notes, fmt.Sprintf("could not list processes to see who uses %s: %v", s.path, err))
		return
	}
	self := os.Getpid()
	var mapped, writers []string
	hidden := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		maps, merr := os.ReadFile(filepath.Join(dir, "maps"))
		if merr == nil && mapsFile(string(maps), s) {
			mapped = append(mapped, describeProcess(pid, self, ""))
		}
		var fds []string
		ferr := error(nil)
		if pid != self {
			fds, ferr = writersOf(dir, s)
			for _, fd := range fds {
				writers = append(writers, describeProcess(pid, self, fd))
			}
		}
		if errors.Is(merr, os.ErrPermission) || errors.Is(ferr, os.ErrPermission) {
			hidden++
		}
	}
	if len(mapped) > 0 {
		u.why = append(u.why, "it is mapped by "+listSome(mapped))
	}
	if len(writers) > 0 {
		u.why = append(u.why, "it is open for writing by "+listSome(writers))
	}
	if hidden > 0 {
		u.notes = append(u.notes, fmt.Sprintf("%d processes of other users could not be checked for %s (their /proc maps and fd are readable by root only): a writer among them would not be seen", hidden, s.path))
	}
}

// mapsFile reports whether a maps file maps the target: same device and
// inode, or (for a btrfs subvolume, whose files' st_dev is not the super
// block's device that maps shows) the same inode and name.
func mapsFile(data string, s *sameFileCache) bool {
	for _, m := range parseMaps(data) {
		if m.Ino != s.id.Ino {
			continue
		}
		p, _ := stripDeleted(m.Path)
		if m.Major == s.id.Major && m.Minor == s.id.Minor || p == s.path {
			return true
		}
	}
	return false
}

// writersOf returns the descriptors of the process at dir (/proc/PID) that
// have the target open for writing. The fdinfo's inode number rules out
// every other file without touching it; only a candidate's link is
// stat'ed (which reaches the file itself).
func writersOf(dir string, s *sameFileCache) ([]string, error) {
	fds, err := os.ReadDir(filepath.Join(dir, "fd"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range fds {
		info, err := os.ReadFile(filepath.Join(dir, "fdinfo", e.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		fi, err := parseFdinfo(string(info))
		if err != nil || !fi.writable() || fi.HasIno && fi.Ino != s.id.Ino {
			continue
		}
		link := filepath.Join(dir, "fd", e.Name())
		if !fi.HasIno {
			// An older kernel: the link's text says where it leads, and
			// only a path can be the target (not "pipe:[...]").
			dest, err := os.Readlink(link)
			if d, _ := stripDeleted(dest); err != nil || !strings.HasPrefix(d, "/") || !s.mayBe(d) {
				continue
			}
		}
		var st unix.Stat_t
		if unix.Stat(link, &st) == nil && idOf(&st) == s.id {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// describeProcess names a process for a refusal: "process 4242 (sh, fd 3)".
func describeProcess(pid, self int, fd string) string {
	comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	what := strings.TrimSpace(string(comm))
	if pid == self {
		what = "this process"
	}
	if fd != "" {
		what += ", fd " + fd
	}
	return fmt.Sprintf("process %d (%s)", pid, what)
}

// listSome joins up to maxUsers items and counts the rest.
func listSome(items []string) string {
	sort.Strings(items)
	if len(items) <= maxUsers {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:maxUsers], ", "), len(items)-maxUsers)
}

// refuseFileInUse returns an ErrRefused error if why is not empty.
func refuseFileInUse(path string, why []string) error {
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s is in use: %s; hwbench never writes to a file in use, -destructive or not",
		ErrRefused, path, strings.Join(why, "; "))
}
