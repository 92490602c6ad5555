package model

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/explore"
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

// TestCostTablesAlone: each cost table defines flags of its own that parse
// alone (as `cost -protocol P` does) and validate at their defaults.
func TestCostTablesAlone(t *testing.T) {
	for _, p := range Protocols() {
		if p.Cost == nil {
			continue
		}
		fs := flag.NewFlagSet(p.Name, flag.ContinueOnError)
		table := p.Cost.Flags(fs, func(s string) string { return s })
		require.NoError(t, fs.Parse(nil), p.Name)
		assert.NoError(t, table.Validate(), "%s: defaults are valid", p.Name)
		assert.NotEmpty(t, p.Cost.Title, p.Name)
	}
}
