// Package hwbench will run the impl protocols on real devices, baseline
// against optimised (`go test ./hwbench -device=PATH`). Nothing is
// implemented yet; see DESIGN.md, "hwbench".
package hwbench
