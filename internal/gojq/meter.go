package gojq

// agentvalues: this file is not in upstream gojq. It holds the per-run
// meter behind [WithLimits]; PATCHES.md lists every hook that calls it.

import (
	"context"
	"fmt"
	"math"
	"strconv"
)

// Limits bounds every run of a compiled query ([WithLimits]).
type Limits struct {
	// Memory is the number of bytes one run may materialize: every
	// string, array, object and number the program builds, the buffers of
	// builtins that build them (an encoder's output, a sort's items), and
	// the interpreter's stacks as they grow. The count only grows: memory
	// a run drops is not given back, so a loop that builds and drops large
	// values is bounded too. Each charge is made before the allocation it
	// stands for (the interpreter's stacks: when they have grown, at the
	// next step), so no single step allocates much past the bound. What
	// the run is given as input is not counted. 0 means no bound (the
	// builtins still look at the run's context as they work).
	Memory int
}

// WithLimits is a compiler option that bounds each run of the code
// ([Limits]). A run past a bound ends with a [*LimitError], which try, ?
// and // do not catch. Builtins also check the run's context while they
// work (every few thousand elements compared, encoded or copied), so a
// context's deadline stops a long sort or encoding of a value that shares
// its parts, not only the interpreter's next step. Functions added by
// [WithFunction] are not metered.
func WithLimits(l Limits) CompilerOption {
	return func(c *compiler) {
		c.limits = &l
	}
}

// LimitError is the error of a run stopped at its memory bound
// ([Limits.Memory]).
type LimitError struct {
	// Limit is the bound, in bytes.
	Limit int
	// Used is what the run had materialized before the refused charge.
	Used int
	// Need is the refused charge: the size of what the run was about to
	// build, or a lower bound of it.
	Need int
	// What names what was being built, as "a string (tojson)".
	What string
}

// Error implements the error interface.
func (err *LimitError) Error() string {
	return fmt.Sprintf("memory limit of %d bytes reached: %s needs %s more after %d bytes",
		err.Limit, err.What, needString(err.Need), err.Used)
}

func needString(n int) string {
	if n == math.MaxInt {
		return "more than the limit"
	}
	return strconv.Itoa(n) + " bytes"
}

// Sizes the meter charges, in bytes, as the Go runtime allocates them on
// 64-bit platforms.
const (
	sizeAny    = 16 // one element of an []any, or an interface value
	sizeString = 16 // a string's header; its bytes are charged beside it
	sizeArray  = 24 // a slice header, as an []any is boxed in an any
	sizeNumber = 8  // a boxed int or float64
	sizeItem   = 40 // one sortItem and its pointer
	sizePath   = 32 // one pathValue of an iteration
	sizeError  = 64 // an error a builtin returns, with what it holds
)

// meterCheckEvery is the work between two looks at the run's context: a
// unit is about one element compared, encoded or copied, so a look costs
// far less than the work between two.
const meterCheckEvery = 1 << 12

// A meter counts what one run materializes and the work of its builtins.
// A nil *meter meters nothing: upstream's behavior, and that of the
// exported functions (Marshal, Compare) that take no run.
type meter struct {
	ctx   context.Context
	limit int // 0: no bound
	used  int
	work  int   // units left before the next look at ctx
	err   error // sticky: the first bound passed
	// caps are the capacities of env's stacks last seen (stack, paths,
	// scopes, forks), capSum their sum.
	caps   [4]int
	capSum int
	// keys and kvs are scratch buffers of compare and the encoder, one per
	// depth of nesting, reused so that comparing or encoding objects does
	// not allocate per object.
	keys [][2][]string
	kvs  [][]keyVal
	// regexpFastWork, when not 0, replaces the constant of that name (a
	// test sets it to -1 to match every input through readers).
	regexpFastWork int
}

// meterStop is the panic by which a builtin deep in recursion stops at a
// bound; call recovers it.
type meterStop struct{ err error }

// newMeter returns the meter of a run with context ctx of code compiled
// with limits l (nil: without WithLimits, so not metered).
func newMeter(ctx context.Context, l *Limits) *meter {
	if l == nil {
		return nil
	}
	return &meter{ctx: ctx, limit: l.Memory, work: meterCheckEvery}
}

// charge counts n bytes about to be materialized, and returns the
// *LimitError (also kept, so the run stops at its next step) when they pass
// the limit.
func (m *meter) charge(n int, what string) error {
	if m == nil {
		return nil
	}
	if m.err != nil {
		return m.err
	}
	if m.limit > 0 && n > m.limit-m.used {
		m.err = &LimitError{Limit: m.limit, Used: m.used, Need: n, What: what}
		return m.err
	}
	m.used = addSize(m.used, n)
	return nil
}

// alloc is charge for a builtin: past the limit it panics with meterStop,
// which [meter.call] turns into the builtin's error.
func (m *meter) alloc(n int, what string) {
	if err := m.charge(n, what); err != nil {
		panic(meterStop{err})
	}
}

// tick counts n units of work of a builtin, and every meterCheckEvery
// units looks at the run's context: once it is done the builtin stops,
// panicking with meterStop as alloc does.
func (m *meter) tick(n int) {
	if m == nil {
		return
	}
	if m.work -= n; m.work <= 0 {
		m.look()
	}
}

// look is tick's look at the run's context.
func (m *meter) look() {
	m.work = meterCheckEvery
	select {
	case <-m.ctx.Done():
		panic(meterStop{m.ctx.Err()})
	default:
	}
}

// A meteredFunc is a builtin that charges what it builds to the run's
// meter (nil when the run is not metered). An alias, so that any function
// of its type is one in the interpreter's type switch.
type meteredFunc = func(*meter, any, []any) any

// call runs the builtin f, turning a stop at a bound into its error.
func (m *meter) call(f meteredFunc, x any, args []any) (w any) {
	if m == nil {
		return f(nil, x, args)
	}
	defer func() {
		if r := recover(); r != nil {
			s, ok := r.(meterStop)
			if !ok {
				panic(r)
			}
			w = s.err
		}
	}()
	return f(m, x, args)
}

// stacksGrew charges the growth of env's stacks: each slice that was
// reallocated is charged at its new capacity. The interpreter calls it
// when the sum of their capacities changed since the last step (they only
// grow). The slots of variables, env.values, are charged by opscope as
// they grow.
func (m *meter) stacksGrew(env *env) {
	caps := [4]int{cap(env.stack.data), cap(env.paths.data), cap(env.scopes.data), cap(env.forks)}
	sizes := [4]int{sizeBlockAny, sizeBlockPath, sizeBlockScope, sizeFork}
	for i, c := range caps {
		if c > m.caps[i] {
			m.charge(mulSize(c, sizes[i]), "the interpreter's stack (deep recursion?)")
		}
		m.caps[i] = c
	}
	m.capSum = caps[0] + caps[1] + caps[2] + caps[3]
}

// Sizes of the elements of env's stacks.
const (
	sizeBlockAny   = 24 // block[any]
	sizeBlockPath  = 40 // block[pathValue]
	sizeBlockScope = 48 // block[scope]
	sizeFork       = 72 // fork
)

// mulSize returns a*b for sizes (not negative), or math.MaxInt when the
// product does not fit.
func mulSize(a, b int) int {
	if a <= 0 || b <= 0 {
		return 0
	}
	if a > math.MaxInt/b {
		return math.MaxInt
	}
	return a * b
}

// addSize returns a+b for sizes (not negative), or math.MaxInt when the
// sum does not fit.
func addSize(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

// keysScratch returns the scratch key buffers for compare at depth d.
func (m *meter) keysScratch(d int) *[2][]string {
	for len(m.keys) <= d {
		m.keys = append(m.keys, [2][]string{})
	}
	return &m.keys[d]
}

// kvsScratch returns a scratch buffer of n key-value pairs for the encoder
// at depth d, charging it when it grows.
func (m *meter) kvsScratch(d, n int) []keyVal {
	for len(m.kvs) <= d {
		m.kvs = append(m.kvs, nil)
	}
	if cap(m.kvs[d]) < n {
		m.alloc(mulSize(n, sizeKeyVal), "the encoder's keys")
		m.kvs[d] = make([]keyVal, n)
	}
	return m.kvs[d][:n]
}

const sizeKeyVal = 32

// objectSize returns the bytes of a map[string]any made for n entries, as
// measured with Go 1.26: a header and one group of 8 slots up to 8
// entries, then about 80 bytes an entry.
func objectSize(n int) int {
	if n <= 8 {
		return 336
	}
	return addSize(48, mulSize(n, 80))
}

// sizeEntryGrown is what an entry added to a map costs as the map grows
// (its tables are reallocated as they fill: about 160 bytes an entry in
// all, measured with Go 1.26).
const sizeEntryGrown = 160

// growSize returns the bytes append allocates when an []any of capacity c
// is full (Go's growth: double below 256 elements, then about 1.25 times).
func growSize(c int) int {
	n := 2 * c
	if c >= 256 {
		n = c + (c+3*256)/4
	}
	return addSize(sizeArray, mulSize(max(n, 4), sizeAny))
}
