// Package hwbench runs the impl protocols on real devices, baseline
// against optimised in the same run, and prints what each optimisation
// buys the way the kernel patches' descriptions do (docs/hwbench.md says
// how to run it and how to read the output):
//
//	go test ./hwbench -v                      # a temporary file (and, as root, a loop device)
//	go test ./hwbench -v -device=loop         # a loop device over a sparse temporary file (root)
//	go test ./hwbench -v -device=/dev/sdX     # a disk: refused if in use or formatted
//	go test ./hwbench -run '^$' -bench . -count 6 -device=loop > new.txt   # for benchstat
//
// The device:
//   - [OpenTarget] opens a [Target]: a temporary file, a loop device of its
//     own (attached with internal/loopdev) or a file or block device the user
//     named, after the checks of safety.go: a named block device is claimed
//     O_EXCL and refused ([ErrRefused]) if in use (mounted, swap, held),
//     too small, or carrying an on-disk format ([FindSignatures], and
//     blkid -p) unless TargetOptions.Destructive; a named regular file is
//     refused if in use (a loop device's backing file, swap, a mount's
//     source, mapped or open for writing elsewhere), read-only (unless
//     TargetOptions.OverwriteReadOnly), or formatted or non-empty (unless
//     Destructive); anything else (pseudo files, character devices, ...)
//     is refused. Writes outside [0, Target.Region) are refused by the
//     device itself ([Target.Device]). Target.NotDurable says when nothing
//     on the target is durable (tmpfs, ramfs, -device=slowflush).
//   - [Target.DiskStats] reads the flush requests the block layer sent the
//     driver, so that a table can show device flushes per operation.
//
// The scenarios ([Run], [Config]), one per kernel patch, each case
// alternated in short slices with the others of its comparison:
//   - S1 ("block: skip redundant flush for O_DSYNC direct writes"): one
//     thread of 4 KiB O_DIRECT writes, sequential and random: plain,
//     O_DSYNC (RWF_DSYNC) and write + fdatasync, with the model's
//     prediction (odsync.CallCost) in the notes.
//   - S2 ("xfs: skip the fsync flush when a later flush has completed"): N
//     writers, write + impl.Syncer.Sync, policies always,
//     skip-if-flushed-since and join, against the device limit.
//   - S3 ("io_uring: avoid hashing O_DIRECT writes if the filesystem doesn't
//     need it"): 8 writers to one file, impl.Submitter serialised or
//     parallel.
//   - S4 ("ext4: Add DIO_SKIP_DIO_COUNT flag to dax_do_io()"): an
//     impl.DIOCounter updated twice or once per op.
//
// Output: a [Report] (result.go) of [Result]s and [Comparison]s, printed
// as text by [WriteTables], as Markdown and latency CDF plots by
// [WriteReport], and as benchmark metrics by bench_test.go. Where fio is
// installed, S1 and S2's baseline also run under fio ([RunFIO]) and the
// report shows hwbench/fio ratios ([FIOComparison]).
package hwbench
