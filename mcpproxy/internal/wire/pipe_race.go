//go:build linux && race

package wire

import "sync/atomic"

// ioSync orders, for the race detector, what a Pipe reads after every
// write before it, as the syscall package orders its reads and writes
// (raw system calls are not annotated): a write releases it before its
// bytes go out, a read acquires it after they came in.
var ioSync atomic.Int64

func ioRelease() { ioSync.Add(1) }
func ioAcquire() { ioSync.Load() }
