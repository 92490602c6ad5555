// Package impl will hold the real code behind the interfaces of spec
// (Device, Word, Fence) for Linux files and block devices, and the protocol
// library (FlushSeq, Syncer, DSync writer, Submitter, DIO counter). Nothing
// is implemented yet; see DESIGN.md, "The shared interface".
package impl
