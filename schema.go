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

// Schema is a compiled JSON Schema for a tool's input. It is safe for
// concurrent use.
type Schema struct {
	s *jsonschema.Schema
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
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.LoadURL = func(u string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("%w: %q is not part of the schema, and schemas are never loaded from files or the network",
			ErrSchemaRef, strings.TrimPrefix(u, schemaBase))
	}
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
	return &Schema{s: s}, nil
}

// Validate checks the tool arguments args, one JSON value, against the
// schema. Numbers are compared exactly, never through float64. It returns
// nil when they conform, a [*ValidationError] listing every violation when
// they do not, and an error wrapping [ErrInvalidJSON] when args is not
// valid JSON. Arguments nested deeper than encoding/json decodes (10,000
// levels) cannot be validated and are an error.
func (s *Schema) Validate(args []byte) error {
	if _, _, err := scanJSON(args); err != nil {
		return err
	}
	return s.check(args, nil)
}

// Prepare resolves the references in the tool arguments args as
// [SessionValues.Resolve] does, then validates the result against s, and
// returns the resolved arguments and the references resolved. s may be
// nil: then the arguments are only resolved and checked for unresolved
// references.
//
// It fails with a [*ValidationError] when the resolved arguments violate the
// schema, naming the reference that supplied each offending value, and also
// when a reference did not resolve, even if the schema would accept the
// literal string: a tool must not receive "$r9" because of a typo. (The
// escape "$$r9" passes the literal "$r9".) With a ValidationError it still
// returns the resolved arguments and references, for logging. Other
// errors are those of Resolve and [Schema.Validate].
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
// input schema, or that hold references that did not resolve. Use
// [errors.As] to read the violations; [errors.Is] reports
// [ErrUnknownHandle] or [ErrNoPath] when an unresolved reference caused one.
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
	// Err is nil for a schema violation; for an unresolved reference it
	// wraps [ErrUnknownHandle] or [ErrNoPath].
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
		b = appendClipped(b, []byte(displayPointer(v.Pointer)), maxMessage)
		b = append(b, ": "...)
		b = appendClipped(b, []byte(v.Message), maxMessage)
		if v.Ref != "" && v.Err == nil {
			b = append(b, " (from "...)
			b = appendClipped(b, []byte(v.Ref), maxMessage)
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
	if s != nil {
		schemaVs, err := s.violations(args)
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
	if len(vs) == 0 {
		return nil
	}
	slices.SortStableFunc(vs, func(a, b Violation) int { return comparePointers(a.Pointer, b.Pointer) })
	vs = slices.CompactFunc(vs, func(a, b Violation) bool { return a.Pointer == b.Pointer && a.Message == b.Message })
	e := &ValidationError{Violations: vs}
	if len(vs) > maxViolations {
		e.Violations, e.Omitted = vs[:maxViolations:maxViolations], len(vs)-maxViolations
	}
	for i := range e.Violations {
		v := &e.Violations[i]
		if v.Err != nil {
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

// within reports whether the JSON pointer p is at or below base.
func within(p, base string) bool {
	return strings.HasPrefix(p, base) && (len(p) == len(base) || p[len(base)] == '/')
}

// violations validates args and returns the schema's violations.
func (s *Schema) violations(args []byte) ([]Violation, error) {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("values: cannot validate the arguments: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	err := validateRecovered(s.s, v)
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
// ±1e6), and a tool's arguments must never crash the dispatcher.
func validateRecovered(s *jsonschema.Schema, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("values: cannot validate the arguments: the validator failed (%v); a number with an exponent beyond ±1000000 is the usual cause", r)
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
