package hwbench

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// twinCases are two cases of one scenario, in different groups, whose
// display names are the same ("x: y: z"): a consumer that took the group
// and variant back out of Case() could not tell them apart.
func twinCases() (a, b Result) {
	a = Result{Scenario: "S1", Group: "x: y", Variant: "z", Role: "baseline", Tool: "hwbench", Threads: 1,
		Ops: 100, Duration: time.Second}
	b = Result{Scenario: "S1", Group: "x", Variant: "y: z", Role: "baseline", Tool: "hwbench", Threads: 1,
		Ops: 100, Duration: time.Second}
	return a, b
}

func TestCaseName(t *testing.T) {
	a, b := twinCases()
	require.Equal(t, a.Case(), b.Case(), "the twins' display names must collide for the tests below to mean anything")
	assert.Equal(t, "x: y: z", a.Case())
	assert.Equal(t, "job", Result{Variant: "job"}.Case(), "no group: the variant alone")
}

func TestSameCase(t *testing.T) {
	a, b := twinCases()
	fio := a
	fio.Tool, fio.Role = "fio", "reference"
	other := a
	other.Scenario = "S2"
	for _, c := range []struct {
		name string
		x, y Result
		want bool
	}{
		{"itself", a, a, true},
		{"the same case under fio", a, fio, true},
		{"same name, other group and variant", a, b, false},
		{"same group and variant, other scenario", a, other, false},
	} {
		assert.Equal(t, c.want, c.x.sameCase(c.y), c.name)
	}
}

// The tables group comparisons by their baseline's scenario, group and
// variant, and a group's ceiling and references by scenario and group.
func TestTablesGroupByFields(t *testing.T) {
	a, b := twinCases()
	optA, optB := a, b
	optA.Variant, optA.Role = "w", "optimised"
	optB.Variant, optB.Role = "v: fast", "optimised"
	ceilA := a
	ceilA.Variant, ceilA.Role = "c", "ceiling"
	refB := b
	refB.Variant, refB.Role = "limit: 1 writer", "reference"
	rep := Report{
		Results: []Result{a, optA, ceilA, b, optB, refB},
		Comparisons: []Comparison{
			{Scenario: "S1", Name: "table A", Baseline: a, Optimised: optA},
			{Scenario: "S1", Name: "table B", Baseline: b, Optimised: optB},
		},
	}
	gs := groupTables(rep)
	require.Len(t, gs, 2, "two baselines, two tables, though their names are equal")
	assert.Equal(t, "x: y", gs[0].group)
	assert.Equal(t, []string{"table A"}, gs[0].title)
	assert.Equal(t, []Result{ceilA}, gs[0].references)
	assert.Equal(t, "x", gs[1].group)
	assert.Equal(t, []string{"table B"}, gs[1].title)
	assert.Equal(t, []Result{refB}, gs[1].references)

	var out strings.Builder
	require.NoError(t, WriteTables(&out, rep))
	text := out.String()
	assert.Contains(t, text, "S1 table A\n")
	assert.Contains(t, text, "S1 table B\n")
	// Each table's header names its cases by variant, whole.
	for _, v := range []string{"v: fast", "limit: 1 writer", "y: z"} {
		assert.Contains(t, text, v)
	}
}

func TestBenchNameFromFields(t *testing.T) {
	a, b := twinCases()
	assert.Equal(t, "group=x:_y/case=z", benchName(a))
	assert.Equal(t, "group=x/case=y:_z", benchName(b))
}

// The report lists a result once, and a twin with the same display name
// and figures as a result of its own.
func TestContainsResultByFields(t *testing.T) {
	a, b := twinCases()
	assert.True(t, containsResult([]Result{a}, a))
	assert.False(t, containsResult([]Result{a}, b))
}
