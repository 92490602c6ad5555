package model

import (
	"github.com/flushproof/flushproof/model/device"
	"github.com/flushproof/flushproof/model/diocount"
	"github.com/flushproof/flushproof/model/flushseq"
	"github.com/flushproof/flushproof/model/implcheck"
	"github.com/flushproof/flushproof/model/iowq"
	"github.com/flushproof/flushproof/model/jbd2"
	"github.com/flushproof/flushproof/model/odsync"
	"github.com/flushproof/flushproof/model/verdict"
)

// Protocols is the catalog: every protocol the commands know, in the order
// of the verdict table. Adding a protocol is one line here.
func Protocols() []verdict.Protocol {
	return []verdict.Protocol{
		device.Protocol(),
		flushseq.Protocol(),
		implcheck.FlushSeqProtocol(),
		implcheck.Protocol(),
		implcheck.DSyncProtocol(),
		implcheck.DIOProtocol(),
		implcheck.SubmitProtocol(),
		odsync.Protocol(),
		iowq.Protocol(),
		diocount.Protocol(),
		jbd2.Protocol(),
	}
}

// Rows lists the verdict table's rows, protocol after protocol; the rows
// marked Proof only when proof is set, those marked Long only when long is.
func Rows(proof, long bool) []verdict.Row {
	var out []verdict.Row
	for _, p := range Protocols() {
		out = append(out, ProtocolRows(p, proof, long)...)
	}
	return out
}

// ProtocolRows lists p's rows of the verdict table: those marked Proof
// only when proof is set, those marked Long only when long is.
func ProtocolRows(p verdict.Protocol, proof, long bool) []verdict.Row {
	var out []verdict.Row
	for _, r := range p.Rows() {
		if (proof || !r.Proof) && (long || !r.Long) {
			out = append(out, r)
		}
	}
	return out
}

// Protocol returns the catalog entry called name, and whether there is one.
func Protocol(name string) (verdict.Protocol, bool) {
	for _, p := range Protocols() {
		if p.Name == name {
			return p, true
		}
	}
	return verdict.Protocol{}, false
}

// Bounded is a protocol's part of the rows at a bound of tasks x
// operations asked for (AtBound).
type Bounded struct {
	Protocol verdict.Protocol
	// Rows are its rows at the bound (Protocol.Bound.Rows); nil for a
	// protocol that takes no such bound (Protocol.Bound is nil).
	Rows []verdict.Row
}

// AtBound lists, protocol after protocol in catalog order, the rows at
// tasks x ops: with proof and long, the configurations -proof and -long
// add too (verdict.Bound.Rows). A protocol whose rows take no such bound
// is listed without rows.
func AtBound(tasks, ops int, proof, long bool) []Bounded {
	var out []Bounded
	for _, p := range Protocols() {
		b := Bounded{Protocol: p}
		if p.Bound != nil {
			b.Rows = p.Bound.Rows(tasks, ops, proof, long)
		}
		out = append(out, b)
	}
	return out
}
