package diocount

import (
	"github.com/flushproof/flushproof/model/verdict"
)

// Protocol is the catalog entry: the verdict table's rows and the cost
// table (counter read-modify-writes per direct I/O).
func Protocol() verdict.Protocol {
	return verdict.Protocol{
		Name:    "diocount",
		Summary: "inode_dio_begin/end counting with DAX: truncate must not free a block a direct write still lands in",
		Doc:     "docs/diocount.md",
		Rows:    Rows,
		NoBound: "writers of the kinds each row chooses (DAX, synchronous DIO, AIO) x I/Os: a writer more needs a kind",
		Cost: &verdict.Cost{
			Title: "DIO counting with DAX: counter read-modify-writes per direct I/O",
			Table: func(verdict.Params) verdict.CostTable { return costTable{} },
		},
	}
}

// costTable is the cost table; it has no flags (the counts are exact).
type costTable struct{}

func (costTable) Validate() error          { return nil }
func (costTable) Settings() map[string]any { return map[string]any{} }

func (costTable) Write(out verdict.CostOutput, _ func() string) (int, error) {
	if out.Text != nil {
		return 0, WriteCosts(out.Text)
	}
	costs, err := Costs()
	if err != nil {
		return 0, err
	}
	base := map[Kind]int{}
	for _, c := range costs {
		if c.Variant == Baseline {
			base[c.Kind] = c.RMWs()
		}
	}
	for _, c := range costs {
		out.Record(costRecord{Kind: "cost.diocount", Variant: c.Variant.String(), IO: c.Kind.String(),
			Begins: c.Begins, Ends: c.Ends, RMWsPerIO: c.RMWs(), VsBaseline: c.RMWs() - base[c.Kind], Schedules: c.Paths})
	}
	return 0, nil
}

// costRecord is a row of the cost table as JSON (kind "cost.diocount").
type costRecord struct {
	Kind       string `json:"kind"`
	Variant    string `json:"variant"`
	IO         string `json:"io"`
	Begins     int    `json:"begins"`
	Ends       int    `json:"ends"`
	RMWsPerIO  int    `json:"rmws_per_io"`
	VsBaseline int    `json:"vs_baseline"`
	Schedules  int    `json:"schedules"`
}
