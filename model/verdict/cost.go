package verdict

import (
	"io"
	"time"
)

// Cost is a protocol's cost table: what each variant costs, counted or
// simulated from the model's own steps (`flushproof cost`).
type Cost struct {
	// Title heads the table in text output.
	Title string
	// Params are the table's settings: the command makes each a flag
	// (prefixed with the protocol's name where two tables share a name).
	Params []Param
	// Table returns the table for the values given, to be validated and
	// run.
	Table func(p Params) CostTable
}

// Param is one setting of a cost table.
type Param struct {
	Name  string // short name, "tasks"
	Usage string
	// Default is the value when none is given; its type is the setting's:
	// int, uint64, float64, bool or time.Duration.
	Default any
}

// Params are the values a command gives a table's Params, by short name.
type Params interface {
	Int(name string) int
	Uint64(name string) uint64
	Float64(name string) float64
	Bool(name string) bool
	Duration(name string) time.Duration
	// Set reports whether the value was given, not defaulted.
	Set(name string) bool
	// Flag is the setting's name as the user gives it, for errors.
	Flag(name string) string
}

// CostTable is a cost table with its settings given.
type CostTable interface {
	// Validate checks the settings' values; an error names the setting as
	// the user gives it (Params.Flag) and the allowed range.
	Validate() error
	// Write computes the table and writes it a row at a time: as text to
	// out.Text, or as one JSON object (with a "kind") per row to
	// out.Record. It stops early, with the rows it has, once stop returns
	// a reason. It returns how many rows break a promise of the protocol
	// (a variant that is not a mutant losing acknowledged data): the cost
	// command then exits 1.
	Write(out CostOutput, stop func() string) (unexpected int, err error)
	// Settings are the table's settings, for the JSON summary, under
	// snake_case keys unique across tables.
	Settings() map[string]any
}

// CostOutput is where a cost table writes: exactly one of the two is set.
type CostOutput struct {
	Text   io.Writer
	Record func(any)
}
