package main

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func init() {
	newLineKeeper = func(b *testing.B, size int) lineKeeper { return &mappedKeeper{b: b, size: size} }
}

// A mappedKeeper keeps a line in a private anonymous mapping made for it,
// as the proxy reads a long line (mcpproxy's longLine): each page costs
// when the line first reaches it.
type mappedKeeper struct {
	b    *testing.B
	size int    // of the result; a line of a structured result carries it about twice, escaped once
	m    []byte // the mapping, nil between lines
	n    int    // bytes of it written
}

func (k *mappedKeeper) write(chunk []byte) {
	if k.m == nil {
		m, err := unix.Mmap(-1, 0, 3*k.size+1<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			k.b.Fatal(err)
		}
		k.m = m
	}
	if k.n+len(chunk) > len(k.m) {
		k.b.Fatalf("a response line of more than %d bytes for a result of %d", len(k.m), k.size)
	}
	k.n += copy(k.m[k.n:], chunk)
}

func (k *mappedKeeper) end() {
	if k.m != nil {
		unix.Munmap(k.m)
	}
	k.m, k.n = nil, 0
}

func (k *mappedKeeper) cpu() (user, sys time.Duration) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		k.b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}
