package values

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/agentvalues/values/internal/jsontext"
)

// This file holds the limits of what validation accepts, checked in one
// cheap pass before the validator runs.

// ErrTooComplex is wrapped by the [Violation.Err] of tool arguments past a
// limit of validation: arrays and objects nested more than 128 deep, a
// number of more than 1000 digits or a magnitude beyond 1e±400, or a
// validation that spent its budget of steps or ran for 30 s (see
// [Schema.Validate]).
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
	// maxArgsDepth is the deepest nesting of arrays and objects
	// validated: 128 levels (the limit of serde_json), far more than tool
	// arguments need. An array or object nested deeper is a violation at
	// its pointer, and what it holds is not looked at.
	maxArgsDepth = 128
	// maxNumberExponent bounds the magnitude of a number's decimal exponent
	// in normalized form (the power of ten of its first nonzero digit):
	// numbers from 1e-400 to 9.9…e400 in magnitude, and 0, are validated
	// (float64 reaches about 1.8e308). For 0 the exponent as written
	// counts: 0e500 is a violation.
	maxNumberExponent = 400
	// maxNumberDigits bounds the digits of a number, those of its
	// fraction and exponent included.
	maxNumberDigits = 1000
)

// argsShape is what the budget of a validation is sized by: the number of
// JSON values in the arguments (containers, strings other than keys,
// numbers and literals), and the deepest nesting of their arrays and
// objects.
type argsShape struct{ values, depth int }

// checkLimits checks the validated JSON args against the limits of
// validation, without recursion, and returns a violation for each number
// and each container past a limit (what such a container holds is not
// looked at), at most maxViolations of them, and the number of others. It
// also measures args for the budget of validation. Arguments within the
// limits take one walk and no allocation; others take a second walk,
// which reports.
func checkLimits(args []byte) (vs []Violation, more int, shape argsShape) {
	if shape, ok := withinLimits(args); ok {
		return nil, 0, shape
	}
	return reportLimits(args)
}

// reportLimits is checkLimits for args past a limit.
func reportLimits(args []byte) (vs []Violation, more int, shape argsShape) {
	var w jsontext.Walker
	report := func(problem string) {
		if len(vs) == maxViolations {
			more++
			return
		}
		err := fmt.Errorf("values: %w: %s", ErrTooComplex, problem)
		vs = append(vs, Violation{Pointer: w.Pointer(args), Message: strings.TrimPrefix(err.Error(), "values: "), Err: err})
	}
	w.MaxDepth = maxArgsDepth
	w.TooDeep = func(int) error {
		report(fmt.Sprintf("nested more than %d levels deep; pass a flatter value", maxArgsDepth))
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
	return vs, more, argsShape{values: scalars + w.Containers(), depth: w.Deepest()}
}

// withinLimits reports whether the validated JSON args are within the
// limits of validation, and when they are, their shape, in one walk that
// allocates nothing (reportLimits' closures put its Walker on the heap).
// It stops at the first value past a limit.
func withinLimits(args []byte) (shape argsShape, ok bool) {
	var w jsontext.Walker
	w.MaxDepth = maxArgsDepth
	w.TooDeep = stopPastLimit
	scalars := 0
	err := w.Walk(args, func(start, end int) error {
		scalars++
		if c := args[start]; (c == '-' || '0' <= c && c <= '9') && checkNumber(args[start:end]) != "" {
			return errPastLimit
		}
		return nil
	})
	return argsShape{values: scalars + w.Containers(), depth: w.Deepest()}, err == nil
}

// errPastLimit stops withinLimits' walk at a value past a limit.
var errPastLimit = errors.New("values: past a limit of validation")

// stopPastLimit is withinLimits' Walker.TooDeep: a function, not a
// closure, so that the Walker stays on the stack.
func stopPastLimit(int) error { return errPastLimit }

// checkNumber checks the valid number d against maxNumberDigits and
// maxNumberExponent, and returns what is wrong with it, if anything.
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
	if n := intEnd - intStart + fracEnd - fracStart + expDigits; n > maxNumberDigits {
		return fmt.Sprintf("the number %s has %d digits, more than the %d that can be validated", clipNumber(num), n, maxNumberDigits)
	}
	// The power of ten of the first nonzero digit.
	e10, zero := exp, true
	if d[intStart] != '0' {
		e10, zero = exp+intEnd-intStart-1, false
	} else if k := bytes.IndexFunc(d[fracStart:fracEnd], func(r rune) bool { return r != '0' }); k >= 0 {
		e10, zero = exp-k-1, false
	}
	switch {
	case zero && (e10 > maxNumberExponent || e10 < -maxNumberExponent):
		return fmt.Sprintf("the number %s has an exponent beyond ±%d; write it as 0", clipNumber(num), maxNumberExponent)
	case e10 > maxNumberExponent:
		return fmt.Sprintf("the number %s is too large to validate; magnitudes below 1e%d can be", clipNumber(num), maxNumberExponent+1)
	case e10 < -maxNumberExponent:
		return fmt.Sprintf("the number %s is too close to zero to validate; write 0, or a magnitude of at least 1e-%d", clipNumber(num), maxNumberExponent)
	}
	return ""
}

// clipNumber returns the number num as written, or its first and last
// digits around an ellipsis when it is long.
func clipNumber(num []byte) string {
	const keep = 12
	if len(num) <= 2*keep+len(jsontext.Ellipsis) {
		return string(num)
	}
	return string(num[:keep]) + jsontext.Ellipsis + string(num[len(num)-keep:])
}
