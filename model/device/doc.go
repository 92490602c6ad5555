// Package device is the block device with a volatile write cache as an
// operational state machine, checked against spec.Contract, the device
// rules, in both directions.
//
//   - [Device]: submit, land, complete, fail, flush, crash; each step an
//     event of spec's vocabulary. [Bug] selects a deliberately wrong device
//     (the negative controls).
//   - [System]: the device driven by writer and flusher tasks ([Workload]),
//     checked after every crash against spec.Contract (soundness:
//     [CheckSound]); [CompletenessSystem] checks that every outcome the
//     contract allows is reachable ([CheckComplete]).
//   - [Check], [Rows], [Protocol]: the "device" rows of the verdict table.
//   - [Explain]: the crash outcomes the device can produce for one given
//     history, over every landing order (rapid and porcupine checks).
package device
