package gojq_test

// agentvalues: this file is not in upstream gojq.

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/agentvalues/values/internal/gojq"
)

// upstreamCase is a case of testdata/upstream.json: what upstream gojq
// v0.12.20 emits for a query over a stream of inputs.
type upstreamCase struct {
	Name    string   `json:"name"`
	Query   string   `json:"query"`
	Input   string   `json:"input"`
	Outputs []string `json:"outputs"`
	Error   string   `json:"error"`
}

// runCase runs c with the compiler options and returns what it emits, as
// testdata/upstream.json records it, and the *LimitError that stopped it,
// if one did.
func runCase(t *testing.T, c upstreamCase, opts ...gojq.CompilerOption) (out upstreamCase, limit *gojq.LimitError) {
	t.Helper()
	out = c
	out.Outputs, out.Error = nil, ""
	q, err := gojq.Parse(c.Query)
	if err != nil {
		out.Error = "parse: " + err.Error()
		return out, nil
	}
	code, err := gojq.Compile(q, opts...)
	if err != nil {
		out.Error = "compile: " + err.Error()
		return out, nil
	}
	out.Outputs = []string{}
	dec := json.NewDecoder(strings.NewReader(c.Input))
	dec.UseNumber()
	for {
		var v any
		if err := dec.Decode(&v); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("%s: input: %v", c.Name, err)
			}
			return out, nil
		}
		it := code.RunWithContext(context.Background(), v)
		for {
			x, ok := it.Next()
			if !ok {
				break
			}
			if err, ok := x.(error); ok {
				if errors.As(err, &limit) {
					return out, limit
				}
				out.Error = err.Error()
				return out, nil
			}
			b, _ := gojq.Marshal(x)
			out.Outputs = append(out.Outputs, string(b))
		}
	}
}

// TestUpstreamCases replays what upstream gojq emits for the cases of its
// command's test suite that run a query alone: unmetered, and under a
// memory limit larger than any case needs, the fork emits the same; under
// a small limit it emits the same or stops with a *LimitError after a
// prefix of the same, never a different value.
func TestUpstreamCases(t *testing.T) {
	data, err := os.ReadFile("testdata/upstream.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []upstreamCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 500 {
		t.Fatalf("%d cases; want the ~675 the generator kept", len(cases))
	}
	stopped := 0
	for _, c := range cases {
		for _, limits := range []*gojq.Limits{nil, {Memory: 1 << 30}} {
			var opts []gojq.CompilerOption
			if limits != nil {
				opts = append(opts, gojq.WithLimits(*limits))
			}
			got, limit := runCase(t, c, opts...)
			if limit != nil {
				t.Errorf("%s (%+v): %v", c.Name, limits, limit)
			} else if !caseEqual(got, c) {
				t.Errorf("%s (%+v): %q\n got %q, %q\nwant %q, %q", c.Name, limits, c.Query, got.Outputs, got.Error, c.Outputs, c.Error)
			}
		}
		got, limit := runCase(t, c, gojq.WithLimits(gojq.Limits{Memory: 2 << 10}))
		if limit == nil {
			if !caseEqual(got, c) {
				t.Errorf("%s (small limit): %q\n got %q, %q\nwant %q, %q", c.Name, c.Query, got.Outputs, got.Error, c.Outputs, c.Error)
			}
			continue
		}
		stopped++
		if len(got.Outputs) > len(c.Outputs) || !slices.Equal(got.Outputs, c.Outputs[:len(got.Outputs)]) {
			t.Errorf("%s (small limit): %q emitted %q before %v; want a prefix of %q", c.Name, c.Query, got.Outputs, limit, c.Outputs)
		}
	}
	if stopped == 0 {
		t.Error("no case stopped at a 2 KiB limit: the meter charges nothing")
	}
}

func caseEqual(a, b upstreamCase) bool {
	return slices.Equal(a.Outputs, b.Outputs) && a.Error == b.Error && (a.Outputs == nil) == (b.Outputs == nil)
}
