package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flushproof/flushproof/model"
	"github.com/flushproof/flushproof/model/verdict"
)

// costTables are the catalog's protocols that have a cost table, in order.
func costTables() []verdict.Protocol {
	var out []verdict.Protocol
	for _, p := range model.Protocols() {
		if p.Cost != nil {
			out = append(out, p)
		}
	}
	return out
}

// runCost prints the cost table of every protocol of the catalog that has
// one (or of the one -protocol names), computed from the model. alone names
// the table when the command is an alias of cost -protocol (skipshare).
func runCost(cmd, alone string, args []string, stdout, stderr io.Writer) int {
	protocols := costTables()
	var names []string
	for _, p := range protocols {
		names = append(names, p.Name)
	}
	only := alone
	if only == "" {
		only = protocolArg(args)
	}
	if only != "" {
		i := slices.IndexFunc(protocols, func(p verdict.Protocol) bool { return p.Name == only })
		if i < 0 {
			fmt.Fprintf(stderr, "flushproof %s: -protocol must be one of %s (or absent for every table), got %q\n", cmd, strings.Join(names, ", "), only)
			return exitUsage
		}
		protocols = protocols[i : i+1]
	}

	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	if alone == "" {
		fs.String("protocol", "", "only this protocol's table: "+strings.Join(names, ", ")+"; its flags then go without the \"<protocol>.\" prefix")
	}
	jsonOut := fs.Bool("json", false, "print JSON Lines instead of the tables: one object per table row, then a cost.summary (docs/cli.md)")
	// A flag two tables share is given as -<protocol>.<flag> when every
	// table runs; alone, a table's flags keep their own names.
	shared := map[string]int{}
	for _, p := range protocols {
		for _, s := range p.Cost.Params {
			shared[s.Name]++
		}
	}
	params := make([]*flagParams, len(protocols))
	for i, p := range protocols {
		params[i] = defineParams(fs, p.Cost.Params, func(s string) string {
			if shared[s] > 1 {
				return p.Name + "." + s
			}
			return s
		})
	}
	fs.Usage = func() {
		what := "the cost tables of the protocols"
		if len(protocols) == 1 {
			what = "the cost table of " + protocols[0].Name + " (" + protocols[0].Cost.Title + ")"
		}
		fmt.Fprintf(stderr, "usage: flushproof %s [flags]\n\nPrints %s, computed from the model; see docs/cli.md.\n\nflags:\n", cmd, what)
		fs.PrintDefaults()
	}
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	tables := make([]verdict.CostTable, len(protocols))
	var errs []error
	for i, p := range protocols {
		tables[i] = p.Cost.Table(params[i])
		errs = append(errs, tables[i].Validate())
	}
	if code := usageError(stderr, cmd, errs...); code >= 0 {
		return code
	}

	in := catchInterrupts(stderr, true)
	defer in.release()
	start := time.Now()
	// Rows go out through gate, which a signal closes: the tables printed
	// before it stay, and a table still running writes nothing more.
	gate := &gatedWriter{w: stdout}
	enc := jsonLines(gate)
	sum := costSummary{Kind: "cost.summary", Schema: 1, Settings: map[string]any{}}
	printed := []string{}
	code := exitOK
	for i, p := range protocols {
		out := verdict.CostOutput{Text: gate}
		if *jsonOut {
			out = verdict.CostOutput{Record: func(r any) { enc.Encode(r) }}
		} else {
			if i > 0 {
				fmt.Fprintln(gate)
			}
			fmt.Fprintf(gate, "%s\n\n", p.Cost.Title)
		}
		type result struct {
			unexpected int
			err        error
		}
		done := make(chan result, 1)
		go func() {
			n, err := tables[i].Write(out, in.stop)
			done <- result{n, err}
		}()
		var r result
		select {
		case r = <-done:
		case <-in.done:
			gate.close()
		}
		if in.signal() != nil {
			code = in.exitCode()
			break
		}
		if r.err != nil {
			fmt.Fprintf(stderr, "flushproof %s: %s: %v\n", cmd, p.Name, r.err)
			code = exitFailed
			break
		}
		if r.unexpected > 0 {
			code = max(code, exitUnexpected)
		}
		printed = append(printed, p.Name)
		maps.Copy(sum.Settings, tables[i].Settings())
	}
	gate.close()
	sum.Tables, sum.Interrupted, sum.Signal = printed, in.signal() != nil, in.signalName()
	sum.ElapsedNS, sum.ExitCode = int64(time.Since(start)), code
	if *jsonOut {
		jsonLines(stdout).Encode(sum)
	} else if in.signal() != nil {
		fmt.Fprintf(stdout, "\nINTERRUPTED by %s: %d of %d tables printed\n", in.signalName(), len(printed), len(protocols))
	}
	return code
}

// costSummary is the JSON object of kind "cost.summary": its own fields
// first, then the settings of the tables printed, sorted by key.
type costSummary struct {
	Kind        string         `json:"kind"`
	Schema      int            `json:"schema"`
	Tables      []string       `json:"tables"`
	Interrupted bool           `json:"interrupted"`
	Signal      string         `json:"signal"`
	ElapsedNS   int64          `json:"elapsed_ns"`
	ExitCode    int            `json:"exit_code"`
	Settings    map[string]any `json:"-"`
}

// summaryFields are costSummary's own JSON names, which no table setting may take.
var summaryFields = map[string]bool{"kind": true, "schema": true, "tables": true, "interrupted": true,
	"signal": true, "elapsed_ns": true, "exit_code": true}

// MarshalJSON writes the fields in order, "kind" first, then the settings.
func (s costSummary) MarshalJSON() ([]byte, error) {
	type fields costSummary // without the method
	head, err := json.Marshal(fields(s))
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Write(head[:len(head)-1])
	for _, k := range slices.Sorted(maps.Keys(s.Settings)) {
		if summaryFields[k] {
			return nil, fmt.Errorf("cost summary: a table's setting %q has the name of a summary field", k)
		}
		key, _ := json.Marshal(k)
		val, err := json.Marshal(s.Settings[k])
		if err != nil {
			return nil, fmt.Errorf("cost summary: setting %s: %w", k, err)
		}
		fmt.Fprintf(&b, ",%s:%s", key, val)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// protocolArg finds the value of -protocol in args before they are parsed:
// it decides which flags the other tables define.
func protocolArg(args []string) string {
	for i, a := range args {
		if a == "--" {
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "protocol" {
			continue
		}
		if hasValue {
			return value
		}
		if i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// gatedWriter passes writes on until it is closed, then drops them.
type gatedWriter struct {
	mu     sync.Mutex
	w      io.Writer
	closed bool
}

func (g *gatedWriter) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return len(p), nil
	}
	return g.w.Write(p)
}

func (g *gatedWriter) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// flagParams are a cost table's settings as flags of the command
// (verdict.Params): the model packages describe their settings, the
// command alone defines flags.
type flagParams struct {
	fs   *flag.FlagSet
	name func(short string) string
	vals map[string]any // by short name: the flag's value, a pointer
}

// defineParams defines a flag on fs for each of ps, called name(short).
func defineParams(fs *flag.FlagSet, ps []verdict.Param, name func(string) string) *flagParams {
	f := &flagParams{fs: fs, name: name, vals: map[string]any{}}
	for _, p := range ps {
		n := name(p.Name)
		switch d := p.Default.(type) {
		case int:
			f.vals[p.Name] = fs.Int(n, d, p.Usage)
		case uint64:
			f.vals[p.Name] = fs.Uint64(n, d, p.Usage)
		case float64:
			f.vals[p.Name] = fs.Float64(n, d, p.Usage)
		case bool:
			f.vals[p.Name] = fs.Bool(n, d, p.Usage)
		case time.Duration:
			f.vals[p.Name] = fs.Duration(n, d, p.Usage)
		default:
			panic(fmt.Sprintf("cost table setting %s: a default of type %T (want int, uint64, float64, bool or time.Duration)", p.Name, p.Default))
		}
	}
	return f
}

// value returns the flag of setting short, of type *T.
func value[T any](f *flagParams, short string) T {
	v, ok := f.vals[short].(*T)
	if !ok {
		panic(fmt.Sprintf("cost table setting %q: none of that name and type", short))
	}
	return *v
}

func (f *flagParams) Int(n string) int                { return value[int](f, n) }
func (f *flagParams) Uint64(n string) uint64          { return value[uint64](f, n) }
func (f *flagParams) Float64(n string) float64        { return value[float64](f, n) }
func (f *flagParams) Bool(n string) bool              { return value[bool](f, n) }
func (f *flagParams) Duration(n string) time.Duration { return value[time.Duration](f, n) }
func (f *flagParams) Flag(n string) string            { return f.name(n) }

func (f *flagParams) Set(n string) bool {
	set := false
	f.fs.Visit(func(fl *flag.Flag) { set = set || fl.Name == f.name(n) })
	return set
}
