package verdict

import (
	"flag"
	"io"
)

// Cost is a protocol's cost table: what each variant costs, counted or
// simulated from the model's own steps (`flushproof cost`).
type Cost struct {
	// Title heads the table in text output.
	Title string
	// Flags defines the table's flags on fs, the flag called short under
	// name(short) (the cost command prefixes a name that two tables
	// share), and returns the table, to be run once fs is parsed.
	Flags func(fs *flag.FlagSet, name func(short string) string) CostTable
}

// CostTable is a cost table whose flags are defined.
type CostTable interface {
	// Validate checks the parsed flag values; an error names the flag as
	// it was defined and the allowed range.
	Validate() error
	// Write computes the table and writes it a row at a time: as text to
	// out.Text, or as one JSON object (with a "kind") per row to
	// out.Record. It stops early, with the rows it has, once stop returns
	// a reason. It returns how many rows break a promise of the protocol
	// (a variant that is not a mutant losing acknowledged data): the cost
	// command then exits 1.
	Write(out CostOutput, stop func() string) (unexpected int, err error)
	// Settings are the table's flag values, for the JSON summary, under
	// snake_case keys unique across tables.
	Settings() map[string]any
}

// CostOutput is where a cost table writes: exactly one of the two is set.
type CostOutput struct {
	Text   io.Writer
	Record func(any)
}
