// Package linearize checks device histories with porcupine: what the
// operating system saw of a device (commands submitted and ended, reads, a
// crash, reads after it) is checked against a nondeterministic sequential
// model whose hidden choice is when each write's data landed.
//
// The map of the package:
//
//   - History, Record: one device lifetime as the OS saw it.
//     [History.Operations] encodes it for porcupine (a write is a "land"
//     operation spanning its flight plus a zero-width "end"; see the table in
//     history.go), [History.String] renders it as a timeline.
//   - [Recorder]: records a History, from one goroutine or many, with a
//     logical clock ([NewRecorder]) or a real one ([NewRecorderWithClock],
//     [Monotonic]).
//   - Models: [ContractModel], the device contract written from its rules and
//     partitioned per block; [DeviceModel], device.Device (or one of its
//     wrong variants, device.Bug) lifted, partitioned only by groups of
//     blocks that no write connects, which is exact.
//   - [Check]: runs porcupine (through a power-set construction that merges
//     states by hash); on failure returns a [NotLinearizable] with the
//     history's timeline and the path of porcupine's HTML visualisation
//     ([VisualizationPath], in [VisualizationDir]).
//   - Generators for rapid: [DrawModelHistory] (device.Device under a drawn
//     schedule: what the device does) and [DrawReferenceHistory] (the same
//     schedules, crash outcomes drawn from spec.Contract: what the contract
//     allows), bounded by [GenOptions].
//
// The two directions of the device check are then: model histories must be
// linearizable with respect to ContractModel (the device is sound), and
// reference histories with respect to DeviceModel (the device is complete).
// The tests run both for every config, with the wrong devices as negative
// controls.
package linearize
