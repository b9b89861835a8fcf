package values

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentvalues/values/internal/jsontext"
	"github.com/itchyny/gojq"
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
)

// Default bounds of a query ([WithQueryLimits]).
const (
	// DefaultQueryTime is how long one query may run.
	DefaultQueryTime = 5 * time.Second
	// DefaultQueryInput is the largest value a query decodes: decoded, a
	// JSON value takes several times its size in memory.
	DefaultQueryInput = 64 << 20
	// DefaultQueryOutput is the largest result a query may produce, as
	// JSON.
	DefaultQueryOutput = 16 << 20
)

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
// A query is bounded ([WithQueryLimits]): past its time (5 s by default,
// or ctx's deadline if sooner) it is stopped and fails with
// [ErrQueryTimeout]; a value larger than its input bound (64 MiB) is not
// decoded and a result larger than its output bound (16 MiB of JSON) is
// not stored, both failing with [ErrTooLarge]. It runs with no
// environment ($ENV is {}), no input or inputs, and no modules: it sees
// only the value. A program that does not parse or fails as it runs is
// [ErrQuery], in jq's words. Nothing is stored when it fails.
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

// runQuery runs expr over what ref names and returns its result as JSON
// and the number of values the program emitted.
func (s *SessionValues) runQuery(ctx context.Context, ref, expr string) ([]byte, int, error) {
	timeout, inLimit, outLimit := s.cfg.queryLimits()
	r, ok := parseRef(strings.TrimPrefix(ref, "$"))
	if !ok {
		return nil, 0, fmt.Errorf("values: %s: %w; want a handle such as \"r3\" or a reference such as \"$r3.rows\"", jsontext.QuoteClipped(ref), ErrBadRef)
	}
	code, err := compileQuery(expr)
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
	input, err := queryInput(whole, part, inLimit, r)
	if err != nil {
		return nil, 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return collect(ctx, code.RunWithContext(ctx, input), outLimit, timeout)
}

// compileQuery parses and compiles expr with nothing from outside: no
// environment, no input iterator, no module loader.
func compileQuery(expr string) (*gojq.Code, error) {
	q, err := gojq.Parse(expr)
	if err != nil {
		var pe *gojq.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("values: %w: parse error at position %d (after %s): %s", ErrQuery, pe.Offset, jsontext.QuoteClipped(expr[:min(pe.Offset, len(expr))]), pe.Error())
		}
		return nil, fmt.Errorf("values: %w: %s", ErrQuery, err)
	}
	code, err := gojq.Compile(q)
	if err != nil {
		return nil, fmt.Errorf("values: %w: %s", ErrQuery, err)
	}
	return code, nil
}

// queryInput decodes the input of a query: the part a path names, or the
// whole value (a text as a string, or the JSON it holds).
func queryInput(whole Value, part []byte, limit int, r refPath) (any, error) {
	x := whole.get()
	raw, stream := part, false
	switch {
	case part != nil:
	case x.kind == KindBinary:
		return nil, fmt.Errorf("values: %w: %s is binary (%s); a query needs JSON or text", ErrQuery, r.quoted(), x.ctype)
	case x.kind == KindText && x.index() != nil:
		raw, stream = x.index().raw, x.index().stream
	case x.kind == KindText:
		if len(x.raw) > limit {
			return nil, fmt.Errorf("values: %w: %s is %s of text, more than the %s a query may read", ErrTooLarge, r.quoted(), size(len(x.raw)), size(limit))
		}
		return string(x.raw), nil
	default:
		raw = x.raw
	}
	if len(raw) > limit {
		return nil, fmt.Errorf("values: %w: %s is %s of JSON, more than the %s a query may decode; query a part of it (\"$%s.<field>\")", ErrTooLarge, r.quoted(), size(len(raw)), size(limit), r.text)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
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
		if !stream {
			return v, nil
		}
		values = append(values, v)
	}
	return values, nil
}

// collect runs the iterator to its end and returns its values as JSON:
// the value itself when there is one, else the array of them.
func collect(ctx context.Context, it gojq.Iter, limit int, timeout time.Duration) ([]byte, int, error) {
	var encoded [][]byte
	total := 0
	for {
		v, ok := it.Next()
		if !ok {
			break
		}
		if err, ok := v.(error); ok {
			if ctx.Err() != nil {
				return nil, 0, fmt.Errorf("values: %w: stopped after %v", ErrQueryTimeout, timeout)
			}
			var he *gojq.HaltError
			if errors.As(err, &he) {
				return nil, 0, fmt.Errorf("values: %w: the program halted: %s", ErrQuery, err)
			}
			return nil, 0, fmt.Errorf("values: %w: %s", ErrQuery, err)
		}
		b, err := gojq.Marshal(v)
		if err != nil {
			return nil, 0, fmt.Errorf("values: %w: %s", ErrQuery, err)
		}
		if total += len(b) + 1; total > limit {
			return nil, 0, fmt.Errorf("values: %w: the query's result passed the %s a query may produce after %d values; narrow it (select, limit, first)", ErrTooLarge, size(limit), len(encoded))
		}
		encoded = append(encoded, b)
	}
	if ctx.Err() != nil {
		return nil, 0, fmt.Errorf("values: %w: stopped after %v", ErrQueryTimeout, timeout)
	}
	if len(encoded) == 1 {
		return encoded[0], 1, nil
	}
	out := make([]byte, 0, total+2)
	out = append(out, '[')
	for i, b := range encoded {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, b...)
	}
	return append(out, ']'), len(encoded), nil
}

// QueryValueTool returns the definition of the query_value tool, which
// [SessionValues.HandleQueryValue] serves. Its input is {"ref": string,
// "jq": string}, both required. Each call returns a new copy.
func QueryValueTool() Tool {
	return Tool{
		Name: "query_value",
		Description: "Ask a question of a stored value (a tool result kept under a handle such as r3) without reading it: " +
			"run a jq program over it. The result is stored under a new handle and shown (whole when small, else previewed); " +
			"pass it on to another tool as \"$rN\". Examples: {\"ref\":\"r3\",\"jq\":\"length\"}, " +
			"{\"ref\":\"r3\",\"jq\":\"[.[] | select(.status == 500) | .id]\"}, {\"ref\":\"$r3.rows\",\"jq\":\"max_by(.size)\"}. " +
			"Text is a string (JSON Lines: the array of records). No input, env or modules; bounded in time and size.",
		InputSchema: json.RawMessage(queryValueSchema),
	}
}

const queryValueSchema = `{"type":"object","properties":{` +
	`"ref":{"type":"string","description":"handle or reference to query: \"r3\", \"$r3\", \"$r3.rows\""},` +
	`"jq":{"type":"string","description":"a jq program, such as \"[.[] | select(.path | endswith(\\\"_test.go\\\"))] | length\""}},` +
	`"required":["ref","jq"],"additionalProperties":false}`

// HandleQueryValue serves one query_value call: args is the call's raw
// JSON arguments, {"ref": string, "jq": string} (see [QueryValueTool]),
// never resolved (its ref is a reference). It returns what
// [SessionValues.Query] returns: the new handle and the text for the
// transcript. Its error is meant for the model: arguments that are not
// such an object wrap [ErrReadArgs]; the others are those of Query. It
// never panics on any args.
func (s *SessionValues) HandleQueryValue(ctx context.Context, args []byte) (Observation, error) {
	var in struct {
		Ref *string `json:"ref"`
		JQ  *string `json:"jq"`
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil || in.Ref == nil || in.JQ == nil {
		return Observation{}, fmt.Errorf(`values: query_value: %w: want a JSON object such as {"ref":"r3","jq":"length"}, with no other fields`, ErrReadArgs)
	}
	return s.Query(ctx, *in.Ref, *in.JQ)
}
