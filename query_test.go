package values

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// queryStore holds r1 an array of rows, r2 a text, r3 a JSON Lines text,
// r4 a text holding one JSON object, r5 a binary value.
func queryStore(t testing.TB, opts ...Option) *SessionValues {
	t.Helper()
	s := New(opts...)
	var rows []map[string]any
	for i := range 100 {
		rows = append(rows, map[string]any{"id": i, "status": []int{200, 500, 404}[i%3], "path": fmt.Sprintf("pkg/f%02d%s.go", i, []string{"", "_test"}[i%2])})
	}
	s.Put(rows)
	s.Put("line one\nline two\n")
	s.PutOutput([]byte("{\"Action\":\"run\",\"T\":\"A\"}\n{\"Action\":\"pass\",\"T\":\"A\"}\n{\"Action\":\"fail\",\"T\":\"B\"}\n"))
	s.Put(`{"name":"x","n":3}`)
	s.PutOutput([]byte{0xff, 0xfe, 0x00, 0x01})
	return s
}

func TestQuery(t *testing.T) {
	s := queryStore(t)
	tests := []struct {
		ref, jq string
		want    string // the stored result's JSON
		text    string // a part of the transcript text
	}{
		{"r1", "length", "100", ""},
		{"$r1", `[.[] | select(.status == 500) | .id] | length`, "33", ""},
		{"r1", `map(.path | select(endswith("_test.go"))) | .[0:2]`, `["pkg/f01_test.go","pkg/f03_test.go"]`, ""},
		{"$r1.5", ".path", `"pkg/f05_test.go"`, ""},
		{"r1", "max_by(.id) | .id", "99", ""},
		{"r1", ".[0].id, .[1].id", "[0,1]", "emitted 2 values"},
		{"r1", "empty", "[]", "emitted no values"},
		{"r2", `split("\n") | length`, "3", ""},
		{"r3", `map(.Action)`, `["run","pass","fail"]`, ""},
		{"r3", `.[] | select(.Action == "fail") | .T`, `"B"`, ""},
		{"r4", ".n + 1", "4", ""},
		{"r1", "$ENV", "{}", ""},
		{"r1", "env | length", "0", ""},
		{"r1", "[1, nan, infinite]", "[1,null,1.7976931348623157e+308]", ""},
	}
	for _, tt := range tests {
		t.Run(tt.jq, func(t *testing.T) {
			obs, err := s.Query(context.Background(), tt.ref, tt.jq)
			if err != nil {
				t.Fatalf("Query: %v", err)
			}
			v, _ := s.Get(obs.Handle)
			if got := string(v.JSON()); got != tt.want {
				t.Errorf("result %s, want %s", got, tt.want)
			}
			if !strings.Contains(obs.Text, tt.text) {
				t.Errorf("transcript %q lacks %q", obs.Text, tt.text)
			}
		})
	}
}

// Bad programs, refused inputs and bounds are distinct errors, in jq's
// words where jq has them, and store nothing.
func TestQueryErrors(t *testing.T) {
	s := queryStore(t, WithQueryLimits(200*time.Millisecond, 1<<20, 64<<10))
	// untimed has no time bound a loaded machine could reach first.
	untimed := queryStore(t, WithQueryLimits(time.Hour, 1<<20, 64<<10))
	tests := []struct {
		ref, jq string
		want    error
		words   string
	}{
		{"r1", ".[", ErrQuery, "parse error at position"},
		{"r1", ".foo.bar", ErrQuery, "expected an object but got: array"},
		{"r1", "input", ErrQuery, "input"},
		{"r1", "[inputs]", ErrQuery, "input"},
		{"r1", `import "a" as a; .`, ErrQuery, "a"},
		{"r1", `include "a"; .`, ErrQuery, "a"},
		{"r1", "error(\"boom\")", ErrQuery, "boom"},
		{"r5", ".", ErrQuery, "binary"},
		{"r9", ".", ErrUnknownHandle, "not a stored value"},
		{"$r1.nope", ".", ErrNoPath, "not an index"},
		{"r1..x", ".", ErrBadRef, "malformed"},
		{"r1", "def f: f; f", ErrQueryTimeout, "stopped after 200ms"},
		{"r1", "[range(1e9)]", ErrQueryMemory, "when an array needed"}, // builds one array: its budget stops it
		{"r1", "range(1e9)", ErrTooLarge, "passed the 64 KiB a query may produce"},
	}
	for _, tt := range tests {
		t.Run(tt.jq, func(t *testing.T) {
			s := s
			if tt.want != ErrQueryTimeout {
				s = untimed
			}
			n := s.Len()
			_, err := s.Query(context.Background(), tt.ref, tt.jq)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.words) {
				t.Fatalf("Query(%s, %s) = %v; want %v with %q", tt.ref, tt.jq, err, tt.want, tt.words)
			}
			if strings.Contains(err.Error(), "*gojq") || strings.Contains(err.Error(), "map[string]") {
				t.Errorf("the error leaks Go types: %v", err)
			}
			if s.Len() != n {
				t.Errorf("a failed query stored a value")
			}
		})
	}
	// A cancelled context stops a query too.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := New().Query(ctx, "r1", "."); !errors.Is(err, ErrUnknownHandle) {
		t.Errorf("unknown handle: %v", err)
	}
	if _, err := s.Query(ctx, "r1", "def f: f; f"); !errors.Is(err, ErrQueryTimeout) {
		t.Errorf("cancelled: %v", err)
	}
}

// A value larger than the input bound is refused before it is decoded:
// 300 MB of text costs the query next to no memory.
func TestQueryInputBound(t *testing.T) {
	s := New()
	h := s.PutOutput([]byte(strings.Repeat("x", 300<<20)))
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := s.Query(context.Background(), h, "length")
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "more than the 64 MiB a query may read") {
		t.Fatalf("Query of 300 MB: %v", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("the refused query allocated %d bytes", grew)
	}
}

// Queries run concurrently over one store, each with its own result.
func TestQueryConcurrent(t *testing.T) {
	s := queryStore(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			obs, err := s.Query(context.Background(), "r1", fmt.Sprintf(".[%d].id", i))
			if err != nil {
				t.Error(err)
				return
			}
			if v, _ := s.Get(obs.Handle); string(v.JSON()) != fmt.Sprint(i) {
				t.Errorf("query %d stored %s", i, v.JSON())
			}
		})
	}
	wg.Wait()
}

// A query over a value kept only in the durable store reads it back once.
func TestQueryDurable(t *testing.T) {
	d := &memDurable{bodies: map[string][]byte{}, records: map[string][]Record{}}
	s, err := Open(d, "q", WithMemoryLimit(16))
	if err != nil {
		t.Fatal(err)
	}
	h, _ := s.Put(json.RawMessage(`[{"id":1},{"id":2},{"id":3}]`))
	reads := d.reads
	obs, err := s.Query(context.Background(), h, "map(.id) | add")
	if err != nil || d.reads != reads+1 {
		t.Fatalf("Query: %v, %d reads", err, d.reads-reads)
	}
	if v, _ := s.Get(obs.Handle); string(v.JSON()) != "6" {
		t.Errorf("result %s", v.JSON())
	}
}

func TestHandleQueryValue(t *testing.T) {
	s := queryStore(t)
	tool := QueryValueTool()
	sch, err := CompileSchema(tool.InputSchema)
	if err != nil {
		t.Fatalf("the tool's schema: %v", err)
	}
	if err := sch.Validate([]byte(`{"ref":"r1","jq":"length"}`)); err != nil {
		t.Errorf("valid arguments: %v", err)
	}
	got, err := s.HandleQueryValue(context.Background(), []byte(`{"ref":"$r1","jq":"[.[] | .status] | unique"}`))
	if err != nil || got.Handle != "r6" || !strings.HasPrefix(got.Text, "[200,404,500]\n[stored as r6") {
		t.Errorf("HandleQueryValue = %+v, %v", got, err)
	}
	for _, bad := range []string{``, `[]`, `{"ref":"r1"}`, `{"jq":"."}`, `{"ref":1,"jq":"."}`, `{"ref":"r1","jq":".","x":1}`, `null`} {
		if _, err := s.HandleQueryValue(context.Background(), []byte(bad)); !errors.Is(err, ErrReadArgs) {
			t.Errorf("HandleQueryValue(%s) = %v, want ErrReadArgs", bad, err)
		}
	}
	if diff := cmp.Diff("query_value", tool.Name); diff != "" {
		t.Error(diff)
	}
}

// FuzzQuery runs arbitrary programs over arbitrary values: no panic, no
// error but the documented ones, no result past the output bound. It
// times nothing: that a builtin stops at the deadline is counted in
// internal/gojq's TestLimitsBuiltinDeadline, and a run that never stops
// fails the fuzzer by its -timeout.
func FuzzQuery(f *testing.F) {
	for _, seed := range []struct{ value, jq string }{
		{`[1,2,3]`, `map(. * 2)`}, {`{"a":{"b":[1]}}`, `.a.b[0]`}, {"text\nlines", `split("\n")`},
		{`{"a":1}`, `def f: f; f`}, {`[]`, `range(1e9)`}, {`"x"`, `input`}, {`1`, `$ENV.PATH`}, {`[1]`, `.[`},
		{"{\"a\":1}\n{\"a\":2}", `map(.a)`}, {`{"a":"b"}`, `to_entries | from_entries | tojson | fromjson`},
	} {
		f.Add([]byte(seed.value), seed.jq)
	}
	f.Fuzz(func(t *testing.T, value []byte, jq string) {
		s := New(WithQueryLimits(100*time.Millisecond, 1<<20, 32<<10))
		h := s.PutOutput(value)
		obs, err := s.Query(context.Background(), h, jq)
		if err != nil {
			if !errors.Is(err, ErrQuery) && !errors.Is(err, ErrQueryTimeout) && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrQueryMemory) {
				t.Fatalf("Query(%q): unexpected error %v", jq, err)
			}
			return
		}
		if v, _ := s.Get(obs.Handle); v.Size() > 32<<10+2 {
			t.Fatalf("Query(%q) stored %d bytes past the output bound", jq, v.Size())
		}
	})
}
