//go:build ignore

// Command gen runs the simple cases of gojq's cli/test.yaml (extracted by
// extract.py) through the upstream library and records what it emits.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/itchyny/gojq"
)

type Case struct {
	Name    string   `json:"name"`
	Query   string   `json:"query"`
	Input   string   `json:"input"`
	Outputs []string `json:"outputs"`         // each value as gojq.Marshal encodes it
	Error   string   `json:"error,omitempty"` // the error that ended the run
}

func run(c Case) (Case, bool) {
	q, err := gojq.Parse(c.Query)
	if err != nil {
		c.Error = "parse: " + err.Error()
		return c, true
	}
	code, err := gojq.Compile(q)
	if err != nil {
		c.Error = "compile: " + err.Error()
		return c, true
	}
	dec := json.NewDecoder(strings.NewReader(c.Input))
	dec.UseNumber()
	c.Outputs = []string{}
	for {
		var v any
		if err := dec.Decode(&v); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return c, false
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		it := code.RunWithContext(ctx, v)
		for {
			x, ok := it.Next()
			if !ok {
				break
			}
			if err, ok := x.(error); ok {
				if ctx.Err() != nil {
					cancel()
					return c, false
				}
				c.Error = err.Error()
				cancel()
				return c, true
			}
			b, _ := gojq.Marshal(x)
			c.Outputs = append(c.Outputs, string(b))
			if len(c.Outputs) > 200 || len(b) > 1<<16 {
				cancel()
				return c, false
			}
		}
		cancel()
	}
	return c, true
}

func main() {
	var cases []Case
	b, _ := os.ReadFile("cases.json")
	json.Unmarshal(b, &cases)
	var out []Case
	for _, c := range cases {
		for _, bad := range []string{"now", "local", "input", "$ENV", "env", "debug", "stderr", "$__prog", "modulemeta", "builtins", "import", "include", "halt"} {
			if strings.Contains(c.Query, bad) {
				goto skip
			}
		}
		{
			a, ok1 := run(c)
			b, ok2 := run(c)
			if ok1 && ok2 && reflect.DeepEqual(a, b) {
				out = append(out, a)
			}
		}
	skip:
	}
	f, _ := os.Create("upstream.json")
	enc := json.NewEncoder(f)
	enc.SetEscapeHTML(false)
	f.WriteString("[\n")
	for i, c := range out {
		b, _ := json.Marshal(c)
		_ = enc
		f.Write(b)
		if i < len(out)-1 {
			f.WriteString(",")
		}
		f.WriteString("\n")
	}
	f.WriteString("]\n")
	f.Close()
	println(len(out))
}
