package main

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"
)

// minMaxMemory is the smallest -max-memory other than 0: below it the Go
// runtime alone would not fit, and a bare number that small is more likely
// a forgotten unit ("-max-memory 2") than a wish.
const minMaxMemory = 16 << 20

// memoryShare is the share of the machine's memory that -max-memory takes
// by default, as a fraction num/den: the rest is headroom for what the
// search's estimate misses (fragmentation, the next table's growth being
// larger than foreseen) and for the rest of the machine.
const memoryShareNum, memoryShareDen = 3, 4

// memoryFlag is the value of -max-memory: a size in bytes, 0 for no limit;
// unset, the default of machineMemory applies.
type memoryFlag struct {
	bytes int64
	set   bool
}

func (m *memoryFlag) String() string {
	if m == nil || !m.set {
		return "auto"
	}
	return formatBytes(m.bytes)
}

func (m *memoryFlag) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	if n != 0 && n < minMaxMemory {
		return fmt.Errorf("want 0 (no limit) or a size of at least %s such as 2GiB, got %s", formatBytes(minMaxMemory), s)
	}
	m.bytes, m.set = n, true
	return nil
}

// parseSize reads a size: a number of bytes, or a number (a fraction is
// allowed) with a unit: B, KiB, MiB, GiB, TiB (powers of 1024, as in
// GOMEMLIMIT) or kB, MB, GB, TB (powers of 1000).
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.TrimSpace(t[i:])
	units := map[string]float64{"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
		"kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}
	mul, ok := units[unit]
	f, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || num == "" {
		return 0, fmt.Errorf("want a size such as 2GiB, 512MiB or 0 (units B, KiB, MiB, GiB, TiB, kB, MB, GB, TB), got %q", s)
	}
	b := f * mul
	if math.IsNaN(b) || b < 0 || b > 1<<60 {
		return 0, fmt.Errorf("want a size from 0 to 1EiB, got %q", s)
	}
	return int64(b), nil
}

// formatBytes renders a size with a binary unit, to a tenth.
func formatBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	f, i := float64(n), 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	return strconv.FormatFloat(math.Round(f*10)/10, 'f', -1, 64) + units[i]
}

// machineMemory is what this process may use at most, and what bounds it:
// the smallest of physical memory (MemTotal in /proc/meminfo), the memory
// cgroup's limit (memory.max, or memory.limit_in_bytes in cgroup v1, of
// this process's cgroup and its ancestors) and the address-space limit
// (RLIMIT_AS, ulimit -v) minus the address space the Go runtime reserves
// beyond what it holds (it reserves about 0.7 to 1.2 GB up front). It
// returns 0 if nothing could be read.
func machineMemory() (int64, string) {
	var (
		best int64
		what string
	)
	take := func(n int64, name string) {
		if n > 0 && (best == 0 || n < best) {
			best, what = n, name
		}
	}
	take(memTotal(), "physical memory")
	take(cgroupLimit(), "the cgroup's memory limit")
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &rl); err == nil && rl.Cur != math.MaxUint64 && rl.Cur < 1<<62 {
		take(int64(rl.Cur)-reservedAddressSpace(), "the address-space limit (ulimit -v) less the runtime's reservations")
	}
	return best, what
}

// defaultMaxMemory is -max-memory when it is not given: memoryShare of
// machineMemory, and never above GOMEMLIMIT. It returns 0 (no limit) if
// neither is known.
func defaultMaxMemory() (int64, string) {
	m, what := machineMemory()
	limit := m / memoryShareDen * memoryShareNum
	rule := fmt.Sprintf("%d/%d of %s", memoryShareNum, memoryShareDen, what)
	if g := goMemLimit(); g > 0 && (limit == 0 || g < limit) {
		return g, "GOMEMLIMIT"
	}
	return limit, rule
}

// goMemLimit is the Go runtime's memory limit (GOMEMLIMIT or
// debug.SetMemoryLimit), 0 if there is none.
func goMemLimit() int64 {
	g := debug.SetMemoryLimit(-1)
	if g == math.MaxInt64 {
		return 0
	}
	return g
}

func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if kb, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(kb), "kB")), 10, 64)
			if err == nil {
				return n << 10
			}
		}
	}
	return 0
}

// cgroupLimit is the smallest memory limit of this process's cgroup and
// its ancestors, v2 (memory.max) or v1 (memory.limit_in_bytes); 0 if
// there is none. Where the cgroup's own directory is not visible (a
// container's namespace), the root's file is read.
func cgroupLimit() int64 {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0
	}
	var best int64
	try := func(file string) {
		b, err := os.ReadFile(file)
		if err != nil {
			return
		}
		n, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
		if err != nil || n <= 0 || n >= 1<<62 { // "max", or v1's "no limit" (a page short of 2^63)
			return
		}
		if best == 0 || n < best {
			best = n
		}
	}
	for _, line := range strings.Split(string(data), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var dirs []string
		var file string
		switch {
		case parts[0] == "0" && parts[1] == "":
			dirs, file = []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}, "memory.max"
		case strings.Contains(","+parts[1]+",", ",memory,"):
			dirs, file = []string{"/sys/fs/cgroup/memory"}, "memory.limit_in_bytes"
		default:
			continue
		}
		for _, root := range dirs {
			for p := filepath.Clean("/" + parts[2]); ; p = filepath.Dir(p) {
				try(filepath.Join(root, p, file))
				if p == "/" {
					break
				}
			}
		}
	}
	return best
}

// reservedAddressSpace is the address space this process has mapped
// beyond what the Go runtime holds: reservations made up front, which
// count against RLIMIT_AS but not against the runtime's memory.
func reservedAddressSpace() int64 {
	return max(0, mappedBytes()-heldBytes())
}

// heldBytes is the memory the Go runtime holds from the system (the
// quantity debug.SetMemoryLimit bounds).
func heldBytes() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64())
}

// peakRSS is the largest resident set of this process so far: VmHWM of
// /proc/self/status, else getrusage's ru_maxrss (which Linux carries over
// from the parent across fork and exec, so that a small command started by
// a large process would report the parent's peak).
func peakRSS() int64 {
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				if err == nil {
					return kb << 10
				}
			}
		}
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss << 10
}

// addressSpace watches the address space left under RLIMIT_AS (ulimit -v),
// which the Go runtime's own accounting does not see: pages it returned to
// the system stay mapped, and it maps its heap 64 MiB at a time. A search
// stops (UNKNOWN (memory)) once less than reserve is left, before a
// failed mapping kills the process ("fatal error: out of memory", which
// no recover catches).
type addressSpace struct {
	limit, reserve int64
}

// watchAddressSpace returns nil when there is no address-space limit.
func watchAddressSpace() *addressSpace {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &rl); err != nil || rl.Cur == math.MaxUint64 || rl.Cur >= 1<<62 {
		return nil
	}
	limit := int64(rl.Cur)
	usable := max(0, limit-reservedAddressSpace())
	return &addressSpace{limit: limit, reserve: 128<<20 + usable/8}
}

// short reports whether less than the reserve is left. Heap pages that
// are free or were given back to the system stay mapped but are reused
// before the heap maps more, so they count as left: else the search after
// a large one would find the address space taken by the pages it freed.
func (a *addressSpace) short() bool {
	if a == nil {
		return false
	}
	s := []metrics.Sample{{Name: "/memory/classes/heap/released:bytes"}, {Name: "/memory/classes/heap/free:bytes"}}
	metrics.Read(s)
	reusable := int64(s[0].Value.Uint64() + s[1].Value.Uint64())
	return mappedBytes()-reusable+a.reserve > a.limit
}

// mappedBytes is the address space of this process (VmSize).
func mappedBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	pages, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}
