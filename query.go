package values

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentvalues/values/internal/gojq"
	"github.com/agentvalues/values/internal/jsontext"
)

// This file holds queries: a jq program run over a stored value, its
// result stored as a new value ([SessionValues.Query]).

// Errors of [SessionValues.Query], besides those of the reference
// ([ErrBadRef], [ErrUnknownHandle], [ErrNoPath], [ErrUnavailable]).
var (
	// ErrQuery reports a jq program that does not parse, that fails as it
	// runs (jq's own words: "cannot iterate over: number (42)"), or that
	// asks for what a query may not have: input, inputs, $ENV and env are
	// empty or refused, and no module can be imported.
	ErrQuery = errors.New("jq query failed")
	// ErrQueryTimeout reports a query stopped at its time bound
	// ([WithQueryLimits]).
	ErrQueryTimeout = errors.New("jq query took too long")
	// ErrQueryMemory reports a query stopped at its memory budget
	// ([WithQueryMemory]): its program built more than the budget allows.
	// The message says what it was building and how to narrow the query.
	ErrQueryMemory = errors.New("jq query used too much memory")
	// ErrQueryBusy reports a query that waited its whole time bound for the
	// memory other queries held ([QueryGate]) and did not run.
	ErrQueryBusy = errors.New("jq query refused: too many queries running")
)

// Default bounds of a query ([WithQueryLimits], [WithQueryMemory]).
const (
	// DefaultQueryTime is how long one query may run.
	DefaultQueryTime = 5 * time.Second
	// DefaultQueryInput is the largest value a query decodes: decoded, a
	// JSON value takes several times its size in memory.
	DefaultQueryInput = 64 << 20
	// DefaultQueryOutput is the largest result a query may produce, as
	// JSON.
	DefaultQueryOutput = 16 << 20
	// DefaultQueryMemory is the memory a query's program may build beyond
	// queryMemoryPerInput bytes per byte of its input ([WithQueryMemory]):
	// far more than filtering, grouping or sorting a value takes, while an
	// attack (a string repeated two billion times, a value doubled thirty
	// times and encoded) stops after at most that.
	DefaultQueryMemory = 64 << 20
)

// queryMemoryPerInput is the memory a query's program may build per byte
// of its input, beside its budget: as measured over 64 MiB arrays of
// records, group_by, sort_by, to_entries, map(tostring), tojson, an
// INDEX or a reduce into an object build up to about 5 bytes per byte of
// input (all they allocate, garbage included, which the budget counts).
const queryMemoryPerInput = 8

// queryDecodeFactor is about the memory a decoded JSON input takes per byte
// of its JSON (measured: 5.8 for a 64 MiB array of records), which a query
// reserves at its gate.
const queryDecodeFactor = 6

// WithQueryMemory sets the memory budget of [SessionValues.Query]: the
// bytes a query's program may build, beyond 8 bytes per byte of its input.
// Everything the program builds counts, when it builds it (strings, arrays,
// objects and numbers, the buffers of builtins such as tojson and sort,
// the interpreter's stacks as a recursion deepens), and what it drops is
// not given back, so a loop that builds and drops large values is bounded
// too. Past the budget the query stops with [ErrQueryMemory], before the
// allocation that would pass it. 0 selects [DefaultQueryMemory]; a
// negative bytes bounds nothing.
func WithQueryMemory(bytes int) Option {
	return func(c *config) { c.queryMemory = bytes }
}

// queryBudget returns the memory budget of a query over input bytes of
// input, or 0 for no bound.
func (c *config) queryBudget(input int) int {
	switch {
	case c.queryMemory < 0:
		return 0
	case c.queryMemory == 0:
		return DefaultQueryMemory + queryMemoryPerInput*input
	}
	return c.queryMemory + queryMemoryPerInput*input
}

// gate returns the query gate in effect.
func (c *config) gate() *QueryGate {
	if c.queryGate == nil {
		return processQueryGate
	}
	return c.queryGate
}

// WithQueryLimits sets the bounds of [SessionValues.Query]: the time one
// query may run, the size of the value it may decode, and the size of the
// result it may produce (as JSON). 0 selects the default of each
// ([DefaultQueryTime], [DefaultQueryInput], [DefaultQueryOutput]).
func WithQueryLimits(timeout time.Duration, input, output int) Option {
	return func(c *config) { c.queryTime, c.queryInput, c.queryOutput = timeout, input, output }
}

func (c *config) queryLimits() (time.Duration, int, int) {
	t, in, out := c.queryTime, c.queryInput, c.queryOutput
	if t <= 0 {
		t = DefaultQueryTime
	}
	if in <= 0 {
		in = DefaultQueryInput
	}
	if out <= 0 {
		out = DefaultQueryOutput
	}
	return t, in, out
}

// Query runs the jq program expr over the value ref names ("r3", "$r3",
// "$r3.rows"; a reference's "$" may be left out), stores its result as a
// new value, and returns what enters the transcript for it, as
// [SessionValues.Observe] does: the result whole when small, else a
// preview and the hint. So a model asks a question of a large value (how
// many rows have status 500, the largest size, the paths that end in
// _test.go) without reading it, and passes the answer on as "$rN".
//
// The program's input is the value as JSON; a text value is a string,
// unless it holds JSON (a stream of values, such as JSON Lines, is the
// array of them); a binary value is refused with [ErrQuery]. A program
// that emits one value stores it; one that emits several, or none, stores
// the array of them, and the transcript says so.
//
// A query is bounded, each bound a distinct error:
//   - time ([WithQueryLimits], 5 s by default, or ctx's deadline if
//     sooner): the program is stopped, between two steps or inside a
//     builtin (a sort, a comparison or an encoding looks at the deadline
//     as it works), and fails with [ErrQueryTimeout];
//   - input (64 MiB): a larger value is not decoded ([ErrTooLarge]);
//   - memory ([WithQueryMemory], 64 MiB plus 8 bytes per byte of input):
//     what the program builds is counted before it is built, and past the
//     budget the program stops with [ErrQueryMemory], whose message says
//     what it was building and how to narrow the query;
//   - output (16 MiB of JSON): the result is encoded up to the bound and
//     no further, and not stored ([ErrTooLarge]);
//   - queries at once ([QueryGate]): a query reserves the memory it may
//     hold before it decodes its input, waiting while other queries hold
//     it, and fails with [ErrQueryBusy] if it waited its whole time bound.
//
// It runs with no environment ($ENV is {}), no input or inputs, and no
// modules: it sees only the value. A program that does not parse or fails
// as it runs is [ErrQuery], in jq's words (at most 4 KiB of a value in
// the message). Integers of more than 16384 bits are computed as floats,
// as jq computes every number. Nothing is stored when it fails.
func (s *SessionValues) Query(ctx context.Context, ref, expr string) (Observation, error) {
	out, n, err := s.runQuery(ctx, ref, expr)
	if err != nil {
		return Observation{}, err
	}
	x, err := newJSON(out, s.cfg.inline())
	if err != nil {
		return Observation{}, fmt.Errorf("values: %w: the result is not valid JSON: %v", ErrQuery, err) // unreachable: gojq encodes it
	}
	h := s.add(x)
	obs := s.transcript(h, x)
	switch n {
	case 0:
		obs.Text = "the query emitted no values (stored as an empty array)\n" + obs.Text
	case 1:
	default:
		obs.Text = fmt.Sprintf("the query emitted %d values (stored as an array of them)\n", n) + obs.Text
	}
	return obs, nil
}

// QueryJSON runs the jq program expr over the value ref names as
// [SessionValues.Query] does, with the same bounds and errors, and returns
// its result as JSON and the number of values the program emitted (the
// result is the array of them unless there is exactly one), without
// storing it: no handle is handed out. It is for a reader that asks a
// question of a value without changing the session (the value browser);
// the result, at most the output bound (16 MiB by default), is the
// caller's.
func (s *SessionValues) QueryJSON(ctx context.Context, ref, expr string) ([]byte, int, error) {
	return s.runQuery(ctx, ref, expr)
}

// runQuery runs expr over what ref names and returns its result as JSON
// and the number of values the program emitted.
func (s *SessionValues) runQuery(ctx context.Context, ref, expr string) ([]byte, int, error) {
	timeout, inLimit, outLimit := s.cfg.queryLimits()
	r, ok := parseRef(strings.TrimPrefix(ref, "$"))
	if !ok {
		return nil, 0, fmt.Errorf("values: %s: %w; want a handle such as \"r3\" or a reference such as \"$r3.rows\"", jsontext.QuoteClipped(ref), ErrBadRef)
	}
	q, err := parseQuery(expr)
	if err != nil {
		return nil, 0, err
	}
	whole, part, _, err := s.lookupPath(r, nil, scanBudget(s.maxResolved()))
	if errors.Is(err, errScanBudget) {
		return nil, 0, fmt.Errorf("values: %w: looking up %s would scan too much of its value", ErrTooLarge, r.quoted())
	}
	if err != nil {
		return nil, 0, err
	}
	src, err := querySourceOf(whole, part, inLimit, r)
	if err != nil {
		return nil, 0, err
	}
	budget := s.cfg.queryBudget(len(src.raw))
	code, err := gojq.Compile(q, gojq.WithLimits(gojq.Limits{Memory: budget}))
	if err != nil {
		return nil, 0, fmt.Errorf("values: %w: %s", ErrQuery, err)
	}
	gate := s.cfg.gate()
	wait, cancelWait := context.WithTimeout(ctx, timeout)
	reserved, err := gate.acquire(wait, addSizes(src.decodedSize(), budget, outLimit))
	cancelWait()
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, 0, fmt.Errorf("values: %w: stopped while other queries held the memory queries may hold at once (%s, WithQueryGate)", ErrQueryTimeout, size(gate.limit()))
	case err != nil:
		return nil, 0, fmt.Errorf("values: %w: for %v, other queries held the memory queries may hold at once (%s, WithQueryGate); try again", ErrQueryBusy, timeout, size(gate.limit()))
	}
	defer gate.release(reserved)
	input, err := src.decode(r)
	if err != nil {
		return nil, 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return collect(ctx, code.RunWithContext(ctx, input), queryBounds{timeout: timeout, output: outLimit, memory: budget, input: len(src.raw), ref: r})
}

// addSizes returns the sum of sizes, or the largest int when it does not
// fit.
func addSizes(ns ...int) int {
	sum := 0
	for _, n := range ns {
		if n > math.MaxInt-sum {
			return math.MaxInt
		}
		sum += n
	}
	return sum
}

// parseQuery parses expr.
func parseQuery(expr string) (*gojq.Query, error) {
	q, err := gojq.Parse(expr)
	if err != nil {
		var pe *gojq.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("values: %w: parse error at position %d (after %s): %s", ErrQuery, pe.Offset, jsontext.QuoteClipped(expr[:min(pe.Offset, len(expr))]), pe.Error())
		}
		return nil, fmt.Errorf("values: %w: %s", ErrQuery, err)
	}
	return q, nil
}

// A querySource is what a query decodes as its input.
type querySource struct {
	raw    []byte
	text   bool // a string, not JSON
	stream bool // JSON values one after another, the array of them
}

// querySourceOf returns what a query over whole (or its part, if not nil)
// decodes: the part a path names, or the whole value (a text as a string,
// or the JSON it holds). It refuses a binary value, and one larger than
// limit.
func querySourceOf(whole Value, part []byte, limit int, r refPath) (querySource, error) {
	x := whole.get()
	src := querySource{raw: part}
	switch {
	case part != nil:
	case x.kind == KindBinary:
		return src, fmt.Errorf("values: %w: %s is binary (%s); a query needs JSON or text", ErrQuery, r.quoted(), x.contentType())
	case x.kind == KindText && x.index() != nil:
		src.raw, src.stream = x.index().raw, x.index().stream
	case x.kind == KindText:
		if len(x.raw) > limit {
			return src, fmt.Errorf("values: %w: %s is %s of text, more than the %s a query may read", ErrTooLarge, r.quoted(), size(len(x.raw)), size(limit))
		}
		src.raw, src.text = x.raw, true
		return src, nil
	default:
		src.raw = x.raw
	}
	if len(src.raw) > limit {
		return src, fmt.Errorf("values: %w: %s is %s of JSON, more than the %s a query may decode; query a part of it (\"$%s.<field>\")", ErrTooLarge, r.quoted(), size(len(src.raw)), size(limit), r.text)
	}
	return src, nil
}

// decodedSize returns about the memory src takes decoded.
func (src querySource) decodedSize() int {
	if src.text {
		return len(src.raw)
	}
	return queryDecodeFactor * len(src.raw)
}

// decode returns src decoded.
func (src querySource) decode(r refPath) (any, error) {
	if src.text {
		return string(src.raw), nil
	}
	dec := json.NewDecoder(bytes.NewReader(src.raw))
	dec.UseNumber()
	var values []any
	for {
		var v any
		if err := dec.Decode(&v); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("values: %w: cannot decode %s: %v", ErrQuery, r.quoted(), err) // unreachable: stored JSON is valid
		}
		if !src.stream {
			return v, nil
		}
		values = append(values, v)
	}
	return values, nil
}

// queryBounds are the bounds collect reports: the time and memory of the
// run, and the output it may encode.
type queryBounds struct {
	timeout time.Duration
	output  int
	memory  int // the budget of the run (0: none)
	input   int // the size of its input
	ref     refPath
}

// collect runs the iterator to its end and returns its values as JSON:
// the value itself when there is one, else the array of them. It encodes
// each value as it comes, and no further than the output bound.
func collect(ctx context.Context, it gojq.Iter, b queryBounds) ([]byte, int, error) {
	out := []byte{'['}
	n := 0
	for {
		v, ok := it.Next()
		if !ok {
			break
		}
		if err, ok := v.(error); ok {
			return nil, 0, queryError(ctx, err, b)
		}
		if n > 0 {
			out = append(out, ',')
		}
		// The brackets of an array of values are not the output's.
		if out, ok = gojq.AppendJSON(out, v, b.output+1); !ok {
			return nil, 0, fmt.Errorf("values: %w: the query's result passed the %s a query may produce after %d values; narrow it (select, limit, first)", ErrTooLarge, size(b.output), n)
		}
		n++
	}
	if ctx.Err() != nil {
		return nil, 0, fmt.Errorf("values: %w: stopped after %v", ErrQueryTimeout, b.timeout)
	}
	if n == 1 {
		return out[1:], 1, nil
	}
	return append(out, ']'), n, nil
}

// maxQueryError bounds the part of a program's error message an error
// carries: jq's words, and the 4 KiB of a value error(v) shows.
const maxQueryError = 4200

// queryError returns the error for a run that ended with err.
func queryError(ctx context.Context, err error, b queryBounds) error {
	var le *gojq.LimitError
	if errors.As(err, &le) {
		need := "more than all of it"
		if le.Need < b.memory {
			need = size(le.Need)
		}
		return fmt.Errorf("values: %w: it had built %s of its %s budget (%s plus 8 bytes per byte of its %s input, WithQueryMemory) when %s needed %s; "+
			"narrow the query: select, limit or first the items you need, or query a part of the value (\"$%s.<field>\")",
			ErrQueryMemory, size(le.Used), size(b.memory), size(b.memory-queryMemoryPerInput*b.input), size(b.input), le.What, need, b.ref.text)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("values: %w: stopped after %v", ErrQueryTimeout, b.timeout)
	}
	msg := err.Error()
	if len(msg) > maxQueryError {
		msg = string(jsontext.AppendClipped(nil, []byte(msg[:maxQueryError+utf8.UTFMax]), maxQueryError))
	}
	var he *gojq.HaltError
	if errors.As(err, &he) {
		return fmt.Errorf("values: %w: the program halted: %s", ErrQuery, msg)
	}
	return fmt.Errorf("values: %w: %s", ErrQuery, msg)
}
