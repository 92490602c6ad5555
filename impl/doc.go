// Package impl is the real code behind the interfaces of spec, and the
// protocol library that runs over them both on Linux devices and, unchanged,
// inside the model world (docs/impl.md).
//
// Devices and atomics:
//   - [Open] opens a regular file or a block device with O_DIRECT (block
//     devices exclusively) as a spec.Device: FUA writes are pwritev2 with
//     RWF_DSYNC, flushes are fdatasync.
//   - [Word] (spec.Word) is a sync/atomic int64; [Fence] (spec.Fence) is a
//     no-op, since Go's atomics are sequentially consistent.
//   - [WaitQueue] (spec.WaitQueue) is a mutex and a condition variable.
//   - [Counting] counts the commands a device was sent.
//
// Protocols:
//   - [FlushSeq]: the flush-sequence counters of the patch "xfs: skip the
//     fsync flush when a later flush has completed".
//   - [Syncer]: write-then-Sync for many writers that share flushes, with
//     the policies [Always], [SkipIfFlushedSince] and [Join].
//   - [DSyncWriter]: durable writes by FUA or by write + flush ("block:
//     skip redundant flush for O_DSYNC direct writes").
//   - [Submitter]: I/O to one file serialised or in parallel ("io_uring:
//     avoid hashing O_DIRECT writes if the filesystem doesn't need it").
//   - [DIOCounter]: in-flight direct I/O for truncate to wait on ("ext4:
//     Add DIO_SKIP_DIO_COUNT flag to dax_do_io()").
//
// The Syncer is checked in the model world by the tests of this package:
// each call on a world.Task's handles is a scheduling point, and at small
// bounds every run's trace must be a run of the explorer's state machine
// (flushseq.ValidateTrace). docs/impl.md says how.
package impl
