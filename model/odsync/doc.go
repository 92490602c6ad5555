// Package odsync checks O_DSYNC direct writes to a block device, from the
// patch "block: skip redundant flush for O_DSYNC direct writes": when the
// whole write went direct with REQ_FUA bios, blkdev_write_iter skips
// generic_write_sync; a short direct write falls back to the page cache,
// which must still be synced.
//
//   - [System]: the explicit-state model: writer tasks, the page cache,
//     optional background write-back and the device of spec.Contract, one
//     [Variant] per version (Baseline, Patched, Mutant*); the obligation is
//     checked after every crash ([Loss]).
//   - [Check], [Rows], [Checks], [ProofChecks], [StandardConfig]: its rows
//     of the verdict table.
//   - [CallCost], [Costs], [Latency], [WriteCostTable]: device commands
//     per write() for each variant, device configuration and [Path], and
//     the IOPS they predict; [Protocol]'s cost table. [SequenceCost]
//     counts user space's commands (a write, then fdatasync) the same way,
//     and both say which flushes find the cache empty.
package odsync
