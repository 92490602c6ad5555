// What a path the user named is, and what it lies on: symbolic links
// resolved, the kind of file (only a regular file or a block device is a
// target), and the file system from /proc/self/mountinfo (pseudo file
// systems and devtmpfs are refused; tmpfs and ramfs keep nothing durable).
// Everything here is read-only: stat, statfs and reading /proc.

package hwbench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/flushproof/flushproof/internal/mountinfo"
)

// parseMajorMinor reads "MAJ:MIN" in the given base (10 in sysfs, 16 in
// /proc/PID/maps).
func parseMajorMinor(s string, base int) (uint32, uint32, bool) {
	a, b, ok := strings.Cut(s, ":")
	if !ok {
		return 0, 0, false
	}
	maj, err1 := strconv.ParseUint(a, base, 32)
	mnr, err2 := strconv.ParseUint(b, base, 32)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return uint32(maj), uint32(mnr), true
}

// under reports whether path is mountPoint or below it.
func under(path, mountPoint string) bool {
	return mountPoint == "/" || path == mountPoint || strings.HasPrefix(path, mountPoint+"/")
}

// mountOf returns the mount that path (absolute, symbolic links resolved)
// lies on: the deepest mount point above it, the last of equals (a mount
// stacked on another hides it, and mountinfo lists it later). Where the
// device number is known (hasDev), a mount with that st_dev is preferred,
// which sorts out a path seen through a bind mount; a btrfs subvolume's
// files have a st_dev of their own that no mount shows, and then the
// deepest mount point decides. It returns false if no mount matched.
func mountOf(mounts []mountinfo.Mount, path string, dev uint64, hasDev bool) (mountinfo.Mount, bool) {
	best, bestLen, bestDev := -1, -1, false
	for i, m := range mounts {
		if !under(path, m.MountPoint) {
			continue
		}
		sameDev := hasDev && m.Major == unix.Major(dev) && m.Minor == unix.Minor(dev)
		switch {
		case sameDev && !bestDev, sameDev == bestDev && len(m.MountPoint) >= bestLen:
			best, bestLen, bestDev = i, len(m.MountPoint), sameDev
		}
	}
	if best < 0 {
		return mountinfo.Mount{}, false
	}
	return mounts[best], true
}

// fsInfo is the file system a path lies on.
type fsInfo struct {
	Type       string // mountinfo's type, e.g. "ext4", "devtmpfs", "tmpfs"
	MountPoint string
	Magic      int64 // statfs(2) f_type
}

// String names the file system for messages: "tmpfs (mounted on /dev/shm)".
func (f fsInfo) String() string {
	name := f.Type
	if name == "" {
		name = fmt.Sprintf("a file system of magic %#x", f.Magic)
	}
	if f.MountPoint == "" {
		return name
	}
	return fmt.Sprintf("%s (mounted on %s)", name, f.MountPoint)
}

// fsOf finds the file system of path (absolute, symbolic links resolved),
// which must exist. Its type comes from mountinfo, because statfs cannot
// tell devtmpfs from tmpfs (both report TMPFS_MAGIC: drivers/base/devtmpfs.c
// mounts a shmem or ramfs instance); statfs's magic is kept as a second
// opinion.
func fsOf(path string, mounts []mountinfo.Mount) (fsInfo, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return fsInfo{}, fmt.Errorf("stat %s: %w", path, err)
	}
	var sfs unix.Statfs_t
	if err := unix.Statfs(path, &sfs); err != nil {
		return fsInfo{}, fmt.Errorf("statfs %s: %w", path, err)
	}
	fi := fsInfo{Magic: int64(sfs.Type)}
	if m, ok := mountOf(mounts, path, st.Dev, true); ok {
		fi.Type, fi.MountPoint = m.FSType, m.MountPoint
	}
	return fi, nil
}

// pseudoFSTypes are file systems whose files are kernel interfaces, not
// storage: writing to them changes kernel state, or fails half-way.
var pseudoFSTypes = map[string]bool{
	"proc": true, "sysfs": true, "debugfs": true, "tracefs": true, "configfs": true,
	"securityfs": true, "cgroup": true, "cgroup2": true, "bpf": true, "pstore": true,
	"fusectl": true, "devpts": true, "mqueue": true, "efivarfs": true, "hugetlbfs": true,
	"binfmt_misc": true, "autofs": true, "rpc_pipefs": true, "nfsd": true, "nsfs": true,
	"selinuxfs": true, "smackfs": true, "resctrl": true, "binder": true,
	"sockfs": true, "pipefs": true, "anon_inodefs": true,
}

// Magic numbers of pseudo file systems that golang.org/x/sys/unix does not
// name (the kernel defines them in the file system's own source).
const (
	configfsMagic = 0x62656570 // fs/configfs/mount.c, CONFIGFS_MAGIC
	mqueueMagic   = 0x19800202 // ipc/mqueue.c, MQUEUE_MAGIC
	fusectlMagic  = 0x65735543 // fs/fuse/control.c, FUSE_CTL_SUPER_MAGIC
)

// pseudoFSMagics names the pseudo file systems by statfs magic, for when
// mountinfo does not know the mount (include/uapi/linux/magic.h).
var pseudoFSMagics = map[int64]string{
	unix.PROC_SUPER_MAGIC: "proc", unix.SYSFS_MAGIC: "sysfs", unix.DEBUGFS_MAGIC: "debugfs",
	unix.TRACEFS_MAGIC: "tracefs", configfsMagic: "configfs", unix.SECURITYFS_MAGIC: "securityfs",
	unix.CGROUP_SUPER_MAGIC: "cgroup", unix.CGROUP2_SUPER_MAGIC: "cgroup2", unix.BPF_FS_MAGIC: "bpf",
	unix.PSTOREFS_MAGIC: "pstore", fusectlMagic: "fusectl", unix.DEVPTS_SUPER_MAGIC: "devpts",
	mqueueMagic: "mqueue", unix.EFIVARFS_MAGIC: "efivarfs", unix.HUGETLBFS_MAGIC: "hugetlbfs",
	unix.BINFMTFS_MAGIC: "binfmt_misc", unix.AUTOFS_SUPER_MAGIC: "autofs", unix.NSFS_MAGIC: "nsfs",
	unix.SELINUX_MAGIC: "selinuxfs", unix.SMACK_MAGIC: "smackfs", unix.RDTGROUP_SUPER_MAGIC: "resctrl",
	unix.BINDERFS_SUPER_MAGIC: "binder",
}

// pseudo names the pseudo file system f is, or returns "".
func (f fsInfo) pseudo() string {
	if pseudoFSTypes[f.Type] {
		return f.Type
	}
	return pseudoFSMagics[f.Magic]
}

// volatile names f if it keeps its files in memory only (tmpfs, ramfs),
// or returns "". devtmpfs is one too, but nothing is ever written there.
func (f fsInfo) volatile() string {
	switch {
	case f.Type == "tmpfs" || f.Type == "ramfs":
		return f.Type
	case f.Type != "":
		return ""
	case f.Magic == unix.TMPFS_MAGIC:
		return "tmpfs"
	case f.Magic == unix.RAMFS_MAGIC:
		return "ramfs"
	}
	return ""
}

// namedPath is what -device=PATH turned out to be.
type namedPath struct {
	given  string
	path   string      // absolute, every symbolic link resolved
	st     unix.Stat_t // of path, if exists
	exists bool
	// fs is the file system of path, or of the directory it would be
	// created in.
	fs fsInfo
}

// fileKind names a file's type for messages.
func fileKind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "a regular file"
	case unix.S_IFBLK:
		return "a block device"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFIFO:
		return "a named pipe (FIFO)"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFLNK:
		return "a symbolic link"
	}
	return fmt.Sprintf("a file of type %#o", mode&unix.S_IFMT)
}

// namesDirectory reports whether a path can only name a directory: it
// ends in "/", "/." or "/.." (or is "." or ".."), as path resolution
// requires of a name with a trailing slash (path_resolution(7)).
func namesDirectory(p string) bool {
	base := p[strings.LastIndex(p, "/")+1:]
	return base == "" || base == "." || base == ".."
}

// resolveNamed resolves path and refuses what is never a target: anything
// on a pseudo file system, anything but a regular file or a block device,
// anything on devtmpfs but a block device, a dangling symbolic link, a
// file to create in a directory on one of those. Nothing is opened.
func resolveNamed(given string, mounts []mountinfo.Mount) (namedPath, error) {
	n := namedPath{given: given}
	if namesDirectory(given) {
		// filepath.Abs would drop the slash, and open(2) refuses
		// "FILE/" (ENOTDIR): the name does not say FILE.
		what := "nothing"
		var st unix.Stat_t
		if unix.Stat(filepath.Clean(given), &st) == nil {
			what = fileKind(st.Mode)
		}
		return n, fmt.Errorf("%w: -device=%s names a directory (it ends in /, /. or /..), and there is %s there; hwbench measures on a regular file or a block device: name one without the trailing slash",
			ErrRefused, given, what)
	}
	abs, err := filepath.Abs(given)
	if err != nil {
		return n, fmt.Errorf("hwbench: -device=%s: %w", given, err)
	}
	n.path, err = filepath.EvalSymlinks(abs)
	switch {
	case err == nil:
		if err := unix.Lstat(n.path, &n.st); err != nil {
			return n, fmt.Errorf("hwbench: stat %s: %w", n.path, err)
		}
		n.exists = true
		if n.fs, err = fsOf(n.path, mounts); err != nil {
			return n, fmt.Errorf("hwbench: %w", err)
		}
	case errors.Is(err, os.ErrNotExist):
		if fi, lerr := os.Lstat(abs); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
			dest, _ := os.Readlink(abs)
			return n, fmt.Errorf("%w: %s is a symbolic link to %s, which does not exist; name the file itself if it is to be created", ErrRefused, given, dest)
		}
		dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
		if err != nil {
			return n, fmt.Errorf("hwbench: -device=%s: its directory: %w", given, err)
		}
		var dst unix.Stat_t
		if err := unix.Stat(dir, &dst); err != nil {
			return n, fmt.Errorf("hwbench: stat %s: %w", dir, err)
		}
		if dst.Mode&unix.S_IFMT != unix.S_IFDIR {
			return n, fmt.Errorf("%w: %s cannot be created: %s is %s, not a directory", ErrRefused, given, dir, fileKind(dst.Mode))
		}
		n.path = filepath.Join(dir, filepath.Base(abs))
		if n.fs, err = fsOf(dir, mounts); err != nil {
			return n, fmt.Errorf("hwbench: %w", err)
		}
	default:
		return n, fmt.Errorf("hwbench: -device=%s: resolve symbolic links: %w", given, err)
	}

	where := n.path
	if !n.exists {
		where = filepath.Dir(n.path)
	}
	if p := n.fs.pseudo(); p != "" {
		return n, fmt.Errorf("%w: %s is on %s, a pseudo file system: its files are kernel interfaces, not storage. hwbench never writes there, -destructive or not",
			ErrRefused, where, fsInfo{Type: p, MountPoint: n.fs.MountPoint})
	}
	if !n.exists {
		if n.fs.Type == "devtmpfs" {
			return n, fmt.Errorf("%w: %s would be created on devtmpfs (%s), which holds device nodes, not data. hwbench creates no file there",
				ErrRefused, n.path, where)
		}
		return n, nil
	}
	switch n.st.Mode & unix.S_IFMT {
	case unix.S_IFBLK:
		return n, nil
	case unix.S_IFREG:
		if n.fs.Type == "devtmpfs" {
			return n, fmt.Errorf("%w: %s is a regular file on devtmpfs (%s), which holds device nodes, not data; of what is there hwbench only uses block devices",
				ErrRefused, n.path, n.fs.MountPoint)
		}
		return n, nil
	}
	return n, fmt.Errorf("%w: %s is %s: neither a regular file nor a block device, so nothing hwbench can measure on",
		ErrRefused, n.path, fileKind(n.st.Mode))
}
