package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/flushproof/flushproof/crashlab"
)

// parseShard reads -shard's I/N.
func parseShard(s string) (i, n int, err error) {
	a, b, ok := strings.Cut(s, "/")
	if ok {
		i, err = strconv.Atoi(a)
		if err == nil {
			n, err = strconv.Atoi(b)
		}
	}
	if !ok || err != nil || n < 1 || n > crashlab.MaxShards || i < 1 || i > n {
		return 0, 0, fmt.Errorf("want I/N with 1 <= I <= N <= %d", crashlab.MaxShards)
	}
	return i, n, nil
}

// crashlabRecordingFlags checks how -save, -load, -shard, -replay and
// -keep go together and with the rest: a usage error (done) or nothing.
func crashlabRecordingFlags(set map[string]bool, cmdArgs []string, save, load, shard, replay, keep string, stderr io.Writer) (int, bool) {
	bad := func(format string, args ...any) (int, bool) {
		fmt.Fprintf(stderr, "flushproof crashlab: "+format+"\n", args...)
		return crashlabExitUsage, true
	}
	fromRecording := []string{"fs", "image-size", "workload", "writers", "records", "flush-delay"}
	switch {
	case set["save"] && save == "":
		return bad("-save: want a file name")
	case set["load"] && load == "":
		return bad("-load: want a recording file (-save writes them)")
	case set["shard"] && !set["load"]:
		return bad("-shard %s: applies with -load (every part must replay the same recording)", shard)
	case set["keep"] && !set["replay"]:
		return bad("-keep: applies with -replay FILE:STATE")
	case set["replay"] && keep == "":
		return bad("-replay %s: give -keep DIR, a new directory for the state", replay)
	case set["save"] && (set["load"] || set["replay"]):
		return bad("-save: records; -load and -replay replay a recording")
	case set["load"] && set["replay"]:
		return bad("-load and -replay: -replay names its recording (FILE:STATE)")
	case (set["load"] || set["replay"]) && len(cmdArgs) > 0:
		return bad("-load and -replay replay a recording: no command (%s) runs", strings.Join(cmdArgs, " "))
	}
	if set["shard"] {
		if _, _, err := parseShard(shard); err != nil {
			return bad("-shard %s: %v", shard, err)
		}
	}
	if set["load"] || set["replay"] {
		for _, name := range fromRecording {
			if set[name] {
				return bad("-%s: comes from the recording with -load and -replay", name)
			}
		}
	}
	if set["replay"] {
		for _, name := range []string{"parallel", "json", "check-timeout"} {
			if set[name] {
				return bad("-%s: -replay rebuilds one state, and replays nothing", name)
			}
		}
	}
	return 0, false
}

// crashlabReplayOne is -replay FILE:STATE -keep DIR.
func crashlabReplayOne(spec, keep string, opt *crashlab.LabOptions, commandOptions func(bool) bool, stdout, stderr io.Writer) int {
	i := strings.LastIndex(spec, ":")
	index, err := strconv.Atoi(spec[i+1:])
	if i < 0 || err != nil {
		fmt.Fprintf(stderr, "flushproof crashlab: -replay %s: want FILE:STATE, STATE a state's number\n", spec)
		return crashlabExitUsage
	}
	if _, err := os.Lstat(keep); err == nil {
		fmt.Fprintf(stderr, "flushproof crashlab: -keep %s: it exists, and crashlab does not write into it; name a new directory\n", keep)
		return crashlabExitUsage
	}
	r, err := crashlab.LoadRecording(spec[:i])
	if err != nil {
		fmt.Fprintf(stderr, "flushproof crashlab: -replay: %v\n", err)
		return crashlabExitUsage
	}
	if !commandOptions(r.Workload == crashlab.CommandWorkload) {
		return crashlabExitUsage
	}
	st, err := crashlab.BuildState(r, *opt, index, keep)
	if err != nil {
		fmt.Fprintf(stderr, "flushproof crashlab: -replay: %v\n", err)
		if strings.Contains(err.Error(), "the recording has states") {
			return crashlabExitUsage
		}
		return crashlabExitError
	}
	abs, _ := filepath.Abs(keep)
	mountOpt := "loop"
	if r.FS == crashlab.XFS {
		mountOpt = "loop,nouuid"
	}
	fmt.Fprintf(stdout, "rebuilt %s\nfrom recording %s (%s, %d MiB) into %s:\n", st.Describe(), r.ID, r.FS, r.ImageSize>>20, abs)
	fmt.Fprintf(stdout, "  image  the image; to inspect it (root):\n           mkdir %s/mnt && mount -o %s %s/image %s/mnt\n", abs, mountOpt, abs, abs)
	fmt.Fprintf(stdout, "  acks   the acknowledgements it is held to, as the checker reads them\n")
	if len(opt.Check) > 0 {
		fmt.Fprintf(stdout, "           rerun the checker: (cd %s/mnt && FLUSHPROOF_DIR=$PWD sh -c %q < %s/acks)\n", abs, opt.Check[len(opt.Check)-1], abs)
	}
	fmt.Fprintf(stdout, "  state  its description\n")
	return crashlabExitPass
}

// crashlabMerge is `flushproof crashlab merge FILE...`: the -json outputs
// of the shards of one recording, summed into one, as the unsharded run
// would have written it.
func crashlabMerge(files []string, stdout, stderr io.Writer) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "flushproof crashlab merge: "+format+"\n", args...)
		return crashlabExitUsage
	}
	if len(files) == 0 {
		return fail("no file given: want the -json outputs of every shard of one recording (-load FILE -shard I/N -json)")
	}
	var states []json.RawMessage
	var stateIdx []int
	var sums []crashlabSummaryJSON
	seen := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return fail("%v", err)
		}
		var sum *crashlabSummaryJSON
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		sc.Buffer(make([]byte, 0, 1<<16), 1<<24)
		for n := 1; sc.Scan(); n++ {
			line := sc.Bytes()
			var kind struct {
				Kind  string `json:"kind"`
				Index int    `json:"index"`
			}
			if err := json.Unmarshal(line, &kind); err != nil {
				return fail("%s:%d: %v", f, n, err)
			}
			switch kind.Kind {
			case "crashlab.state":
				states = append(states, append(json.RawMessage(nil), line...))
				stateIdx = append(stateIdx, kind.Index)
			case "crashlab.summary":
				if sum != nil {
					return fail("%s:%d: a second summary", f, n)
				}
				sum = new(crashlabSummaryJSON)
				dec := json.NewDecoder(strings.NewReader(string(line)))
				dec.DisallowUnknownFields()
				if err := dec.Decode(sum); err != nil {
					return fail("%s:%d: %v", f, n, err)
				}
			default:
				return fail("%s:%d: kind %q, want crashlab.state or crashlab.summary", f, n, kind.Kind)
			}
		}
		if sum == nil {
			return fail("%s: no crashlab.summary (a run cut off?)", f)
		}
		if sum.Shard == "" || sum.Recording == "" {
			return fail("%s: not a shard of a recording (run with -load FILE -shard I/N -json)", f)
		}
		if other, dup := seen[sum.Shard]; dup {
			return fail("%s and %s are both shard %s", other, f, sum.Shard)
		}
		seen[sum.Shard] = f
		sums = append(sums, *sum)
	}
	m := sums[0]
	_, n, _ := parseShard(m.Shard)
	if len(sums) != n {
		var have []string
		for _, s := range sums {
			have = append(have, s.Shard)
		}
		sort.Strings(have)
		return fail("%d shards of %d given (%s): every part is needed", len(sums), n, strings.Join(have, ", "))
	}
	same := func(s crashlabSummaryJSON) string {
		k := "none"
		if s.K != nil {
			k = strconv.Itoa(*s.K)
		}
		return fmt.Sprintf("recording %s, %s, %s, -replays %d, -seed %d, -k %s, check %q, %d states generated, %d duplicates",
			s.Recording, s.FS, s.Workload, s.RandomStates, s.Seed, k, strings.Join(s.Check, " "), s.Generated, s.Duplicates)
	}
	for _, s := range sums[1:] {
		if _, sn, _ := parseShard(s.Shard); sn != n || same(s) != same(m) {
			return fail("shard %s (%s) and shard %s (%s) are not parts of one run", m.Shard, same(m), s.Shard, same(s))
		}
	}
	m.Shard = ""
	m.States, m.Replayed, m.Lost, m.UnmountableTorn, m.FsckErrorTorn, m.ReplayNs, m.ElapsedNs, m.PerSecond = 0, 0, 0, 0, 0, 0, 0, 0
	m.ByStatus, m.ByKind, m.Verdicts = map[string]int{}, map[string]map[string]int{}, map[string]int{}
	m.Interrupted, m.Signal = false, ""
	m.Phases = []crashlabPhaseJSON{} // each machine's own
	var errs []string
	for _, s := range sums {
		m.States += s.States
		m.Replayed += s.Replayed
		m.Lost += s.Lost
		m.UnmountableTorn += s.UnmountableTorn
		m.FsckErrorTorn += s.FsckErrorTorn
		m.ReplayNs += s.ReplayNs
		m.ElapsedNs = max(m.ElapsedNs, s.ElapsedNs)
		m.PerSecond += s.PerSecond
		for k, v := range s.ByStatus {
			m.ByStatus[k] += v
		}
		for k, byStatus := range s.ByKind {
			if m.ByKind[k] == nil {
				m.ByKind[k] = map[string]int{}
			}
			for st, v := range byStatus {
				m.ByKind[k][st] += v
			}
		}
		for k, v := range s.Verdicts {
			m.Verdicts[k] += v
		}
		if s.Interrupted {
			m.Interrupted, m.Signal = true, s.Signal
		}
		if s.Error != "" {
			errs = append(errs, fmt.Sprintf("shard %s: %s", s.Shard, s.Error))
		}
	}
	m.Error = strings.Join(errs, "; ")
	switch {
	case m.Interrupted && m.Signal == "SIGTERM":
		m.ExitCode = exitSIGTERM
	case m.Interrupted:
		m.ExitCode = exitSIGINT
	case m.Lost > 0 || m.Verdicts["fail"] > 0:
		m.ExitCode = crashlabExitFail
	case m.Error != "" || m.Verdicts["error"] > 0:
		m.ExitCode = crashlabExitError
	default:
		m.ExitCode = crashlabExitPass
	}
	m.Result = map[int]string{crashlabExitPass: "pass", crashlabExitFail: "fail", crashlabExitError: "error"}[m.ExitCode]
	if m.Result == "" {
		m.Result = "interrupted"
	}
	m.ExitMeaning = crashlabExitMeaning[m.ExitCode]
	// The states in the unsharded run's order.
	order := make([]int, len(states))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return stateIdx[order[a]] < stateIdx[order[b]] })
	for _, i := range order {
		stdout.Write(states[i])
		io.WriteString(stdout, "\n")
	}
	if err := json.NewEncoder(stdout).Encode(m); err != nil {
		fmt.Fprintf(stderr, "flushproof crashlab merge: %v\n", err)
		return crashlabExitError
	}
	return m.ExitCode
}
