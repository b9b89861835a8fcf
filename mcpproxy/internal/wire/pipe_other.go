//go:build !linux

package wire

import "os"

// A Pipe is Linux's (see pipe_linux.go): elsewhere NewPipe returns nil and
// files are read and written as they are.
type Pipe struct{ f *os.File }

// NewPipe returns nil: raw pipe I/O is Linux's.
func NewPipe(*os.File) *Pipe { return nil }

// File returns the file p reads and writes.
func (p *Pipe) File() *os.File { return p.f }

func (p *Pipe) Read(b []byte) (int, error)      { return p.f.Read(b) }
func (p *Pipe) Write(b []byte) (int, error)     { return p.f.Write(b) }
func (p *Pipe) WriteSome(b []byte) (int, error) { return p.f.Write(b) } // never called: there is no Pipe
func (p *Pipe) Close() error                    { return p.f.Close() }

// Kick does nothing: only Linux's raw pipes let the runtime's monitor
// sleep through the process's work.
func Kick() {}
