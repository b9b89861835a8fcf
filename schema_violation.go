package values

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/agentvalues/values/internal/jsontext"
)

// This file holds how rejected tool arguments are reported: every
// violation by JSON pointer, with the reference behind it.

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
		limitVs, more, shape := checkLimits(args)
		if len(limitVs) > 0 {
			vs, omitted = append(vs, limitVs...), more // too costly to validate
		} else if s.fast == nil || !s.fast.admits(s.fastNodes, args, shape) {
			schemaVs, _, err := s.violations(args, shape)
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

// within reports whether the JSON pointer p is at or below base.
func within(p, base string) bool {
	return strings.HasPrefix(p, base) && (len(p) == len(base) || p[len(base)] == '/')
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
