// Package world runs Go code written against the spec interfaces (Device,
// Word, Fence, WaitQueue) as coroutines in a simulated machine where every
// call that another task can see is a scheduling point (docs/world.md,
// "Scheduling points", has the table and why the others hide no run).
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
//   - [Search]: every run of a [Program] up to a bound, on the generic
//     explorer, with the program's declarations ([Task.Checkpoint],
//     [World.Shared], [World.Symmetric]) as reductions; package worldtest
//     wraps it for a test.
//
// The files, as loom splits its facade from its runtime: world.go (World,
// Config, Run), handles.go (what a task calls), coro.go (the coroutines
// and the call that yields to the scheduler), sched.go (the enabled
// actions and the step that performs one), device.go (the device and the
// World queries about it), trace.go (events and timelines); search.go
// (Search: states, expansion, replays), key.go (a world's state key),
// obligations.go (MustSurvive, Assert), ahead.go (successors kept ahead,
// worlds kept live), replay.go (Replay, Choices, Script), symmetry.go,
// judge.go and table.go are the search, which keeps its bookkeeping in a
// world in one struct (searchHooks).
package world
