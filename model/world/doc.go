// Package world runs Go code written against the spec interfaces (Device,
// Word, Fence, WaitQueue) as coroutines in a simulated machine where every
// call is a scheduling point.
//
//   - [World]: the machine: tasks, a device with a volatile cache (its
//     crash set follows spec.Contract; a differential test holds it to it),
//     memory under SC, TSO, Relaxed or LKMM ([Config]; under LKMM a
//     pending barrier taking effect is a step, [ActBarrier]). [World.Run] runs a body per
//     task; a [Chooser] picks every step (which task, which device event,
//     which store a load reads); [RandomChooser] is one.
//   - [Task]: a task's handles: [Task.Device], [Task.Word], [Task.Fence],
//     [Task.WaitQueue]; [Task.Reached] marks a typed [Milestone] in the
//     trace, [Task.Note] free text.
//   - [World.Trace]: the [Event]s of a run, for trace validation against a
//     protocol's state machine; [World.MayLeave] and [World.Survives]: what
//     a crash may leave on a block.
package world
