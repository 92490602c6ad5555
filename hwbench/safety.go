// What hwbench checks before it writes to a device the user named.
//
// hwbench overwrites the region it measures on. It only ever writes to:
//
//   - a temporary file it creates itself (no -device), removed at the end;
//   - a loop device it attaches itself over its own sparse temporary file
//     (-device=loop), detached and removed at the end;
//   - the file or block device the user named with -device=PATH, within
//     [0, Target.Region).
//
// A named path is resolved first (symbolic links followed, so a
// /dev/disk/by-id link names its device), and refused, -destructive or
// not, when it is (safety_path.go):
//
//   - on a pseudo file system (proc, sysfs, debugfs, tracefs, configfs,
//     securityfs, cgroup, bpf, pstore, fusectl, devpts, mqueue, efivarfs
//     and the like), or a file to be created in a directory on one;
//   - on devtmpfs, unless it is a block device node;
//   - neither a regular file nor a block device (a character device, a
//     FIFO, a socket, a directory), or a dangling symbolic link;
//   - a name ending in "/", "/." or "/..", which names a directory.
//
// A named block device is refused when:
//
//   - it, or anything it is built on (safety_stack.go: a loop device's
//     backing file or device at any depth, a partition's disk, a device
//     mapper or md device's components), is in use: mounted
//     (/proc/self/mountinfo, by device number and by source path), an
//     active swap area (/proc/swaps), held by another block layer
//     (/sys/class/block/NAME/holders: device mapper, md, bcache), the
//     backing of another loop device, open for writing by a process, or
//     any of that holds for one of its partitions; a backing file gets
//     every check of a named file. -destructive does not override this,
//     and the O_EXCL open (impl.Open) refuses a device the kernel knows to
//     be claimed as well;
//   - it carries an on-disk format hwbench recognises (a file system,
//     partition table, swap, LUKS, LVM or RAID signature, see
//     signatureChecks) or that blkid -p reports, unless -destructive;
//   - it holds any non-zero byte in the region written, [0,
//     Target.Region), unless -destructive;
//   - it is smaller than the region the scenarios need (no flag overrides
//     this: the benchmark would not fit).
//
// A named regular file is refused when:
//
//   - it is in use (safety_file.go): it backs a loop device, is an active
//     swap file, is the source of a mounted file system, is mapped by a
//     process or open for writing by another, as far as this process can
//     see. -destructive does not override this;
//   - it has no write permission bit, unless OverwriteReadOnly (not
//     Destructive: root would otherwise write to a file made read-only);
//   - it carries an on-disk format, as a device does, or is not empty,
//     unless -destructive.
//
// A file that does not exist is created (and removed at the end); an empty
// one is grown (and truncated back to empty at the end). Nothing is
// created, opened for writing, grown or truncated before every check above
// has passed.
//
// A target on tmpfs or ramfs (or a loop device over such a file, or a RAM
// disk) is measured, but Target.NotDurable says that nothing there is
// durable and the reports mark its flush figures meaningless.

package hwbench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/flushproof/flushproof/internal/mountinfo"
)

// ErrRefused is wrapped by every error that refuses to use a device or
// file for safety; the message says why and what would be overwritten.
var ErrRefused = errors.New("hwbench refuses to write here")

// Signature is an on-disk format found on a device: something hwbench
// would destroy.
type Signature struct {
	Name   string // e.g. "ext2/3/4 superblock"
	Offset int64  // byte offset of the magic
	Source string // "hwbench" (own magic check) or "blkid -p"
}

func (s Signature) String() string {
	if s.Source == "blkid -p" {
		return fmt.Sprintf("%s (blkid -p)", s.Name)
	}
	return fmt.Sprintf("%s (magic at byte %d)", s.Name, s.Offset)
}

// signatureCheck is one magic number at a fixed place. Offsets at or
// above 0 count from the start of the device, negative ones are resolved
// by at from the device size (formats kept at the end).
type signatureCheck struct {
	name  string
	magic []byte
	at    func(size int64) []int64
}

func fixed(offs ...int64) func(int64) []int64 { return func(int64) []int64 { return offs } }

// signatureChecks are the formats hwbench looks for itself. The offsets and
// magic numbers come from each format's on-disk layout (the kernel's
// fs/*/ headers and util-linux libblkid's probers, re-derived, not copied).
var signatureChecks = []signatureCheck{
	// ext2/3/4: s_magic 0xEF53 (little endian) at offset 56 of the
	// superblock, which starts at byte 1024.
	{"ext2/3/4 superblock", []byte{0x53, 0xEF}, fixed(1024 + 56)},
	// XFS: sb_magicnum "XFSB" at the start of the primary superblock.
	{"XFS superblock", []byte("XFSB"), fixed(0)},
	// btrfs: magic "_BHRfS_M" at offset 0x40 of the superblock at 64 KiB.
	{"btrfs superblock", []byte("_BHRfS_M"), fixed(65536 + 0x40)},
	// Swap: the last 10 bytes of the first page; the page size of the
	// machine that ran mkswap is unknown, so every common one is tried.
	{"swap area (SWAPSPACE2)", []byte("SWAPSPACE2"), fixed(4096-10, 8192-10, 16384-10, 65536-10)},
	{"swap area (SWAP-SPACE)", []byte("SWAP-SPACE"), fixed(4096-10, 8192-10, 16384-10, 65536-10)},
	// GPT: "EFI PART" in the header at LBA 1 (512- or 4096-byte sectors),
	// and the backup header in the last LBA.
	{"GPT partition table", []byte("EFI PART"), fixed(512, 4096)},
	{"GPT backup header", []byte("EFI PART"), func(size int64) []int64 { return []int64{size - 512, size - 4096} }},
	// LUKS1 and LUKS2: "LUKS\xba\xbe" at 0; LUKS2 keeps a second header
	// ("SKUL\xba\xbe") at one of a few fixed offsets.
	{"LUKS header", []byte("LUKS\xba\xbe"), fixed(0)},
	{"LUKS2 secondary header", []byte("SKUL\xba\xbe"), fixed(0x4000, 0x8000, 0x10000, 0x20000, 0x40000, 0x80000, 0x100000, 0x200000, 0x400000)},
	// LVM2 physical volume: "LABELONE" in one of the first four sectors.
	{"LVM2 physical volume label", []byte("LABELONE"), fixed(0, 512, 1024, 1536)},
	// Linux md RAID: 0xa92b4efc (little endian) at 0 (v1.1), 4 KiB (v1.2),
	// 8 KiB before the end rounded down to 4 KiB (v1.0), or 64 KiB before
	// the end rounded down to 64 KiB (v0.90).
	{"Linux md RAID superblock", []byte{0xfc, 0x4e, 0x2b, 0xa9}, func(size int64) []int64 {
		return []int64{0, 4096, (size - 8192) &^ 4095, (size &^ 65535) - 65536}
	}},
	// bcache: a 16-byte magic at offset 24 of the superblock at 4 KiB.
	{"bcache superblock", []byte{0xc6, 0x85, 0x73, 0xf6, 0x4e, 0x1a, 0x45, 0xca, 0x82, 0x65, 0xf5, 0x7f, 0x48, 0xba, 0x6d, 0x81}, fixed(4096 + 24)},
	// F2FS: 0xF2F52010 (little endian) in the superblock at 1 KiB.
	{"F2FS superblock", []byte{0x10, 0x20, 0xf5, 0xf2}, fixed(1024)},
	// ISO 9660: "CD001" in the first volume descriptor, sector 16 (2 KiB
	// sectors), after the type byte.
	{"ISO 9660 volume descriptor", []byte("CD001"), fixed(32768 + 1)},
	// squashfs: "hsqs" at 0.
	{"squashfs superblock", []byte("hsqs"), fixed(0)},
	// Boot sectors: the OEM name at byte 3 for NTFS and exFAT, the file
	// system type string of a FAT12/16 (byte 54) or FAT32 (byte 82) BPB.
	{"NTFS boot sector", []byte("NTFS    "), fixed(3)},
	{"exFAT boot sector", []byte("EXFAT   "), fixed(3)},
	{"FAT12/16 boot sector", []byte("FAT1"), fixed(54)},
	{"FAT32 boot sector", []byte("FAT32   "), fixed(82)},
	// 0x55AA at 510 ends an MBR (a DOS partition table or a protective
	// MBR before GPT) and every FAT, NTFS or exFAT boot sector.
	{"DOS/MBR partition table or boot sector (0x55AA)", []byte{0x55, 0xAA}, fixed(510)},
}

// signatureWindow is how much of the start and of the end of a device
// FindSignatures reads: enough for every offset in signatureChecks.
const signatureWindow = 4<<20 + 64<<10

// FindSignatures reads the start and the end of a device of size bytes
// through readAt (which must accept offsets and lengths that are multiples
// of 4096, as an O_DIRECT device does) and returns the on-disk formats
// whose magic numbers it finds there.
func FindSignatures(readAt func(p []byte, off int64) error, size int64) ([]Signature, error) {
	if size <= 0 {
		return nil, nil
	}
	const unit = 4096
	head := min(size, signatureWindow) &^ (unit - 1)
	tailStart := max(head, (size-signatureWindow)&^(unit-1))
	tailLen := (size - tailStart) &^ (unit - 1)

	headBuf := make([]byte, head)
	if err := readAt(headBuf, 0); err != nil {
		return nil, fmt.Errorf("read the first %d bytes: %w", head, err)
	}
	var tailBuf []byte
	if tailLen > 0 {
		tailBuf = make([]byte, tailLen)
		if err := readAt(tailBuf, tailStart); err != nil {
			return nil, fmt.Errorf("read %d bytes at %d: %w", tailLen, tailStart, err)
		}
	}
	bytesAt := func(off int64, n int) []byte {
		switch {
		case off >= 0 && off+int64(n) <= head:
			return headBuf[off : off+int64(n)]
		case off >= tailStart && off+int64(n) <= tailStart+tailLen:
			return tailBuf[off-tailStart : off-tailStart+int64(n)]
		}
		return nil
	}

	var found []Signature
	seen := map[string]bool{}
	for _, c := range signatureChecks {
		for _, off := range c.at(size) {
			if off < 0 || off+int64(len(c.magic)) > size {
				continue
			}
			if b := bytesAt(off, len(c.magic)); b != nil && bytes.Equal(b, c.magic) && !seen[c.name] {
				seen[c.name] = true
				found = append(found, Signature{Name: c.name, Offset: off, Source: "hwbench"})
			}
		}
	}
	return found, nil
}

// blkidSignatures asks blkid -p (low-level probing, no cache) what it finds
// on path, as a second opinion. It returns nil, "" if blkid is not
// installed; a note says why blkid gave no answer.
func blkidSignatures(path string) ([]Signature, string) {
	bin, err := exec.LookPath("blkid")
	if err != nil {
		return nil, ""
	}
	out, err := exec.Command(bin, "-p", "-o", "export", path).CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && exit.ExitCode() == 2:
		return nil, "" // blkid(8): exit 2, nothing detected
	case errors.As(err, &exit) && exit.ExitCode() == 8:
		// Ambivalent: more than one signature. That is a signature too.
		return []Signature{{Name: "ambivalent probing result: " + strings.TrimSpace(string(out)), Source: "blkid -p"}}, ""
	default:
		return nil, fmt.Sprintf("blkid -p %s: %v: %s", path, err, strings.TrimSpace(string(out)))
	}
	var sigs []Signature
	vals := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if ok {
			vals[k] = v
		}
	}
	if t := vals["TYPE"]; t != "" {
		name := "TYPE=" + t
		if u := vals["USAGE"]; u != "" {
			name += " USAGE=" + u
		}
		sigs = append(sigs, Signature{Name: name, Source: "blkid -p"})
	}
	if t := vals["PTTYPE"]; t != "" {
		sigs = append(sigs, Signature{Name: "PTTYPE=" + t, Source: "blkid -p"})
	}
	if len(sigs) == 0 && len(bytes.TrimSpace(out)) > 0 {
		sigs = append(sigs, Signature{Name: strings.Join(strings.Fields(string(out)), " "), Source: "blkid -p"})
	}
	return sigs, ""
}

// blockDev names a block device the way sysfs does.
type blockDev struct {
	path  string
	rdev  uint64 // device number
	name  string // e.g. "loop3", "sda1"
	sysfs string // /sys/class/block/NAME (resolved)
}

// lookupBlockDev finds path's sysfs directory from its device number.
func lookupBlockDev(path string) (blockDev, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return blockDev{}, fmt.Errorf("stat %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFBLK {
		return blockDev{}, fmt.Errorf("%s is not a block device", path)
	}
	link := fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev))
	dir, err := filepath.EvalSymlinks(link)
	if err != nil {
		return blockDev{}, fmt.Errorf("%s: find it in sysfs (%s): %w", path, link, err)
	}
	return blockDev{path: path, rdev: st.Rdev, name: filepath.Base(dir), sysfs: dir}, nil
}

// family is the device and its partitions (subdirectories with a
// "partition" file), whose use also makes the device busy.
func (d blockDev) family() []blockDev {
	fam := []blockDev{d}
	entries, _ := os.ReadDir(d.sysfs)
	for _, e := range entries {
		sub := filepath.Join(d.sysfs, e.Name())
		if _, err := os.Stat(filepath.Join(sub, "partition")); err != nil {
			continue
		}
		devno, err := os.ReadFile(filepath.Join(sub, "dev"))
		if err != nil {
			continue
		}
		var maj, mnr uint32
		if _, err := fmt.Sscanf(strings.TrimSpace(string(devno)), "%d:%d", &maj, &mnr); err != nil {
			continue
		}
		fam = append(fam, blockDev{path: "/dev/" + e.Name(), rdev: unix.Mkdev(maj, mnr), name: e.Name(), sysfs: sub})
	}
	return fam
}

// inUse lists why d (or one of its partitions) is in use: mounted, an
// active swap area, or held by another block device. Nothing here can be
// overridden.
func inUse(d blockDev) []string { return inUseOf(d, d.family(), "") }

// inUseOf lists why d, or another of fam (d and the devices that lie
// inside it), is in use; a holder named exceptHolder does not count.
func inUseOf(d blockDev, fam []blockDev, exceptHolder string) []string {
	var why []string
	byRdev := map[uint64]blockDev{}
	for _, m := range fam {
		byRdev[m.rdev] = m
	}
	name := func(m blockDev) string {
		if m.rdev == d.rdev {
			return d.path
		}
		return fmt.Sprintf("its partition %s", m.path)
	}

	// Mounts: mountinfo's third field is the st_dev of the mounted file
	// system (proc(5)), which for a block-based file system is the device
	// number; the source field catches file systems with anonymous device
	// numbers (btrfs) mounted by path.
	if mounts, err := mountinfo.Read(); err == nil {
		for _, mt := range mounts {
			if m, ok := byRdev[unix.Mkdev(mt.Major, mt.Minor)]; ok {
				why = append(why, fmt.Sprintf("%s is mounted on %s", name(m), mt.MountPoint))
			} else if m, ok := sameDevice(mt.Source, byRdev); ok {
				why = append(why, fmt.Sprintf("%s is mounted on %s", name(m), mt.MountPoint))
			}
		}
	} else if data, err := os.ReadFile("/proc/self/mounts"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			if m, ok := sameDevice(mountinfo.Unescape(f[0]), byRdev); ok {
				why = append(why, fmt.Sprintf("%s is mounted on %s", name(m), mountinfo.Unescape(f[1])))
			}
		}
	}

	// Swap areas in use.
	if data, err := os.ReadFile("/proc/swaps"); err == nil {
		for i, line := range strings.Split(string(data), "\n") {
			f := strings.Fields(line)
			if i == 0 || len(f) == 0 {
				continue
			}
			if m, ok := sameDevice(mountinfo.Unescape(f[0]), byRdev); ok {
				why = append(why, fmt.Sprintf("%s is an active swap area", name(m)))
			}
		}
	}

	// Holders: device mapper, md, bcache... built on top of it.
	for _, m := range fam {
		entries, _ := os.ReadDir(filepath.Join(m.sysfs, "holders"))
		var holders []string
		for _, e := range entries {
			if e.Name() != exceptHolder {
				holders = append(holders, e.Name())
			}
		}
		if len(holders) > 0 {
			sort.Strings(holders)
			why = append(why, fmt.Sprintf("%s is held by %s (/sys/class/block/%s/holders)", name(m), strings.Join(holders, ", "), m.name))
		}
	}
	return why
}

// sameDevice reports which of the devices path (a mount source or swap
// file name) is, if it is a block device among them.
func sameDevice(path string, byRdev map[uint64]blockDev) (blockDev, bool) {
	if !strings.HasPrefix(path, "/") {
		return blockDev{}, false
	}
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFBLK {
		return blockDev{}, false
	}
	m, ok := byRdev[st.Rdev]
	return m, ok
}

// refuseSignatures returns an ErrRefused error if sigs is not empty.
func refuseSignatures(path string, sigs []Signature) error {
	if len(sigs) == 0 {
		return nil
	}
	names := make([]string, len(sigs))
	for i, s := range sigs {
		names[i] = s.String()
	}
	return fmt.Errorf("%w: %s holds data: %s; the benchmark would overwrite it. Pass -destructive only if everything on %s may be lost (wipefs -a %s clears the signatures)",
		ErrRefused, path, strings.Join(names, ", "), path, path)
}

// refuseReadOnly returns an ErrRefused error if mode (a regular file's)
// has no write permission bit and overwriting it is not allowed. Root may
// open such a file for writing anyway (capabilities(7),
// CAP_DAC_OVERRIDE), so the mode is checked here, not left to open(2).
func refuseReadOnly(path string, mode uint32, allowed bool) error {
	if mode&0o222 != 0 || allowed {
		return nil
	}
	return fmt.Errorf("%w: %s has no write permission bit (mode %#o): someone made it read-only. hwbench does not overwrite it, -destructive or not, unless -overwrite-readonly (TargetOptions.OverwriteReadOnly) says so",
		ErrRefused, path, mode&0o7777)
}

// refuseTooSmall returns an ErrRefused error if size < need.
func refuseTooSmall(path string, size, need int64) error {
	if size >= need {
		return nil
	}
	return fmt.Errorf("%w: %s has %d bytes, and the scenarios need %d (-span %s plus room); use a larger device or a smaller -span",
		ErrRefused, path, size, need, formatBytes(need))
}

// formatBytes prints n in the largest binary unit that divides it.
func formatBytes(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d %s", n/u.size, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}
