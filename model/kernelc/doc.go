// Package kernelc reads kernel C harnesses (docs/kernel-c.md): kernel
// functions pasted as the kernel writes them, in sections that name the
// kernel file each comes from, with stubs, a harness() that spawns the
// tasks, and an optional recovery() that runs on every crash image. It
// turns a harness into a litmus.Test that model/durable checks like a
// durability litmus file.
//
// The API:
//   - [Parse]: a harness to a litmus.Test (threads, locations, initial
//     state, header lines, recovery code); every refusal is a
//     *litmus.Error at a line and column of the file.
//   - [ReadPatches], [ReadFile]: a litmus file or a harness with kernel
//     patches applied in memory (check -patch); [Sections] finds a
//     harness's kernel-file sections, where a patch's hunks for that file
//     go; [IsHarness] tells a harness (FILE.c) from a litmus file.
//   - [Header]: the kernel model header, flushproof/kernel.h, which every
//     harness includes.
//
// The files:
//   - front.go: the C front end, modernc.org/cc/v4 (preprocessing,
//     parsing, type checking) over the embedded header, its errors at
//     the file's positions; include/flushproof/kernel.h.
//   - lower.go: the file scope (functions, file-scope objects and their
//     initializers, harness(), recovery()) and the values lowering
//     computes with; stmt.go: statements, inlined calls' frames, labels
//     and jumps; facts.go: what is known along the code (constants, the
//     object each pointer points to) and where paths meet.
//   - expr.go: expressions; place.go: the objects they designate, read
//     and written (registers, shared locations, pointers resolved while
//     lowering, arrays); call.go: calls, inlined or primitives of the
//     header (atomics, barriers, locks, completions, bios); ccnodes.go:
//     helpers over cc's syntax tree.
//   - sections.go, variants.go: sections and patches.
package kernelc
