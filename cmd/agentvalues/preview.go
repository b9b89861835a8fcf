package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	values "github.com/agentvalues/values"
)

// defaultMaxInput is the most bytes preview reads, unless -max-input says
// otherwise. preview holds its whole input in memory, as PutOutput does, so
// without a cap endless input (/dev/zero, `yes |`) would run it out of
// memory. 1 GiB is four times the largest message the proxy takes
// (mcpproxy.DefaultMaxMessage), so preview refuses no result the proxy can
// carry, and it keeps preview within a few GiB of memory at worst: a regular file is read into one buffer, a pipe in chunks joined at
// the end (twice its size for a moment).
const defaultMaxInput = 1 << 30

// previewCommand prints the preview and hint of a file, or of standard input
// when the argument is "-" or absent, as PutOutput would store it.
//
// It reads at most -max-input bytes (default defaultMaxInput; 0: no cap).
// Larger input previews nothing: a regular file larger than the cap is not
// read at all, and any other input (a pipe, a device, a file that grew) is
// read up to the cap and one byte more, then dropped. Its error says the
// cap, how to raise it, and that nothing was previewed; the command exits
// with status 1. A preview of the first bytes only would describe a value
// PutOutput would never store (a cut JSON array is not JSON), so preview
// does not show one.
func previewCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("preview", stderr)
	maxInput := fs.Int64("max-input", defaultMaxInput, "read at most this many `bytes`; larger input is refused and nothing is previewed (0: no cap)")
	if err := parseFlags(fs, args, stdout, stderr); err != nil {
		return err
	}
	args = fs.Args()
	switch {
	case len(args) > 1:
		return fmt.Errorf("%w: preview takes at most one FILE", errUsage)
	case *maxInput < 0:
		return fmt.Errorf("%w: -max-input %d: want a number of bytes, or 0 for no cap", errUsage, *maxInput)
	case *maxInput == 0:
		*maxInput = -1 // 0 on the command line means: no cap
	}

	name, in := "standard input", stdin
	if len(args) == 1 && args[0] != "-" {
		f, err := os.Open(args[0])
		if err != nil {
			return err
		}
		defer f.Close()
		name, in = args[0], f
	}
	data, err := readInput(in, statSize(in), *maxInput)
	if errors.Is(err, errTooLarge) {
		return fmt.Errorf("preview: %s is %w; nothing was previewed: raise the cap with -max-input BYTES (0: no cap)", name, err)
	}
	if err != nil {
		return err
	}
	s := values.New(values.WithInlineLimit(-1)) // always the preview
	_, err = fmt.Fprintln(stdout, s.Observe(data).Text)
	return err
}
