package model

import (
	"os"
	"path/filepath"
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
