package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// cpuProfileEnv, set in the environment of a benchmark run, names a file
// to which the test binary run as `agentvalues proxy` (a child with
// runMainEnv) writes the CPU profile of its whole life, as it exits: the
// proxy's profile for issue 31's ratios, e.g.
//
//	AGENTVALUES_TEST_PROXY_CPUPROFILE=/tmp/proxy.prof go test -run='^$' \
//	    -bench='ProxyBlob/text-100MiB/proxy' -benchtime=1x ./cmd/agentvalues
//	go tool pprof -top cmd/agentvalues.test /tmp/proxy.prof
//
// Each proxy child writes the same file: select one proxy sub-benchmark.
// The server behind the proxy, the same binary, is not profiled.
const cpuProfileEnv = "AGENTVALUES_TEST_PROXY_CPUPROFILE"

func init() {
	name := os.Getenv(cpuProfileEnv)
	if name == "" || os.Getenv(runMainEnv) != "1" || len(os.Args) < 2 || os.Args[1] != "proxy" {
		return
	}
	f, err := os.Create(name)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "proxy profile:", err)
		return
	}
	next := beforeChildExit // set by an init of a file before this one, if any
	beforeChildExit = func() {
		pprof.StopCPUProfile()
		f.Close()
		if next != nil {
			next()
		}
	}
}
