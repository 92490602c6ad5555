package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
)

// profileFlags are -cpuprofile and -memprofile: where to write the run's
// CPU profile and, at its end, its heap profile (go tool pprof reads both).
type profileFlags struct {
	cpu, mem *string
}

func addProfileFlags(fs *flag.FlagSet) profileFlags {
	return profileFlags{
		cpu: fs.String("cpuprofile", "", "write a CPU profile of the whole run to this `file` (go tool pprof); an existing file is refused"),
		mem: fs.String("memprofile", "", "write a heap profile at the end of the run to this `file` (go tool pprof); an existing file is refused"),
	}
}

// start begins the CPU profile, if asked for, and returns what ends both
// profiles. A profile file that exists is refused rather than overwritten;
// the error says which flag named it.
func (p profileFlags) start(stderr io.Writer, cmd string) (stop func(), ok bool) {
	create := func(flagName, path string) *os.File {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			fmt.Fprintf(stderr, "flushproof %s: -%s: %v\n", cmd, flagName, err)
			return nil
		}
		return f
	}
	var cpuFile, memFile *os.File
	if *p.cpu != "" {
		if cpuFile = create("cpuprofile", *p.cpu); cpuFile == nil {
			return nil, false
		}
		if err := pprof.StartCPUProfile(cpuFile); err != nil {
			fmt.Fprintf(stderr, "flushproof %s: -cpuprofile: %v\n", cmd, err)
			cpuFile.Close()
			return nil, false
		}
	}
	if *p.mem != "" {
		if memFile = create("memprofile", *p.mem); memFile == nil {
			if cpuFile != nil {
				pprof.StopCPUProfile()
				cpuFile.Close()
			}
			return nil, false
		}
	}
	return func() {
		if cpuFile != nil {
			pprof.StopCPUProfile()
			if err := cpuFile.Close(); err != nil {
				fmt.Fprintf(stderr, "flushproof %s: -cpuprofile: %v\n", cmd, err)
			}
		}
		if memFile != nil {
			runtime.GC()
			if err := pprof.WriteHeapProfile(memFile); err != nil {
				fmt.Fprintf(stderr, "flushproof %s: -memprofile: %v\n", cmd, err)
			}
			if err := memFile.Close(); err != nil {
				fmt.Fprintf(stderr, "flushproof %s: -memprofile: %v\n", cmd, err)
			}
		}
	}, true
}
