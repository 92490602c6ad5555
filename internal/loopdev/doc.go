// Package loopdev attaches Linux loop devices to files and detaches them,
// for hwbench (a loop device to measure) and crashlab (the recorder's loop
// device over its FUSE image, and one per replayed crash state). It talks
// to the kernel with the loop driver's ioctls (loop(4),
// drivers/block/loop.c), so neither needs losetup(8), and it only ever
// detaches a device still attached to the file its caller names.
//
// Attaching and detaching:
//
//   - [Attach] attaches a free loop device to a file, optionally with
//     direct I/O to it or its partitions scanned ([Options]); it fails wrapping [ErrUnavailable]
//     where loop devices cannot be had (not root, no /dev/loop-control).
//   - [Detach] detaches a device if it is still attached to the file
//     named; a device still open elsewhere is detached by the kernel at
//     its last close (which is also how a caller arranges for a device it
//     holds open to go away even if the process dies).
//
// Looking:
//
//   - [BackingFile] is the file a device is attached to, by name, and
//     [DirectIO] whether it does direct I/O to it (both from sysfs).
//   - [List] lists the attached loop devices.
//   - [BackingID] asks a device for its backing file's device and inode
//     number, which identify the file where its name no longer does (it
//     was unlinked, or named in another mount namespace).
package loopdev
