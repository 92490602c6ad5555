package iowq

import (
	"time"

	"github.com/flushproof/flushproof/internal/flagcheck"
	"github.com/flushproof/flushproof/model/verdict"
)

// Protocol is the catalog entry: the verdict table's rows and the cost
// table (lock waits of io-wq workers writing one file, simulated).
func Protocol() verdict.Protocol {
	return verdict.Protocol{
		Name:    "iowq",
		Summary: "io-wq hashing of O_DIRECT writes: serialised per inode or parallel, against each file system's locking",
		Doc:     "docs/iowq.md",
		Rows:    Rows,
		NoBound: "a program of writes per worker, chosen for each race",
		Cost: &verdict.Cost{
			Title: "io-wq hashing of O_DIRECT writes: waits per write, simulated",
			Params: []verdict.Param{
				{Name: "runs", Default: 50, Usage: "io-wq: simulated runs per line, 1 to 100000"},
				{Name: "seed", Default: uint64(1), Usage: "io-wq: seed of the first run"},
			},
			Table: func(p verdict.Params) verdict.CostTable {
				return &costTable{name: p.Flag, runs: p.Int("runs"), seed: p.Uint64("seed")}
			},
		},
	}
}

type costTable struct {
	name func(string) string
	runs int
	seed uint64
}

func (t *costTable) Validate() error { return flagcheck.IntIn(t.name("runs"), t.runs, 1, 100000) }

func (t *costTable) Settings() map[string]any {
	return map[string]any{"iowq_runs": t.runs, "iowq_seed": t.seed}
}

func (t *costTable) Write(out verdict.CostOutput, _ func() string) (int, error) {
	lat := DefaultLatency()
	if out.Text != nil {
		return 0, WriteContention(out.Text, lat, t.runs, t.seed)
	}
	rs, err := ContentionReport(lat, t.runs, t.seed)
	if err != nil {
		return 0, err
	}
	cases := ContentionCases()
	for i, r := range rs {
		per := func(n int) float64 {
			if r.Writes == 0 {
				return 0
			}
			return float64(n) / float64(r.Writes)
		}
		row := costRecord{Kind: "cost.iowq", Workload: cases[i].Workload, Submit: r.Config.Submit.String(), FS: r.Config.FS.String(),
			Writes: r.Writes, LockWaitsPerWrite: per(r.LockWaits), HashWaitsPerWrite: per(r.HashWaits),
			DIOWaitsPerWrite: per(r.DrainWaits), EAGAINPerWrite: per(r.Retries), WritesPerSecond: r.PerSecond(), Runs: r.Runs}
		if r.Writes > 0 {
			row.WaitedPerWriteNS = int64((r.LockWait + r.HashWait + r.DrainWait) / time.Duration(r.Writes))
			row.LatencyNS = int64(r.Latency / time.Duration(r.Writes))
		}
		out.Record(row)
	}
	return 0, nil
}

// costRecord is a row of the contention table as JSON (kind "cost.iowq").
type costRecord struct {
	Kind              string  `json:"kind"`
	Workload          string  `json:"workload"`
	Submit            string  `json:"submit"`
	FS                string  `json:"fs"`
	Runs              int     `json:"runs"`
	Writes            int     `json:"writes"`
	LockWaitsPerWrite float64 `json:"lock_waits_per_write"`
	HashWaitsPerWrite float64 `json:"hash_waits_per_write"`
	DIOWaitsPerWrite  float64 `json:"dio_waits_per_write"`
	EAGAINPerWrite    float64 `json:"eagain_per_write"`
	WaitedPerWriteNS  int64   `json:"waited_per_write_ns"`
	LatencyNS         int64   `json:"latency_ns"`
	WritesPerSecond   float64 `json:"writes_per_second"`
}
