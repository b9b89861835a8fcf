package main

import (
	"fmt"
	"io"
	"os"

	values "github.com/agentvalues/values"
)

// previewCommand prints the preview and hint of a file, or of standard input
// when the argument is "-" or absent, as PutOutput would store it.
func previewCommand(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) > 1 {
		return fmt.Errorf("%w: preview takes at most one FILE", errUsage)
	}
	var (
		data []byte
		err  error
	)
	if len(args) == 0 || args[0] == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(args[0])
	}
	if err != nil {
		return err
	}
	s := values.New()
	h := s.PutOutput(data)
	v, _ := s.Get(h)
	_, err = fmt.Fprintln(stdout, values.RenderPreview(h, v)+values.ReferenceHint(h))
	return err
}
