package model

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/verdict"
)

// TestCatalog: every protocol has a name, a summary and a doc page that
// exists; row names are unique, start with the protocol's name (the
// device's rows with its bug's), and are the names of the verdicts their
// searches return (cut short at one state, so the test stays cheap); a
// negative control's verdict says so.
func TestCatalog(t *testing.T) {
	names := map[string]bool{}
	rows := map[string]bool{}
	for _, p := range Protocols() {
		require.NotEmpty(t, p.Name)
		assert.False(t, names[p.Name], "protocol %q listed twice", p.Name)
		names[p.Name] = true
		assert.NotEmpty(t, p.Summary, p.Name)
		_, err := os.Stat(filepath.Join("..", p.Doc))
		assert.NoError(t, err, "%s: its doc page", p.Name)
		got, ok := Protocol(p.Name)
		assert.True(t, ok, p.Name)
		assert.Equal(t, p.Name, got.Name)

		rs := p.Rows()
		require.NotEmpty(t, rs, p.Name)
		for _, r := range rs {
			n := r.Name()
			assert.False(t, rows[n], "row %q twice", n)
			rows[n] = true
			if p.Name != "device" {
				assert.True(t, strings.HasPrefix(n, p.Name+" "), "%s: row %q", p.Name, n)
			}
			v, err := r.Check(explore.Options{MaxStates: 1})
			require.NoError(t, err, n)
			assert.Equal(t, n, v.Name(), "the verdict is for its row")
			assert.Equal(t, r.Negative, v.Negative, n)
		}
	}
	_, ok := Protocol("nope")
	assert.False(t, ok)
	assert.Less(t, len(Rows(false, false)), len(Rows(true, false)), "proof rows only on request")
	assert.Less(t, len(Rows(true, false)), len(Rows(true, true)), "long rows only on request")
}

// TestCostTablesAlone: each cost table's settings have names of their
// own and defaults of a type a command can make a flag of, and the table
// validates at its defaults.
func TestCostTablesAlone(t *testing.T) {
	for _, p := range Protocols() {
		if p.Cost == nil {
			continue
		}
		names := map[string]bool{}
		for _, s := range p.Cost.Params {
			assert.False(t, names[s.Name], "%s: setting %s twice", p.Name, s.Name)
			names[s.Name] = true
			switch s.Default.(type) {
			case int, uint64, float64, bool, time.Duration:
			default:
				t.Errorf("%s: setting %s: a default of type %T", p.Name, s.Name, s.Default)
			}
			assert.NotEmpty(t, s.Usage, "%s: setting %s", p.Name, s.Name)
		}
		table := p.Cost.Table(defaults(p.Cost.Params))
		assert.NoError(t, table.Validate(), "%s: defaults are valid", p.Name)
		assert.NotEmpty(t, p.Cost.Title, p.Name)
	}
}

// defaults are a cost table's settings at their defaults, none given.
type defaults []verdict.Param

func (d defaults) get(n string) any {
	for _, p := range d {
		if p.Name == n {
			return p.Default
		}
	}
	panic("no setting " + n)
}

func (d defaults) Int(n string) int                { return d.get(n).(int) }
func (d defaults) Uint64(n string) uint64          { return d.get(n).(uint64) }
func (d defaults) Float64(n string) float64        { return d.get(n).(float64) }
func (d defaults) Bool(n string) bool              { return d.get(n).(bool) }
func (d defaults) Duration(n string) time.Duration { return d.get(n).(time.Duration) }
func (d defaults) Set(string) bool                 { return false }
func (d defaults) Flag(n string) string            { return n }

// TestBoundRows: every protocol either takes a bound of tasks x
// operations or says what its bound is instead. At the bound of its
// default table a protocol's rows are that table's, name for name; at
// -proof's and -long's bounds, with -proof and -long, they include
// those rows; at any other bound every row is named after it.
func TestBoundRows(t *testing.T) {
	defaults := map[string][2]int{ // the default table's bound
		"xfs-flushseq": {2, 2}, "impl.FlushSeq": {2, 1}, "impl.Syncer": {2, 1}, "impl.DSyncWriter": {2, 2},
		"impl.DIOCounter": {2, 1}, "impl.Submitter": {3, 1},
	}
	larger := map[string][2]int{ // -proof's bound, where it is one bound
		"xfs-flushseq": {3, 2}, "impl.FlushSeq": {2, 2}, "impl.Syncer": {2, 2}, "impl.DSyncWriter": {3, 2},
		"impl.DIOCounter": {2, 2}, "impl.Submitter": {3, 2},
	}
	long := map[string][2]int{"xfs-flushseq": {3, 2}, "impl.FlushSeq": {3, 2}, "impl.Syncer": {3, 2}}
	names := func(rs []verdict.Row) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.Name())
		}
		return out
	}
	for _, p := range Protocols() {
		b := p.Bound
		if b == nil {
			assert.NotEmpty(t, p.NoBound, "%s: no Bound, and no word of what its bound is", p.Name)
			continue
		}
		assert.Empty(t, p.NoBound, p.Name)
		assert.NotEmpty(t, b.Task, p.Name)
		assert.NotEmpty(t, b.Op, p.Name)
		assert.Equal(t, 1, b.Tasks.Min, p.Name)
		assert.Equal(t, 1, b.Ops.Min, p.Name)
		if d, ok := defaults[p.Name]; ok {
			got := b.Rows(d[0], d[1], false, false)
			assert.Equal(t, names(ProtocolRows(p, false, false)), names(got), "%s at %d x %d", p.Name, d[0], d[1])
			for i, r := range ProtocolRows(p, false, false) {
				assert.Equal(t, r.Negative, got[i].Negative, r.Name())
				assert.NoError(t, got[i].Unfit, r.Name())
			}
		}
		for set, at := range map[string]map[string][2]int{"proof": larger, "long": long} {
			d, ok := at[p.Name]
			if !ok {
				continue
			}
			got := names(b.Rows(d[0], d[1], set == "proof", set == "long"))
			for _, r := range p.Rows() {
				if set == "proof" && r.Proof || set == "long" && r.Long {
					assert.Contains(t, got, r.Name(), "%s: -%s's row at %d x %d", p.Name, set, d[0], d[1])
				}
			}
		}
		for _, at := range [][2]int{{1, 1}, {3, 3}, {4, 2}} {
			rows := b.Rows(at[0], at[1], true, true)
			require.NotEmpty(t, rows, p.Name)
			want := fmt.Sprintf("%d %s x %d %s", at[0], verdict.Plural(at[0], b.Task), at[1], verdict.Plural(at[1], b.Op))
			seen := map[string]bool{}
			for _, r := range rows {
				assert.True(t, strings.HasPrefix(r.Bound, want), "%s: row %q at %s", p.Name, r.Name(), want)
				assert.False(t, seen[r.Name()], "row %q twice", r.Name())
				seen[r.Name()] = true
			}
		}
	}
}

// TestBoundUnfit: a row at a bound its model cannot hold says why, and
// the same configuration at a bound it can hold does not.
func TestBoundUnfit(t *testing.T) {
	for _, tc := range []struct {
		protocol  string
		tasks, op int
		unfit     []string // configurations (row's Config) that cannot take it
	}{
		{"xfs-flushseq", 4, 4, []string{"Relaxed", "LKMM"}}, // 16 flushes: 15 live stores a location
		{"xfs-flushseq", 3, 5, nil},
		{"xfs-flushseq", 1, 120, []string{"Relaxed", "LKMM"}},
		{"odsync", 3, 6, []string{"cache+fua", "cache+emulated-fua", "no-cache"}}, // 18 calls: 16 flushes in a history
		{"odsync", 4, 4, nil},
	} {
		p, ok := Protocol(tc.protocol)
		require.True(t, ok)
		for _, r := range p.Bound.Rows(tc.tasks, tc.op, true, true) {
			if slices.Contains(tc.unfit, r.Config) {
				assert.Error(t, r.Unfit, r.Name())
			} else {
				assert.NoError(t, r.Unfit, r.Name())
			}
		}
	}
}
