//go:build !linux

package main

import "io"

// pollableStdin returns stdin as it is: reopening a pipe to read it
// without blocking is Linux's (see stdio_linux.go).
func pollableStdin(stdin io.Reader) (io.Reader, func()) { return stdin, func() {} }

// pollableStdout returns stdout as it is (see pollableStdin).
func pollableStdout(stdout io.Writer) (io.Writer, func()) { return stdout, func() {} }
