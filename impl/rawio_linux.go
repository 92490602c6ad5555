//go:build linux

package impl

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// System calls made without telling the Go scheduler (OpenOptions.RawSyscalls).
// unix.Pwrite and friends go through the runtime's syscall entry and exit,
// which lets another thread take the caller's P while it blocks; for a 4 KiB
// O_DIRECT write that hand-off costs a few percent of the write's time on
// this kind of machine. A raw call keeps the P, as fio's threads keep their
// CPU, at the price that no other goroutine runs on that P meanwhile.

func errnoErr(e unix.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

func rawPwrite(fd int, p []byte, off int64) (int, error) {
	n, _, e := unix.RawSyscall6(unix.SYS_PWRITE64, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)), uintptr(off), 0, 0)
	return int(n), errnoErr(e)
}

func rawPwritev2(fd int, p []byte, off int64, flags int) (int, error) {
	iov := unix.Iovec{Base: unsafe.SliceData(p)}
	iov.SetLen(len(p))
	lo, hi := uintptr(off), uintptr(uint64(off)>>32>>32)
	n, _, e := unix.RawSyscall6(unix.SYS_PWRITEV2, uintptr(fd), uintptr(unsafe.Pointer(&iov)), 1, lo, hi, uintptr(flags))
	return int(n), errnoErr(e)
}

func rawPread(fd int, p []byte, off int64) (int, error) {
	n, _, e := unix.RawSyscall6(unix.SYS_PREAD64, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)), uintptr(off), 0, 0)
	return int(n), errnoErr(e)
}

func rawFdatasync(fd int) error {
	_, _, e := unix.RawSyscall(unix.SYS_FDATASYNC, uintptr(fd), 0, 0)
	return errnoErr(e)
}
