// Package spec states what must hold: the contract of a block device with a
// volatile write cache, FUA writes and cache flushes, what a crash may leave,
// and the durability obligations that follow. It is pure: no I/O, no
// goroutines, and it imports nothing of this module.
//
// The map of the package:
//
//   - [Config]: the device as the block layer sees it (volatile cache, native FUA).
//   - [Event]: the vocabulary of a device history (submit, complete, fail,
//     crash, plus the events the contract ignores: landing and reads).
//   - [Contract]: the contract itself, as an incremental monitor over a
//     history. [Contract.Allowed] answers "what may this block hold after a
//     crash now", [Contract.Obligations] lists what must survive and why.
//   - [Device], [Word], [Fence], [WaitQueue]: the interfaces shared by the model world and
//     the real implementations (impl/; docs/impl.md, "The seam").
//
// Sources for every rule are cited where the rule is coded; the two main ones
// are Linux Documentation/block/writeback_cache_control.rst and
// block/blk-flush.c. docs/semantics.md explains the contract for users.
package spec
