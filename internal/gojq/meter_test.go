package gojq

// agentvalues: this file is not in upstream gojq.

import (
	"context"
	"errors"
	"math"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"
)

// The sizes the meter charges for the interpreter's stacks are those of
// their elements.
func TestMeterSizes(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"block[any]", unsafe.Sizeof(block[any]{}), sizeBlockAny},
		{"block[pathValue]", unsafe.Sizeof(block[pathValue]{}), sizeBlockPath},
		{"block[scope]", unsafe.Sizeof(block[scope]{}), sizeBlockScope},
		{"fork", unsafe.Sizeof(fork{}), sizeFork},
		{"keyVal", unsafe.Sizeof(keyVal{}), sizeKeyVal},
		{"pathValue", unsafe.Sizeof(pathValue{}), sizePath},
	} {
		if c.got != c.want {
			t.Errorf("sizeof %s = %d, the meter charges %d", c.name, c.got, c.want)
		}
	}
}

// heapAllocs returns the bytes allocated on the heap so far.
func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// runLimited runs query over input under limits and ctx, and returns what
// it emitted, the error that ended it and the bytes the run charged.
func runLimited(t *testing.T, ctx context.Context, query string, input any, limits Limits) (out []any, err error, used int) {
	t.Helper()
	q, err := Parse(query)
	if err != nil {
		t.Fatal(err)
	}
	code, err := Compile(q, WithLimits(limits))
	if err != nil {
		t.Fatal(err)
	}
	it := code.RunWithContext(ctx, input).(*env)
	for {
		v, ok := it.Next()
		if !ok {
			break
		}
		if e, ok := v.(error); ok {
			err = e
			break
		}
		out = append(out, v)
	}
	if it.meter != nil {
		used = it.meter.used
	}
	return out, err, used
}

// runUnmetered runs query over null as upstream does, without WithLimits.
func runUnmetered(t *testing.T, ctx context.Context, query string) (out []any, err error, used int) {
	t.Helper()
	q, err := Parse(query)
	if err != nil {
		t.Fatal(err)
	}
	code, err := Compile(q)
	if err != nil {
		t.Fatal(err)
	}
	it := code.RunWithContext(ctx, nil)
	for {
		v, ok := it.Next()
		if !ok {
			return out, nil, 0
		}
		if e, ok := v.(error); ok {
			return out, e, 0
		}
		out = append(out, v)
	}
}

// Each program builds far more than its limit, in one builtin or over
// many steps; each stops with a *LimitError, having charged no more than
// the limit and allocated no more than a small multiple of it.
func TestLimitsHostile(t *testing.T) {
	const limit = 8 << 20
	tests := []struct {
		name, query string
		what        string // in the *LimitError's What: where the limit was met
	}{
		{"tojson of a shared value", `reduce range(30) as $i (0; [., .]) | tojson | length`, "tojson"},
		{"tostring of a shared value", `reduce range(30) as $i ({}; {a: ., b: .}) | tostring | length`, "tostring"},
		{"string interpolation of a shared value", `reduce range(30) as $i (0; [., .]) | "\(.)" | length`, "tostring"},
		{"@json", `reduce range(30) as $i (0; [., .]) | @json | length`, "tojson"},
		{"@text", `reduce range(30) as $i (0; [., .]) | @text | length`, "tostring"},
		{"@base64", `reduce range(30) as $i (0; [., .]) | @base64 | length`, "@base64"},
		{"@base64 of a long string", `"x" * 4e6 | @base64 | length`, "@base64"},
		{"@html", `reduce range(30) as $i ("<"; [., .]) | @html | length`, "@html"},
		{"@html of a long string", `"<" * 2e6 | @html | length`, "@html"},
		{"@uri", `reduce range(30) as $i (" "; [., .]) | @uri | length`, "@uri"},
		{"@csv", `("x" * 1e4) as $s | [range(1e4) | $s] | @csv | length`, "@csv"},
		{"@tsv", `("\t" * 1e4) as $s | [range(1e4) | $s] | @tsv | length`, "@tsv"},
		{"@sh", `("'" * 1e4) as $s | [range(1e4) | $s] | @sh | length`, "@sh"},
		{"format", `reduce range(30) as $i (0; [., .]) | format("json") | length`, "tojson"},
		{"string repeat", `"x" * 2000000000`, "repeat"},
		{"string doubling", `reduce range(40) as $i ("x"; . + .) | length`, "string (+)"},
		{"array doubling", `reduce range(40) as $i ([0]; . + .) | length`, "array (+)"},
		{"setpath far index", `null | .[536870911] = 1`, "setpath"},
		{"setpath far index, builtin", `null | setpath([536870911]; 1)`, "setpath"},
		{"recursion building arrays", `def f: [f]; f`, "stack"},
		{"recursion", `def f: 1 + f; f`, "stack"},
		{"collect a range", `[range(1e8)]`, "an array"},
		{"collect a repeat", `[limit(1e8; repeat(1))]`, "an array"},
		{"flatten a shared value", `reduce range(30) as $i (0; [., .]) | flatten | length`, "flatten"},
		{"add of shared arrays", `[range(1e4)] as $a | [range(1e4) | $a] | add | length`, "add"},
		{"add of shared strings", `("x" * 1e4) as $s | [range(1e4) | $s] | add | length`, "add"},
		{"join of shared strings", `("x" * 1e4) as $s | [range(1e4) | $s] | join(",") | length`, "add"},
		{"implode", `[range(1e4) | 1114111] as $a | range(1e4) | $a | implode | empty`, "implode"},
		{"explode", `"x" * 1e6 | explode | length`, "explode"},
		{"split into characters", `"x" * 1e6 | split("") | length`, "split"},
		{"split by a separator", `"x," * 1e6 | split(",") | length`, "split"},
		{"divide a string", `("x," * 1e6) / "," | length`, "split"},
		{"match everywhere", `"x" * 1e6 | [match(""; "g")] | length`, "matches"},
		{"scan", `"x" * 1e6 | [scan(".")] | length`, "matches"},
		{"fromjson", `"[" + ("[]," * 5e5) + "[]]" | fromjson | length`, "fromjson"},
		{"transpose", `[range(1e4)] as $a | [$a] + [range(1e3) | []] | transpose | length`, "transpose"},
		{"group_by", `[range(2e4)] as $a | range(1e4) | $a | group_by(.) | empty`, "group_by"},
		{"sort", `[range(2e4)] as $a | range(1e4) | $a | sort | empty`, "sort"},
		{"unique", `[range(2e4)] as $a | range(1e4) | $a | unique | empty`, "unique"},
		{"object merge of a shared value", `reduce range(40) as $i ({a: 0}; {x: ., y: .}) | . * . | length`, "object (*)"},
		{"an object from entries", `[range(1e6) | {key: "k\(.)", value: 1}] | from_entries | length`, ""},
		{"assignment in a loop", `reduce range(1e6) as $i ({}; .["\($i)"] = $i) | length`, "setpath"},
		{"ascii_downcase", `("A" * 1e6) as $s | [range(100) | $s | ascii_downcase] | length`, "ascii case"},
		{"strftime", `0 | strftime("%c" * 2e6) | length`, "strftime"},
		{"allocate and drop", `range(1e6) | "x" * 1e6 | empty`, "repeat"},
		{"allocate and drop arrays", `range(1e6) | [range(1e4)] | empty`, "an array"},
		{"builtins in a loop", `range(1e6) | builtins | empty`, "builtins"},
		{"paths", `reduce range(22) as $i (0; [., .]) | [paths] | length`, ""},
		{"tostream", `reduce range(22) as $i (0; [., .]) | [tostream] | length`, ""},
		{"regular expressions", `range(1e6) | tostring | test("a\(.)b") | empty`, "regular expression"},
		{"long literal numbers compared", `("1" * 4000) as $n | [range(1e5) | {n: $n | fromjson}] | sort_by(.n) | length`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runtime.GC()
			before := heapAllocs()
			_, err, used := runLimited(t, context.Background(), tt.query, nil, Limits{Memory: limit})
			allocated := heapAllocs() - before
			var le *LimitError
			if !errors.As(err, &le) {
				t.Fatalf("%s: %v; want a *LimitError", tt.query, err)
			}
			if !strings.Contains(le.What, tt.what) {
				t.Errorf("%s: stopped at %q; want it stopped at %q", tt.query, le.What, tt.what)
			}
			if le.Limit != limit || le.Used > limit || used > limit || le.Need <= le.Limit-le.Used || le.What == "" {
				t.Errorf("%s: %+v, %d charged; want Used ≤ Limit < Used+Need", tt.query, le, used)
			}
			if allocated > 4*limit {
				t.Errorf("%s: allocated %d MiB, more than 4 times its %d MiB limit", tt.query, allocated>>20, limit>>20)
			}
			t.Logf("allocated %.1f MiB: %v", float64(allocated)/(1<<20), err)
		})
	}
}

// A limit is not an error a program can catch: try, ? and // pass it on.
func TestLimitsUncatchable(t *testing.T) {
	for _, query := range []string{
		`try ([range(1e8)]) catch "caught"`,
		`[range(1e8)]?, "after"`,
		`[range(1e8)] // "alternative"`,
		`first([range(1e8)], 1)`,
		`label $out | [range(1e8)], break $out`,
		`def f: try ([f]) catch f; f`,
		`[.[]?] | try ("x" * 1e9) catch ("y" * 10)`,
	} {
		out, err, _ := runLimited(t, context.Background(), query, nil, Limits{Memory: 1 << 20})
		if !errors.As(err, new(*LimitError)) || len(out) > 0 {
			t.Errorf("%s: %v, %v; want nothing but a *LimitError", query, out, err)
		}
	}
}

// Within the limit, programs run as they do unmetered: the limit is
// charged, never an error, and the results are the same.
func TestLimitsWithin(t *testing.T) {
	for _, query := range []string{
		`[range(1e4)] | map(tostring) | join(",") | length`,
		`reduce range(12) as $i (0; [., .]) | tojson | length`,
		`[range(1000) | {k: "k\(.)", v: .}] | group_by(.v % 7) | map(length)`,
		`"a,b,c" * 1000 | split(",") | length`,
		`[limit(10; repeat(1))]`,
		`def f: if . > 1000 then . else . + 1 | f end; 0 | f`,
		`"x" * 1e5 | [match("x"; "g")] | length`,
		`null | .[1e5] = 1 | length`,
	} {
		want, err, _ := runUnmetered(t, context.Background(), query)
		if err != nil {
			t.Fatalf("%s unmetered: %v", query, err)
		}
		got, err, used := runLimited(t, context.Background(), query, nil, Limits{Memory: 64 << 20})
		if err != nil || used == 0 || Compare(got, want) != 0 {
			t.Errorf("%s: %v, %v after %d bytes charged; want %v", query, got, err, used, want)
		}
	}
}

// Integers past maxIntBits are computed as floats, as jq computes every
// number, in steps that stay short; those within are exact.
func TestMaxIntBits(t *testing.T) {
	tests := []struct {
		query string
		want  any
	}{
		{`reduce range(30) as $i (3; . * .)`, math.Inf(1)},
		{`reduce range(20000) as $i (1; . * 2) | . > 1e308`, true},
		{`"1" * 5000 | tonumber`, math.Inf(1)},
		{`("1" * 4000 | tonumber) - ("1" * 4000 | tonumber)`, 0},
		{`9223372036854775807 + 1 | tostring`, "9223372036854775808"},
		{`[range(100)] | map(. + 1e2) | .[0]`, float64(100)},
	}
	for _, tt := range tests {
		got, err, _ := runLimited(t, context.Background(), tt.query, nil, Limits{Memory: 64 << 20})
		if err != nil || len(got) != 1 || Compare(got[0], tt.want) != 0 {
			t.Errorf("%s = %v, %v; want %v", tt.query, got, err, tt.want)
		}
	}
}

// An error's message shows a bounded part of its value: making it costs
// next to nothing whatever the value's size written out.
func TestErrorValueBounded(t *testing.T) {
	for _, query := range []string{
		`reduce range(40) as $i (0; [., .]) | error(.)`,
		`reduce range(40) as $i (0; [., .]) | halt_error`,
		`"x" * 1e6 | error(.)`,
	} {
		_, err, _ := runLimited(t, context.Background(), query, nil, Limits{Memory: 64 << 20})
		if err == nil {
			t.Fatalf("%s: no error", query)
		}
		runtime.GC()
		before := heapAllocs()
		msg := err.Error()
		if allocated := heapAllocs() - before; allocated > 64<<10 {
			t.Errorf("%s: the message took %d bytes to make", query, allocated)
		}
		if len(msg) > maxErrorValue+64 || !strings.HasSuffix(msg, " ...") {
			t.Errorf("%s: message of %d bytes, ending %q", query, len(msg), msg[max(0, len(msg)-10):])
		}
	}
}

// AppendJSON stops at its bound, after work proportional to it.
func TestAppendJSON(t *testing.T) {
	v := any(0)
	for range 40 {
		v = []any{v, v}
	}
	runtime.GC()
	before := heapAllocs()
	out, ok := AppendJSON([]byte("x"), v, 1<<20)
	if allocated := heapAllocs() - before; ok || len(out) > 1<<20 || !strings.HasPrefix(string(out), "x[[[[") || allocated > 4<<20 {
		t.Errorf("AppendJSON of 2^40 leaves = %d bytes, %v, after allocating %d", len(out), ok, allocated)
	}
	out, ok = AppendJSON(nil, map[string]any{"a": []any{1, "x"}}, 15)
	if !ok || string(out) != `{"a":[1,"x"]}` {
		t.Errorf("AppendJSON = %s, %v", out, ok)
	}
	if out, ok = AppendJSON(nil, map[string]any{"a": []any{1, "x"}}, 12); ok {
		t.Errorf("AppendJSON past its bound = %s, %v", out, ok)
	}
}

// countdownCtx is a context whose deadline passes at the n-th call of its
// Done method: so a test can end a run in the middle of a builtin, counted
// in looks at the context rather than in time.
type countdownCtx struct {
	context.Context
	left  atomic.Int64
	calls atomic.Int64
	done  chan struct{}
}

func newCountdown(n int64) *countdownCtx {
	c := &countdownCtx{Context: context.Background(), done: make(chan struct{})}
	c.left.Store(n)
	return c
}

func (c *countdownCtx) Done() <-chan struct{} {
	c.calls.Add(1)
	if c.left.Add(-1) == 0 {
		close(c.done)
	}
	return c.done
}

func (c *countdownCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// A builtin working on a large value, or on one that shares its parts,
// looks at the run's context every meterCheckEvery units of work: a
// deadline that passes while it works stops it there, not after it
// finishes. Each program makes one call whose work needs thousands of
// looks (at least dozens); its context's deadline passes a few looks after the
// interpreter's last step before that call. Unmetered (upstream), the
// interpreter alone looks at the context, and the program finishes.
func TestLimitsBuiltinDeadline(t *testing.T) {
	const shared = `reduce range(16) as $i (0; [., .])`
	for _, query := range []string{
		shared + ` | . == .`,
		shared + ` | . < .`,
		shared + ` | tojson | length`,
		shared + ` | tostring | length`,
		shared + ` | flatten | length`,
		shared + ` | contains(.)`,
		shared + ` | . as $x | [$x] | index([$x])`,
		shared + ` | [., .] | unique | length`,
		shared + ` | [., .] | sort | length`,
		shared + ` | [., .] | group_by(.) | length`,
		shared + ` | [., .] | min | length`,
		shared + ` | [., .] | bsearch(.[0])`,
		`[range(1e3)] | . - . | length`,
		`[range(5e4)] | indices([range(100)]) | length`,
		`"x" * 5e5 | indices("y") | length`,
		`[range(5e4)] | sort | length`,
		`[range(5e4) | {a: .}] | sort_by(.a) | length`,
		`[range(5e4) | [.]] | add | length`,
		`reduce range(16) as $i ({a: 0}; {a: ., b: .}) | . == .`,
		`"ab" * 5e4 | test("(?i)(\\w+\\s*){1,100}z")`,
		`"ab" * 5e4 | [match("(?i)(\\w+\\s*){1,100}z"; "g")] | length`,
	} {
		t.Run(query, func(t *testing.T) {
			limits := Limits{} // no memory bound: the builtins look at the deadline all the same
			// The looks of the interpreter alone: the steps of the run.
			counter := newCountdown(math.MaxInt64)
			if _, err, _ := runUnmetered(t, counter, query); err != nil {
				t.Fatal(err)
			}
			steps := counter.calls.Load()
			counter = newCountdown(steps + 3)
			_, err, _ := runLimited(t, counter, query, nil, limits)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("%v after %d looks at a context done after %d; want the deadline", err, counter.calls.Load(), steps+3)
			}
			if calls := counter.calls.Load(); calls > steps+3+1 {
				t.Errorf("%d looks at the context after its deadline", calls-(steps+3))
			}
		})
	}
}

// Matching through readers (what a metered run does with a long input and
// a large expression, so that its deadline can stop it) finds what the
// standard library's string functions find: the same matches, captures
// and empty matches, with the same context at each offset.
func TestRegexpReaderSameAsString(t *testing.T) {
	patterns := []string{
		``, `a`, `a*`, `a*?`, `a+`, `b*`, `^`, `$`, `^a`, `a$`, `\b`, `\B`, `\ba\w*`, `\w+\b`,
		`(a)|(b)`, `(a)(b)?`, `(?P<x>a+)(?P<y>b*)`, `.`, `..?`, `[^a]`, `(a|ab)(c|bcd)(d*)`,
		`é+`, `\p{L}+`, `(?i)A`, `(?s).`, `x*y*`, `(\s*)`, `\A`, `\z`, `(?m)^a`, `a{2,3}`, `(a*)*`,
	}
	strs := []string{
		"", "a", "aa", "ab", "ba", "aab abb  a", "xyz", "aaa bbb aaa", "é aé éa", "a\nb\na",
		"\xff a \xfe", "abcd abcd", " a b ", "bbbb", "AaA",
	}
	cache := new(sync.Map)
	for _, p := range patterns {
		r, err := compileRegexp(nil, p, "", cache)
		if err != nil {
			t.Fatalf("%q: %v", p, err)
		}
		for _, s := range strs {
			m := &meter{ctx: context.Background(), work: meterCheckEvery, regexpFastWork: -1}
			if !r.slow(m, s) && !isLiteral(r) {
				t.Fatalf("%q over %q: not matched through readers", p, s)
			}
			for _, n := range []int{1, -1, 2} {
				want, got := r.findAll(nil, s, n), r.findAll(m, s, n)
				if !slices.EqualFunc(want, got, slices.Equal[[]int]) {
					t.Errorf("%q over %q, n=%d: readers found %v, strings %v", p, s, n, got, want)
				}
			}
			if want, got := r.matchString(nil, s), r.matchString(m, s); want != got {
				t.Errorf("%q over %q: readers matched %v, strings %v", p, s, got, want)
			}
		}
	}
}

func isLiteral(r *regexpMatcher) bool {
	_, literal := r.LiteralPrefix()
	return literal
}

// FuzzRegexpReader: matching through readers finds what the string
// functions find, for any expression and input.
func FuzzRegexpReader(f *testing.F) {
	for _, seed := range [][2]string{{`a*`, "aab"}, {`\b`, "a b"}, {`(a)|(b)?`, "abba"}, {`^|$`, "x\ny"}, {`(?i)é+`, "Éé\xff"}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, p, s string) {
		r, err := compileRegexp(nil, p, "", new(sync.Map))
		if err != nil || r.follow == nil {
			return
		}
		m := &meter{ctx: context.Background(), work: meterCheckEvery, regexpFastWork: -1}
		for _, n := range []int{1, -1} {
			if want, got := r.findAll(nil, s, n), r.findAll(m, s, n); !slices.EqualFunc(want, got, slices.Equal[[]int]) {
				t.Fatalf("%q over %q, n=%d: readers found %v, strings %v", p, s, n, got, want)
			}
		}
		if want, got := r.matchString(nil, s), r.matchString(m, s); want != got {
			t.Fatalf("%q over %q: readers matched %v, strings %v", p, s, got, want)
		}
	})
}
