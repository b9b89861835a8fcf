package values

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
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

// ErrTooComplex is wrapped by the [Violation.Err] of a number or a nesting
// of containers in tool arguments past a limit of validation
// ([MaxArgsDepth], [MaxNumberExponent], [MaxNumberDigits]).
var ErrTooComplex = errors.New("too complex to validate")

// Limits of the tool arguments that [Schema.Validate] and
// [SessionValues.Prepare] validate. The validator compares numbers exactly,
// with math/big, at a cost that grows with a number's exponent and digits
// (1e999999 takes about 27 ms), and validates a nested value at a cost that
// grows faster than its depth under a recursive schema (a failing array
// nested 512 deep takes about 0.4 s, 1600 deep 7 s). Within these limits
// arguments cost at most about 15 times as much to validate as shallow
// ones of the same size.
// Arguments past a limit are not validated: Validate and Prepare first
// check them in one cheap pass and report each number and each container
// past a limit as a [Violation] whose Err wraps [ErrTooComplex].
const (
	// MaxArgsDepth is the deepest nesting of arrays and objects
	// validated: 128 levels (the limit of serde_json), far more than tool
	// arguments need. An array or object nested deeper is a violation at
	// its pointer, and what it holds is not looked at.
	MaxArgsDepth = 128
	// MaxNumberExponent bounds the magnitude of a number's decimal exponent
	// in normalized form (the power of ten of its first nonzero digit):
	// numbers from 1e-400 to 9.9…e400 in magnitude, and 0, are validated
	// (float64 reaches about 1.8e308). For 0 the exponent as written
	// counts: 0e500 is a violation.
	MaxNumberExponent = 400
	// MaxNumberDigits bounds the digits of a number, those of its
	// fraction and exponent included.
	MaxNumberDigits = 1000
)

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
// with the depth of the arguments, and the validator's cost per step grows
// with the depth too: 400 bytes 20 levels deep would take minutes. A
// validation may therefore take at most ValidationSteps steps (the
// applications of a subschema to a part of the arguments) plus
// ValidationStepsPerValue for each JSON value in the arguments, and at most
// ValidationTime plus ValidationTimePerValue per value of wall time, so
// that large arguments from references get a proportionally larger budget
// and small ones cannot pin a core. Ordinary arguments take a few steps
// and a few microseconds per value; the time budget is a generous
// backstop. Past either budget the validation stops and the
// arguments are rejected with a [Violation] at the root whose Err wraps
// [ErrTooComplex]; the tool is not called.
const (
	ValidationSteps         = 20_000
	ValidationStepsPerValue = 64
	ValidationTime          = time.Second
	ValidationTimePerValue  = 100 * time.Microsecond
)

// Schema is a compiled JSON Schema for a tool's input. It is safe for
// concurrent use: each validation running at the same time uses its own
// compiled copy, made on demand and kept for reuse, so that each is held
// to its own [MaxValidationSteps].
type Schema struct {
	raw []byte

	mu   sync.Mutex
	idle []*compiled // copies not in use
}

// compiled is one compilation of a Schema with the budget of the
// validation in progress.
type compiled struct {
	s        *jsonschema.Schema
	steps    int // steps left
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
	return &Schema{raw: raw, idle: []*compiled{c}}, nil
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
// progress has spent its steps or its time (read every 64 steps).
// Applications that stop early, at a failed "type", do not reach it; each
// costs little more than the subschema that applied it.
type stepCounter struct{ c *compiled }

func (sc stepCounter) Compile(jsonschema.CompilerContext, map[string]any) (jsonschema.ExtSchema, error) {
	return sc, nil
}

func (sc stepCounter) Validate(jsonschema.ValidationContext, any) error {
	c := sc.c
	c.steps--
	if c.steps < 0 {
		panic(errOverBudget{fmt.Errorf("values: %w: checking the arguments against the schema took too many steps; pass a shallower or smaller value", ErrTooComplex)})
	}
	if c.steps%64 == 0 && time.Now().After(c.deadline) {
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
// valid JSON. Arguments past a limit of validation ([MaxArgsDepth],
// [MaxNumberExponent], [MaxNumberDigits]) are not validated: the
// ValidationError lists, instead of schema violations, each number and
// container past a limit, with an Err wrapping [ErrTooComplex].
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

// Limits of a ValidationError, so that an error about a huge argument
// still fits in a model's context.
const (
	maxViolations       = 100 // violations kept in ValidationError.Violations
	maxViolationsListed = 20  // violations listed by Error
	maxMessage          = 256 // bytes of one message, and of one pointer, in Error
)

// ValidationError reports tool arguments that do not conform to a tool's
// input schema, that are past a limit of validation, or that hold
// references that did not resolve. Use [errors.As] to read the violations;
// [errors.Is] reports [ErrBadRef], [ErrUnknownHandle], [ErrNoPath] or
// [ErrUnavailable] (a durable value that could not be read back) when an
// unresolved reference caused one, and [ErrTooComplex] when arguments
// past a limit did.
type ValidationError struct {
	// Violations lists at most 100 violations, ordered by pointer.
	Violations []Violation
	// Omitted is the number of further violations not listed.
	Omitted int
}

// Violation is one reason tool arguments were rejected.
type Violation struct {
	// Pointer locates the offending value in the resolved arguments, as a
	// JSON pointer (RFC 6901); "" is the arguments themselves.
	Pointer string
	// Message says what is wrong, for a model to act on: "want array, got
	// object", or why a reference did not resolve.
	Message string
	// Ref is the reference, as written, that supplied the value at Pointer
	// (or a value around it), or the unresolved reference found there; ""
	// when the value was written in the arguments.
	Ref string
	// Err is nil for a schema violation. For an unresolved reference it
	// wraps [ErrBadRef], [ErrUnknownHandle], [ErrNoPath] or
	// [ErrUnavailable]; for a value past a limit of validation,
	// [ErrTooComplex].
	Err error
}

// Error lists the violations, one per line after a summary, each as its
// pointer, its message and the reference behind it:
//
//	values: arguments do not match the tool's input schema (2 violations)
//	/rows: want array, got object (from $r3)
//	/limit: "$r9" is not a stored value; stored: r1…r4
//
// The arguments themselves are shown as "(root)". At most 20 violations are
// listed, each clipped to a few hundred bytes, then "… and N more".
func (e *ValidationError) Error() string {
	n := len(e.Violations) + e.Omitted
	var b []byte
	b = append(b, "values: arguments do not match the tool's input schema ("...)
	b = strconv.AppendInt(b, int64(n), 10)
	if n == 1 {
		b = append(b, " violation)"...)
	} else {
		b = append(b, " violations)"...)
	}
	for i, v := range e.Violations {
		if i == maxViolationsListed {
			break
		}
		b = append(b, '\n')
		b = jsontext.AppendClipped(b, []byte(displayPointer(v.Pointer)), maxMessage)
		b = append(b, ": "...)
		b = jsontext.AppendClipped(b, []byte(v.Message), maxMessage)
		if v.Ref != "" && v.supplied() {
			b = append(b, " (from "...)
			b = jsontext.AppendClipped(b, []byte(v.Ref), maxMessage)
			b = append(b, ')')
		}
	}
	if more := n - min(len(e.Violations), maxViolationsListed); more > 0 {
		b = fmt.Appendf(b, "\n… and %d more", more)
	}
	return string(b)
}

// Unwrap returns the errors of the unresolved references among the
// violations.
func (e *ValidationError) Unwrap() []error {
	var errs []error
	for _, v := range e.Violations {
		if v.Err != nil {
			errs = append(errs, v.Err)
		}
	}
	return errs
}

// supplied reports whether v.Ref, if any, supplied the offending value (rather
// than being the unresolved reference itself).
func (v *Violation) supplied() bool {
	return v.Err == nil || errors.Is(v.Err, ErrTooComplex)
}

func displayPointer(p string) string {
	if p == "" {
		return "(root)"
	}
	return p
}

// check validates the validated JSON args against s (none when s is nil)
// and turns the references in refs that did not resolve into violations.
func (s *Schema) check(args []byte, refs []Reference) error {
	var vs []Violation
	var unresolved map[string]bool
	for _, r := range refs {
		if r.Err != nil {
			if unresolved == nil {
				unresolved = map[string]bool{}
			}
			msg := strings.TrimPrefix(r.Err.Error(), "values: ")
			vs = append(vs, Violation{Pointer: r.Pointer, Message: msg, Ref: r.Ref, Err: r.Err})
			unresolved[r.Pointer] = true
		}
	}
	omitted := 0
	if s != nil {
		limitVs, more, values := checkLimits(args)
		if len(limitVs) > 0 {
			vs, omitted = append(vs, limitVs...), more // too costly to validate
		} else {
			schemaVs, err := s.violations(args, values)
			if err != nil {
				return err
			}
			for _, v := range schemaVs {
				if unresolved[v.Pointer] {
					continue // about the literal left in place of the reference
				}
				vs = append(vs, v)
			}
		}
	}
	if len(vs) == 0 {
		return nil
	}
	slices.SortStableFunc(vs, func(a, b Violation) int { return comparePointers(a.Pointer, b.Pointer) })
	vs = slices.CompactFunc(vs, func(a, b Violation) bool { return a.Pointer == b.Pointer && a.Message == b.Message })
	e := &ValidationError{Violations: vs, Omitted: omitted}
	if len(vs) > maxViolations {
		e.Violations, e.Omitted = vs[:maxViolations:maxViolations], omitted+len(vs)-maxViolations
	}
	for i := range e.Violations {
		v := &e.Violations[i]
		if !v.supplied() {
			continue
		}
		for _, r := range refs {
			if r.Err == nil && within(v.Pointer, r.Pointer) {
				v.Ref = r.Ref
				break
			}
		}
	}
	return e
}

// checkLimits checks the validated JSON args against the limits of
// validation in one pass, without recursion, and returns a violation for
// each number and each container past a limit (what such a container
// holds is not looked at), at most maxViolations of them, and the number
// of others. It also counts the JSON values in args (containers, strings
// other than keys, numbers and literals).
func checkLimits(args []byte) (vs []Violation, more, values int) {
	var w jsontext.Walker
	report := func(problem string) {
		if len(vs) == maxViolations {
			more++
			return
		}
		err := fmt.Errorf("values: %w: %s", ErrTooComplex, problem)
		vs = append(vs, Violation{Pointer: w.Pointer(args), Message: strings.TrimPrefix(err.Error(), "values: "), Err: err})
	}
	w.MaxDepth = MaxArgsDepth
	w.TooDeep = func(int) error {
		report(fmt.Sprintf("nested more than %d levels deep; pass a flatter value", MaxArgsDepth))
		return nil
	}
	scalars := 0
	err := w.Walk(args, func(start, end int) error {
		scalars++
		if c := args[start]; c == '-' || '0' <= c && c <= '9' {
			if problem := checkNumber(args[start:end]); problem != "" {
				report(problem)
			}
		}
		return nil
	})
	if err != nil {
		panic("values: checkLimits: " + err.Error()) // args were validated
	}
	return vs, more, scalars + w.Containers()
}

// checkNumber checks the valid number d against MaxNumberDigits and
// MaxNumberExponent, and returns what is wrong with it, if anything.
func checkNumber(d []byte) (problem string) {
	i, start := 0, 0
	if d[i] == '-' {
		i++
	}
	intStart := i
	i = jsontext.SkipDigits(d, i)
	intEnd := i
	fracStart, fracEnd := i, i
	if i < len(d) && d[i] == '.' {
		fracStart = i + 1
		i = jsontext.SkipDigits(d, fracStart)
		fracEnd = i
	}
	exp, expDigits := 0, 0
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		neg := d[i] == '-'
		if d[i] == '+' || d[i] == '-' {
			i++
		}
		expStart := i
		i = jsontext.SkipDigits(d, i)
		expDigits = i - expStart
		var ok bool
		if exp, ok = jsontext.ParseUint(d[expStart:i], 1e9); !ok {
			exp = 1e9 // far past the limit: saturate rather than overflow
		}
		if neg {
			exp = -exp
		}
	}
	num := d[start:i]
	if n := intEnd - intStart + fracEnd - fracStart + expDigits; n > MaxNumberDigits {
		return fmt.Sprintf("the number %s has %d digits, more than the %d that can be validated", clipNumber(num), n, MaxNumberDigits)
	}
	// The power of ten of the first nonzero digit.
	e10, zero := exp, true
	if d[intStart] != '0' {
		e10, zero = exp+intEnd-intStart-1, false
	} else if k := bytes.IndexFunc(d[fracStart:fracEnd], func(r rune) bool { return r != '0' }); k >= 0 {
		e10, zero = exp-k-1, false
	}
	switch {
	case zero && (e10 > MaxNumberExponent || e10 < -MaxNumberExponent):
		return fmt.Sprintf("the number %s has an exponent beyond ±%d; write it as 0", clipNumber(num), MaxNumberExponent)
	case e10 > MaxNumberExponent:
		return fmt.Sprintf("the number %s is too large to validate; magnitudes below 1e%d can be", clipNumber(num), MaxNumberExponent+1)
	case e10 < -MaxNumberExponent:
		return fmt.Sprintf("the number %s is too close to zero to validate; write 0, or a magnitude of at least 1e-%d", clipNumber(num), MaxNumberExponent)
	}
	return ""
}

// clipNumber returns the number num as written, or its first and last
// digits around an jsontext.Ellipsis when it is long.
func clipNumber(num []byte) string {
	const keep = 12
	if len(num) <= 2*keep+len(jsontext.Ellipsis) {
		return string(num)
	}
	return string(num[:keep]) + jsontext.Ellipsis + string(num[len(num)-keep:])
}

// within reports whether the JSON pointer p is at or below base.
func within(p, base string) bool {
	return strings.HasPrefix(p, base) && (len(p) == len(base) || p[len(base)] == '/')
}

// violations validates args, which hold values JSON values, within the
// budget of validation, and returns the schema's violations.
func (s *Schema) violations(args []byte, values int) ([]Violation, error) {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("values: cannot validate the arguments: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	c, err := s.get()
	if err != nil {
		return nil, err
	}
	c.steps = ValidationSteps + ValidationStepsPerValue*min(values, maxInt/2/ValidationStepsPerValue)
	c.deadline = time.Now().Add(ValidationTime + ValidationTimePerValue*time.Duration(min(values, 1<<32)))
	err = validateRecovered(c.s, v)
	s.put(c)
	if over, ok := err.(errOverBudget); ok {
		return []Violation{{Message: strings.TrimPrefix(over.err.Error(), "values: "), Err: over.err}}, nil
	}
	if err == nil {
		return nil, nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil, fmt.Errorf("values: cannot validate the arguments: %s", strings.TrimPrefix(err.Error(), "jsonschema: "))
	}
	// Report the leaves of the cause tree: the specific failures, not the
	// "anyOf failed" around them.
	var vs []Violation
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
	return vs, nil
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

// instancePointer turns the validator's instance location, whose tokens
// are also URL path-escaped, into an RFC 6901 JSON pointer.
func instancePointer(loc string) string {
	if !strings.Contains(loc, "%") {
		return loc
	}
	toks := strings.Split(loc, "/")
	for i, t := range toks {
		if u, err := url.PathUnescape(t); err == nil {
			toks[i] = u
		}
	}
	return strings.Join(toks, "/")
}

// schemaMessage words the validator's message the way this package's
// errors read.
func schemaMessage(m string) string {
	if rest, ok := strings.CutPrefix(m, "expected "); ok {
		if want, got, ok := strings.Cut(rest, ", but got "); ok {
			return "want " + want + ", got " + got
		}
	}
	if rest, ok := strings.CutPrefix(m, "missing properties: "); ok {
		if strings.Contains(rest, ",") {
			return "missing required properties " + rest
		}
		return "missing required property " + rest
	}
	if rest, ok := strings.CutPrefix(m, "additionalProperties "); ok {
		if names, ok := strings.CutSuffix(rest, " not allowed"); ok {
			return "properties not allowed by the schema: " + names
		}
	}
	return m
}

// comparePointers orders JSON pointers token by token, array indexes by
// number.
func comparePointers(a, b string) int {
	for a != "" && b != "" {
		var ta, tb string
		ta, a = nextToken(a)
		tb, b = nextToken(b)
		if ta == tb {
			continue
		}
		if isDigits(ta) && isDigits(tb) && len(ta) != len(tb) {
			return len(ta) - len(tb)
		}
		return strings.Compare(ta, tb)
	}
	return len(a) - len(b)
}

// nextToken splits the first token off the non-empty pointer p.
func nextToken(p string) (tok, rest string) {
	p = p[1:]
	if i := strings.IndexByte(p, '/'); i >= 0 {
		return p[:i], p[i:]
	}
	return p, ""
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
