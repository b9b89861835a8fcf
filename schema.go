package values

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/agentvalues/values/internal/jsontext"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// ErrSchemaRef is wrapped by the error [CompileSchema] returns for a schema
// whose "$ref" (or "$schema") names a document outside the schema itself:
// a file, a URL, or anything else that would have to be loaded.
var ErrSchemaRef = errors.New("schema refers outside itself")

// schemaURL is the base URL of every compiled schema. Relative references
// resolve against it, to URLs no loader serves.
const (
	schemaBase = "mem:///"
	schemaURL  = schemaBase + "tool-input.json"
)

// schemaErr rewords an error of the schema compiler.
func schemaErr(err error) error {
	msg := strings.TrimPrefix(err.Error(), "jsonschema: ")
	msg = strings.ReplaceAll(msg, schemaURL, "schema")
	return errors.New("values: invalid schema: " + msg)
}

// Budget of validating one set of tool arguments. A recursive schema with
// alternatives (a filter tree whose "oneOf" branches all recurse) makes the
// validator apply subschemas a number of times that grows exponentially
// with the depth of the arguments, and the validator's cost per
// application grows with the depth too: 400 bytes 20 levels deep would
// take minutes. A validation may therefore take at most validationSteps
// steps plus validationStepsPerValue for each JSON value in the arguments,
// so that large arguments from references get a proportionally larger
// budget. A step is one application of a subschema to a part of the
// arguments, counted as stepCost of the deepest nesting in the arguments
// (the validator does not say where an application is, so arguments with
// one deep corner pay the deep rate everywhere). Ordinary arguments take
// a few steps a value. The budget is counted, not timed, so that the same
// arguments are accepted or refused on any machine, however loaded;
// validationBackstop of wall time is a backstop for causes the steps do
// not count, far above what any step budget takes. Past either, the
// validation stops and the arguments are rejected with a [Violation] at
// the root whose Err wraps [ErrTooComplex]; the tool is not called.
const (
	validationSteps         = 20_000
	validationStepsPerValue = 64
	validationBackstop      = 30 * time.Second
)

// stepBudget returns the steps a validation of arguments holding values
// JSON values may take.
func stepBudget(values int) int {
	return validationSteps + validationStepsPerValue*min(values, math.MaxInt/2/validationStepsPerValue)
}

// stepCost returns the steps one application of a subschema counts as in
// arguments whose arrays and objects nest depth deep: 1 up to 31 levels,
// 1 + depth²/1024 beyond (5 at 64 levels, 17 at maxArgsDepth), since the
// validator's cost per application grows with the depth (it rebuilds the
// schema path of each failure, one entry per application around it):
// measured, a failing application 128 levels deep costs about 100 times
// one 10 levels deep, and 20 times one 30 deep.
func stepCost(depth int) int { return 1 + depth*depth/1024 }

// Schema is a compiled JSON Schema for a tool's input. It is safe for
// concurrent use: each validation running at the same time uses its own
// compiled copy, made on demand and kept for reuse, so that each is held
// to its own budget (see [Schema.Validate]).
type Schema struct {
	raw []byte

	// fast is the schema as the fast path reads it, of fastNodes
	// subschemas; nil when it is not of the subset (schema_fast.go).
	fast      *fastSchema
	fastNodes int

	mu   sync.Mutex
	idle []*compiled // copies not in use

	// backstop replaces validationBackstop when not 0: a seam for tests,
	// which set it negative to reach it at once, or to hours to take wall
	// time out of the budget.
	backstop time.Duration
}

// compiled is one compilation of a Schema with the budget of the
// validation in progress.
type compiled struct {
	s        *jsonschema.Schema
	steps    int // steps left
	cost     int // steps an application counts as: see stepCost
	checks   int // applications counted, for reading the clock every 64
	deadline time.Time
}

// CompileSchema compiles a tool's input schema, raw JSON in any draft from
// draft-04 to 2020-12, chosen by its "$schema" (2020-12 when it has none).
// References are followed only inside the schema itself ("#/$defs/row", or
// a subschema's "$id"): a "$ref" or "$schema" naming a file, a URL or any
// other document is refused with an error wrapping [ErrSchemaRef], and
// nothing is ever read from disk or network. As the drafts say, "format" is
// checked by draft-07 and earlier schemas and is an annotation only from
// 2019-09 on. A schema that is not valid JSON or not valid against its
// draft's meta-schema is an error.
func CompileSchema(raw []byte) (*Schema, error) {
	raw = bytes.Clone(raw)
	c, err := compile(raw)
	if err != nil {
		return nil, err
	}
	fast, nodes := compileFast(raw)
	return &Schema{raw: raw, idle: []*compiled{c}, fast: fast, fastNodes: nodes}, nil
}

// compile compiles raw with a step counter attached to every subschema.
func compile(raw []byte) (*compiled, error) {
	cs := new(compiled)
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.LoadURL = func(u string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("%w: %q is not part of the schema, and schemas are never loaded from files or the network",
			ErrSchemaRef, strings.TrimPrefix(u, schemaBase))
	}
	c.RegisterExtension("agentvalues-steps", nil, stepCounter{cs})
	if err := c.AddResource(schemaURL, bytes.NewReader(raw)); err != nil {
		return nil, schemaErr(err)
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		if errors.Is(err, ErrSchemaRef) {
			return nil, fmt.Errorf("values: invalid schema: %w", errors.Unwrap(err))
		}
		var se *jsonschema.SchemaError
		if errors.As(err, &se) && se.Err != nil {
			err = se.Err
		}
		return nil, schemaErr(err)
	}
	cs.s = s
	return cs, nil
}

// stepCounter is a validator extension present in every subschema of a
// compiled copy: the validator calls it once each time it has applied a
// subschema to a value (after the keywords that recurse), and it stops the
// validation, by panicking with an errOverBudget, once the validation in
// progress has spent its steps or reached its backstop (the clock is read
// every 64 applications).
// Applications that stop early, at a failed "type", do not reach it; each
// costs little more than the subschema that applied it.
type stepCounter struct{ c *compiled }

func (sc stepCounter) Compile(jsonschema.CompilerContext, map[string]any) (jsonschema.ExtSchema, error) {
	return sc, nil
}

func (sc stepCounter) Validate(jsonschema.ValidationContext, any) error {
	c := sc.c
	c.steps -= c.cost
	if c.steps < 0 {
		panic(errOverBudget{fmt.Errorf("values: %w: checking the arguments against the schema took too many steps; pass a shallower or smaller value", ErrTooComplex)})
	}
	if c.checks++; c.checks%64 == 0 && time.Now().After(c.deadline) {
		panic(errOverBudget{fmt.Errorf("values: %w: checking the arguments against the schema took too long; pass a shallower or smaller value", ErrTooComplex)})
	}
	return nil
}

// errOverBudget is the panic that ends a validation over its budget.
type errOverBudget struct{ err error }

func (e errOverBudget) Error() string { return e.err.Error() }

// get returns a compiled copy of s for one validation.
func (s *Schema) get() (*compiled, error) {
	s.mu.Lock()
	if n := len(s.idle); n > 0 {
		c := s.idle[n-1]
		s.idle = s.idle[:n-1]
		s.mu.Unlock()
		return c, nil
	}
	s.mu.Unlock()
	return compile(s.raw) // compiled once before, so this succeeds
}

// put returns c, used, to s.
func (s *Schema) put(c *compiled) {
	s.mu.Lock()
	s.idle = append(s.idle, c)
	s.mu.Unlock()
}

// Validate checks the tool arguments args, one JSON value, against the
// schema. Numbers are compared exactly, never through float64. It returns
// nil when they conform, a [*ValidationError] listing every violation when
// they do not, and an error wrapping [ErrInvalidJSON] when args is not
// valid JSON.
//
// Arguments past a limit of validation are not validated: arrays and
// objects nested more than 128 deep (the limit of serde_json, far more than
// tool arguments need), numbers of more than 1000 digits or with a
// magnitude beyond 1e±400 (the validator compares numbers exactly with
// math/big, at a cost that grows with both). The ValidationError lists,
// instead of schema violations, each number and container past a limit,
// with an Err wrapping [ErrTooComplex]. A validation may take at most
// 20,000 steps plus 64 per JSON value in the arguments: a recursive schema
// with alternatives (a filter tree whose "oneOf" branches all recurse)
// would otherwise take exponential time in the depth of the arguments. A
// step is one application of a subschema to a part of the arguments; in
// arguments nested more than 31 levels deep it counts as more than one
// (1 + depth²/1024: 17 at 128 levels), since each costs the validator
// more. The budget is counted, not timed, so the same arguments are
// accepted or refused on any machine; only a validation still running
// after 30 s of wall time, which no step budget comes near, is stopped
// by the clock. Past the budget the validation stops and the
// ValidationError holds one violation at the root wrapping ErrTooComplex.
func (s *Schema) Validate(args []byte) error {
	if err := jsontext.Valid(args); err != nil {
		return fmt.Errorf("values: %w", err)
	}
	return s.check(args, nil)
}

// Prepare resolves the references in the tool arguments args as
// [SessionValues.Resolve] does, then validates the result against s, and
// returns the resolved arguments and the references resolved. s may be
// nil: then the arguments are only resolved and checked for unresolved
// references, and the limits of validation do not apply.
//
// It fails with a [*ValidationError] when the resolved arguments violate the
// schema, naming the reference that supplied each offending value, and also
// when a reference did not resolve or is malformed ("$r1..rows"), even if
// the schema would accept the literal string: a tool must not receive
// "$r9" because of a typo. (The escape "$$r9" passes the literal "$r9".)
// The resolved arguments are checked against the limits of validation as
// Validate checks arguments, and a value past one is reported with the
// reference that supplied it. With a ValidationError it still returns the
// resolved arguments and references, for logging. Other errors are those
// of Resolve and [Schema.Validate].
func (s *SessionValues) Prepare(sch *Schema, args []byte) ([]byte, []string, error) {
	res, err := s.ResolveDetail(args)
	if err != nil {
		return nil, nil, err
	}
	resolved := res.Resolved()
	if err := sch.check(res.Args, res.Refs); err != nil {
		return res.Args, resolved, err
	}
	return res.Args, resolved, nil
}

// violations validates args, of the given shape, within the budget of
// validation, and returns the schema's violations and the steps the
// validation took.
func (s *Schema) violations(args []byte, shape argsShape) (vs []Violation, steps int, err error) {
	v, err := decodeForValidation(args)
	if err != nil {
		return nil, 0, err
	}
	c, err := s.get()
	if err != nil {
		return nil, 0, err
	}
	backstop := s.backstop
	if backstop == 0 {
		backstop = validationBackstop
	}
	budget := stepBudget(shape.values)
	c.steps, c.cost, c.checks, c.deadline = budget, stepCost(shape.depth), 0, time.Now().Add(backstop)
	err = validateRecovered(c.s, v)
	steps = budget - c.steps
	s.put(c)
	if over, ok := err.(errOverBudget); ok {
		return []Violation{{Message: strings.TrimPrefix(over.err.Error(), "values: "), Err: over.err}}, steps, nil
	}
	if err == nil {
		return nil, steps, nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil, steps, fmt.Errorf("values: cannot validate the arguments: %s", strings.TrimPrefix(err.Error(), "jsonschema: "))
	}
	// Report the leaves of the cause tree: the specific failures, not the
	// "anyOf failed" around them.
	stack := []*jsonschema.ValidationError{ve}
	for len(stack) > 0 {
		e := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if len(e.Causes) == 0 {
			vs = append(vs, Violation{Pointer: instancePointer(e.InstanceLocation), Message: schemaMessage(e.Message)})
			continue
		}
		for i := len(e.Causes) - 1; i >= 0; i-- {
			stack = append(stack, e.Causes[i])
		}
	}
	return vs, steps, nil
}

// decodeForValidation decodes args for the validator: by decodeArgs, or,
// when it declines, by encoding/json's Decoder, whose errors (and
// leniencies) it keeps.
func decodeForValidation(args []byte) (any, error) {
	if v, ok := decodeArgs(args); ok {
		return v, nil
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("values: cannot validate the arguments: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	return v, nil
}

// validateRecovered runs the validator, turning a panic into an error: it
// dereferences nil on a number whose exponent math/big refuses (beyond
// ±1e6), and a tool's arguments must never crash the dispatcher. The
// limits of validation keep such numbers from reaching it; this is the
// guard for causes not known. A validation over its budget ends with the
// errOverBudget it panicked with.
func validateRecovered(s *jsonschema.Schema, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if over, ok := r.(errOverBudget); ok {
				err = over
				return
			}
			err = fmt.Errorf("values: cannot validate the arguments: the validator failed (%v)", r)
		}
	}()
	return s.Validate(v)
}
