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
		for _, r := range p.Rows() {
			if (proof || !r.Proof) && (long || !r.Long) {
				out = append(out, r)
			}
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
