//go:build unix

package values

import (
	"syscall"
	"testing"
	"time"
)

// cpuClock returns the CPU time the process has used, user and system: a
// benchmark's CPU per operation, unlike its wall time, does not grow when
// other processes share the machine.
func cpuClock() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the process's CPU time per operation since start as
// cpu-ns/op: with its garbage collection and page faults, which wall time
// on a busy machine shows only in part.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuClock()-start)/float64(b.N), "cpu-ns/op")
}
