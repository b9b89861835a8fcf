package values

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentvalues/values/internal/testkit"
)

// queryChildEnv, set in a child of the tests below, names the case the
// child runs and reports on.
const queryChildEnv = "VALUES_TEST_QUERY_CHILD"

// hostileQueries are the attacks of issue 27 on query_value, each of
// which took gigabytes (or the process) before the memory budget: what
// each must fail with, and words of its message.
var hostileQueries = []struct {
	name, jq string
	want     error
	words    string
}{
	{"tojson of a value doubled 30 times", `reduce range(30) as $i (0; [., .]) | tojson | length`, ErrQueryMemory, "a string (tojson)"},
	{"tojson of a value doubled 28 times", `reduce range(28) as $i (0; [., .]) | tojson | length`, ErrQueryMemory, "a string (tojson)"},
	{"interpolation of a doubled value", `reduce range(30) as $i (0; [., .]) | "\(.)" | length`, ErrQueryMemory, "a string (tostring)"},
	{"a string repeated 2e9 times", `"x" * 2000000000`, ErrQueryMemory, "a string (repeat)"},
	{"an index far past the end", `null | .[536870911] = 1`, ErrQueryMemory, "an array (setpath)"},
	{"a recursion building arrays", `def f: [f]; f`, ErrQueryMemory, "stack"},
	{"an array of 1e8 numbers", `[range(1e8)]`, ErrQueryMemory, "an array"},
	{"a result doubled 40 times", `reduce range(40) as $i (0; [., .])`, ErrTooLarge, "passed the 16 MiB a query may produce"},
	{"an error of a doubled value", `reduce range(40) as $i (0; [., .]) | error(.)`, ErrQuery, "error: [[[["},
}

// queryPeakLimit bounds the peak resident memory of a child that runs one
// hostile query with the default budget (64 MiB): the test binary's own,
// the budget, and room for the garbage collector, which lets the heap
// grow to twice what is live. Before the budget each query took from
// 1.9 GB to all the memory there was.
func queryPeakLimit() int64 {
	if queryRaceEnabled {
		return 512 << 20 // the race detector shadows each byte the program touches
	}
	return 192 << 20
}

// TestQueryHostile runs each hostile query in a child process with the
// default bounds (but a minute of time): it must fail with its error,
// store nothing, and keep the child's peak memory within queryPeakLimit.
func TestQueryHostile(t *testing.T) {
	if c := os.Getenv(queryChildEnv); strings.HasPrefix(c, "hostile:") {
		i, _ := strconv.Atoi(strings.TrimPrefix(c, "hostile:"))
		// The default bounds but time, which a slow machine (or the race
		// detector) could reach first: the memory bound is tested here.
		s := queryStore(t, WithQueryLimits(time.Minute, 0, 0))
		n := s.Len()
		_, err := s.Query(context.Background(), "r1", hostileQueries[i].jq)
		report(t, err, s.Len()-n)
		return
	}
	t.Parallel()
	for i, tt := range hostileQueries {
		t.Run(tt.name, func(t *testing.T) {
			r := runQueryChild(t, "TestQueryHostile", fmt.Sprintf("hostile:%d", i), 1536<<20)
			if !errors.Is(r.err, tt.want) || !strings.Contains(r.msg, tt.words) {
				t.Errorf("%s: %s; want %v with %q", tt.jq, r.msg, tt.want, tt.words)
			}
			if r.stored != 0 {
				t.Errorf("%s stored %d values", tt.jq, r.stored)
			}
			if r.peak > queryPeakLimit() {
				t.Errorf("%s: peak memory %d MiB, more than %d MiB", tt.jq, r.peak>>20, queryPeakLimit()>>20)
			}
			t.Logf("peak %d MiB: %s", r.peak>>20, r.msg)
		})
	}
}

// queryGateLimit is the gate of TestQueryGateParallel; queryGateBudget the
// budget of each of its queries.
const (
	queryGateLimit  = 192 << 20
	queryGateBudget = 32 << 20
)

// TestQueryGateParallel runs 16 hostile queries at once in a child, over
// 16 stores sharing a gate of 192 MiB, each query with a 32 MiB budget
// (so it reserves 48 MiB with its output bound): at most four run at a
// time, each fails at its budget (or, having waited its whole time bound,
// with ErrQueryBusy), and the child's peak memory stays within what the
// gate admits at once, with room for the collector. Without the gate and
// the budget the child would need tens of gigabytes.
func TestQueryGateParallel(t *testing.T) {
	if c := os.Getenv(queryChildEnv); c == "parallel" {
		gate := NewQueryGate(queryGateLimit)
		var wg sync.WaitGroup
		errs := make([]error, 16)
		for i := range errs {
			wg.Go(func() {
				s := New(WithQueryGate(gate), WithQueryMemory(queryGateBudget), WithQueryLimits(time.Minute, 0, 0))
				s.Put([]int{1, 2, 3})
				_, errs[i] = s.Query(context.Background(), "r1", hostileQueries[i%7].jq)
			})
		}
		wg.Wait()
		report(t, errors.Join(errs...), 0)
		return
	}
	t.Parallel()
	r := runQueryChild(t, "TestQueryGateParallel", "parallel", 3<<30)
	if got := strings.Count(r.msg, ErrQueryMemory.Error()) + strings.Count(r.msg, ErrQueryBusy.Error()); got != 16 {
		t.Errorf("%d of 16 queries failed at their budget or the gate: %s", got, r.msg)
	}
	limit := int64(2*queryGateLimit + 64<<20)
	if queryRaceEnabled {
		limit *= 2
	}
	if r.peak > limit {
		t.Errorf("peak memory %d MiB with a gate of %d MiB; want at most %d MiB", r.peak>>20, queryGateLimit>>20, limit>>20)
	}
	t.Logf("peak %d MiB", r.peak>>20)
}

// A childReport is what a query child reports.
type childReport struct {
	err    error  // a sentinel the error wrapped, or nil
	msg    string // the error's message
	stored int    // values stored by the failed query
	peak   int64  // the child's peak resident memory
}

// report prints a query child's report: the error, the number of values
// stored and the peak memory (VmHWM).
func report(t *testing.T, err error, stored int) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	b, _ := json.Marshal(map[string]any{"msg": msg, "stored": stored, "peak": selfHWM(t)})
	fmt.Printf("report %s\n", b)
}

// runQueryChild runs the test named test in a child with queryChildEnv
// set to which, and returns its report. It kills the child and fails if
// its resident memory passes killAbove bytes (as the queries did before
// their bounds) or if it runs for 5 minutes.
func runQueryChild(t *testing.T, test, which string, killAbove int64) childReport {
	t.Helper()
	cmd := testkit.ChildCommand(test, queryChildEnv+"="+which)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		deadline := time.After(5 * time.Minute)
		for {
			select {
			case <-done:
				return
			case <-deadline:
				killed <- "still running after 5 minutes"
				cmd.Process.Kill()
				return
			case <-tick.C:
				if hwm := pidHWM(cmd.Process.Pid); hwm > killAbove {
					killed <- fmt.Sprintf("resident memory %d MiB, past %d MiB", hwm>>20, killAbove>>20)
					cmd.Process.Kill()
					return
				}
			}
		}
	}()
	var line string
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if r, ok := strings.CutPrefix(sc.Text(), "report "); ok {
			line = r
		}
	}
	werr := cmd.Wait()
	close(done)
	select {
	case why := <-killed:
		t.Fatalf("the child was killed: %s", why)
	default:
	}
	if werr != nil || line == "" {
		t.Fatalf("the child: %v, report %q", werr, line)
	}
	var r struct {
		Msg    string
		Stored int
		Peak   int64
	}
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		t.Fatal(err)
	}
	rep := childReport{msg: r.Msg, stored: r.Stored, peak: r.Peak}
	for _, e := range []error{ErrQueryMemory, ErrTooLarge, ErrQuery, ErrQueryTimeout, ErrQueryBusy} {
		if strings.Contains(r.Msg, e.Error()) {
			rep.err = e
			break
		}
	}
	return rep
}

// selfHWM returns this process's peak resident memory in bytes.
func selfHWM(t *testing.T) int64 {
	hwm := pidHWM(os.Getpid())
	if hwm <= 0 {
		t.Fatal("no VmHWM in /proc/self/status")
	}
	return hwm
}

// pidHWM returns the peak resident memory (VmHWM) of process pid in bytes,
// or 0 once it has exited.
func pidHWM(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for l := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// The memory budget counts what a program builds: each hostile program
// fails with ErrQueryMemory, whose message says what it was building, the
// budget and how to narrow the query, and stores nothing.
func TestQueryMemory(t *testing.T) {
	s := queryStore(t, WithQueryMemory(4<<20))
	for _, jq := range []string{
		`"x" * 2000000000`,
		`null | .[536870911] = 1`,
		`def f: [f]; f`,
		`[range(1e8)]`,
		`reduce range(30) as $i (0; [., .]) | tojson`,
		`reduce range(30) as $i (0; [., .]) | @base64`,
		`reduce range(30) as $i (0; [., .]) | flatten`,
		`[.[] | .path] | join(",") * 1e5`,
		`"x" * 1e6 | [match(""; "g")]`,
		`try ("x" * 1e9) catch "caught"`,
		`range(1e6) | "x" * 1e5 | empty`,
	} {
		n := s.Len()
		_, err := s.Query(context.Background(), "r1", jq)
		if !errors.Is(err, ErrQueryMemory) || !strings.Contains(err.Error(), "of its 4.0 MiB budget") || !strings.Contains(err.Error(), "narrow the query") {
			t.Errorf("Query(%s) = %v; want ErrQueryMemory with the budget and what to do", jq, err)
		}
		if s.Len() != n {
			t.Errorf("Query(%s) stored a value", jq)
		}
	}
	// The budget grows with the input: 8 bytes per byte of it.
	big := New(WithQueryMemory(1 << 20))
	h := big.PutOutput([]byte(`["` + strings.Repeat("x", 1<<20) + `"]`))
	if _, err := big.Query(context.Background(), h, `.[0] * 4 | length`); err != nil {
		t.Errorf("4 MiB built over a 1 MiB input with a 1 MiB budget: %v", err)
	}
	if _, err := big.Query(context.Background(), h, `.[0] * 10`); !errors.Is(err, ErrQueryMemory) || !strings.Contains(err.Error(), "1.0 MiB plus 8 bytes per byte of its 1.0 MiB input") {
		t.Errorf("10 MiB built over a 1 MiB input: %v", err)
	}
	// A negative budget bounds nothing.
	if _, err := queryStore(t, WithQueryMemory(-1)).Query(context.Background(), "r1", `"x" * 1e7 | length`); err != nil {
		t.Errorf("no budget: %v", err)
	}
}

// A builtin comparing or encoding a value that shares its parts, or
// matching a long string, looks at the deadline as it works: a compare of
// 2^40 leaves, which would run for hours between two steps of the
// interpreter, stops at the query's time bound.
func TestQueryTimeInBuiltins(t *testing.T) {
	s := queryStore(t, WithQueryLimits(50*time.Millisecond, 0, 0), WithQueryMemory(-1))
	for _, jq := range []string{
		`reduce range(40) as $i (0; [., .]) | . == .`,
		`reduce range(40) as $i (0; [., .]) | [., .] | sort | length`,
		`reduce range(40) as $i (0; [., .]) | contains(.)`,
		`reduce range(40) as $i ({}; {a: ., b: .}) | . < .`,
		`"ab" * 1e7 | test("(?i)(\\w+\\s*){1,100}z")`, // minutes in one call of the string functions
	} {
		if _, err := s.Query(context.Background(), "r1", jq); !errors.Is(err, ErrQueryTimeout) {
			t.Errorf("Query(%s) = %v; want ErrQueryTimeout", jq, err)
		}
	}
}

// A query waits at its gate while other queries hold what it needs, and
// runs when they release it; one that waits its whole time bound fails
// with ErrQueryBusy and stores nothing.
func TestQueryGate(t *testing.T) {
	gate := NewQueryGate(100 << 20)
	held, err := gate.acquire(context.Background(), 100<<20)
	if err != nil || held != 100<<20 {
		t.Fatalf("acquire = %d, %v", held, err)
	}
	s := queryStore(t, WithQueryGate(gate), WithQueryMemory(1<<20), WithQueryLimits(time.Hour, 0, 1<<20))
	done := make(chan error)
	go func() {
		_, err := s.Query(context.Background(), "r1", "length")
		done <- err
	}()
	waitGate(t, gate, 1)
	gate.release(held)
	if err := <-done; err != nil {
		t.Fatalf("after the gate opened: %v", err)
	}
	if used, waiting := gate.state(); used != 0 || waiting != 0 {
		t.Errorf("after the query: %d bytes held, %d waiting", used, waiting)
	}

	held, _ = gate.acquire(context.Background(), 100<<20)
	busy := queryStore(t, WithQueryGate(gate), WithQueryMemory(1<<20), WithQueryLimits(10*time.Millisecond, 0, 1<<20))
	n := busy.Len()
	if _, err := busy.Query(context.Background(), "r1", "length"); !errors.Is(err, ErrQueryBusy) || !strings.Contains(err.Error(), "100 MiB") {
		t.Errorf("Query at a full gate = %v; want ErrQueryBusy", err)
	}
	if busy.Len() != n {
		t.Error("a refused query stored a value")
	}
	// A caller's context that ends while its query waits stops the query.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Query(ctx, "r1", "length"); !errors.Is(err, ErrQueryTimeout) {
		t.Errorf("Query with a cancelled context at a full gate = %v; want ErrQueryTimeout", err)
	}
	gate.release(held)
	if used, waiting := gate.state(); used != 0 || waiting != 0 {
		t.Errorf("after a refused query: %d bytes held, %d waiting", used, waiting)
	}
}

// The gate serves waiters first come, first served: a small reservation
// that would fit does not pass a larger one that came before it, and a
// reservation larger than the gate waits for all of it.
func TestQueryGateOrder(t *testing.T) {
	gate := NewQueryGate(10)
	first, _ := gate.acquire(context.Background(), 6)
	got := make([]chan int, 3)
	start := func(i, n int) {
		got[i] = make(chan int, 1)
		go func() {
			n, err := gate.acquire(context.Background(), n)
			if err != nil {
				t.Error(err)
			}
			got[i] <- n
		}()
		waitGate(t, gate, i+1)
	}
	start(0, 8)   // waits: 6 + 8 > 10
	start(1, 2)   // would fit beside the 6, but comes after a waiter
	start(2, 100) // larger than the gate: reserves all of it
	if used, _ := gate.state(); used != 6 {
		t.Fatalf("%d held; want 6: a later, smaller reservation passed a waiting one", used)
	}
	gate.release(first)
	a, b := <-got[0], <-got[1]
	if used, waiting := gate.state(); a != 8 || b != 2 || used != 10 || waiting != 1 {
		t.Fatalf("after the first release: %d and %d granted, %d held, %d waiting", a, b, used, waiting)
	}
	gate.release(a)
	gate.release(b)
	if c := <-got[2]; c != 10 {
		t.Errorf("a reservation of 100 at a gate of 10 got %d", c)
	}
	gate.release(10)
	if used, waiting := gate.state(); used != 0 || waiting != 0 {
		t.Errorf("at the end: %d held, %d waiting", used, waiting)
	}
	// A gate bounding nothing never waits.
	free := NewQueryGate(-1)
	if n, err := free.acquire(context.Background(), 1<<40); err != nil || n != 0 {
		t.Errorf("unbounded gate: %d, %v", n, err)
	}
}

// waitGate waits until n reservations wait at gate.
func waitGate(t *testing.T, gate *QueryGate, n int) {
	t.Helper()
	for _, waiting := gate.state(); waiting != n; _, waiting = gate.state() {
		time.Sleep(time.Millisecond)
	}
}

// Each bound is a default of its own, selected by a zero.
func TestQueryDefaults(t *testing.T) {
	var c config
	if got := c.queryBudget(1000); got != DefaultQueryMemory+8000 {
		t.Errorf("default budget over 1000 bytes = %d", got)
	}
	if c.gate() != processQueryGate || processQueryGate.limit() != DefaultQueryGate || new(QueryGate).limit() != DefaultQueryGate {
		t.Error("the default gate is not the process's, of DefaultQueryGate bytes")
	}
	WithQueryMemory(-1)(&c)
	if got := c.queryBudget(1000); got != 0 {
		t.Errorf("negative budget = %d, want none", got)
	}
}

// heapAllocated returns the bytes allocated on the heap so far.
func heapAllocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// Bounds of FuzzQueryMemory's queries.
const (
	fuzzBudget = 2 << 20
	fuzzOutput = 64 << 10
)

// fuzzAllocBound is the most a FuzzQueryMemory query over in bytes of
// input may allocate in all: three times its budget (which grows by 8
// bytes per byte of input; Go allocates somewhat more than the meter
// counts: the seeds' hostile programs allocate 1 to 1.25 times it), the
// input decoded (8 times its size, twice), the output and what it is
// stored as, and 8 MiB for compiling the program and rendering the
// transcript.
func fuzzAllocBound(in int) uint64 {
	return uint64(3*(fuzzBudget+queryMemoryPerInput*in) + 16*in + 4*fuzzOutput + 8<<20)
}

// FuzzQueryMemory runs arbitrary programs, the hostile ones among its
// seeds, over arbitrary values under a 2 MiB budget: none may allocate
// more than fuzzAllocBound in all (measured as the heap's allocations),
// none may panic, and two runs of the same query agree, unless one of them
// reached the time bound.
func FuzzQueryMemory(f *testing.F) {
	for _, q := range hostileQueries {
		f.Add([]byte(`[1,2,3]`), q.jq)
	}
	for _, seed := range []struct{ value, jq string }{
		{`[{"id":1,"tags":["a","b"]},{"id":2,"tags":[]}]`, `map(select(.tags | length > 0) | .id)`},
		{`{"a":{"b":[1,2]}}`, `[paths] | length`}, {`"x,y,z"`, `split(",") | join(";")`},
		{`[3,1,2]`, `sort, group_by(. % 2), unique, min, max, add`}, {`{"k":"v"}`, `to_entries | from_entries | tojson`},
		{`[1]`, `"x" * 1e7 | length`}, {`[1]`, `[range(1e6)] | length`}, {`[1]`, `reduce range(20) as $i (.; [., .]) | tostring | length`},
		{`[1]`, `def f: [f, f]; f`}, {`[1]`, `"a" * 1e5 | [match("a"; "g")] | length`}, {`[1]`, `[limit(1e6; repeat("xx"))] | add | length`},
		{`[1]`, `range(1e6) | [range(100)] | empty`}, {`[1]`, `. as $x | reduce range(25) as $i ($x; . + .) | length`},
		{`[1]`, `reduce range(30) as $i ({}; {a: ., b: .}) | . * . | length`}, {`[1]`, `try error("x" * 1e6) catch length`},
	} {
		f.Add([]byte(seed.value), seed.jq)
	}
	f.Fuzz(func(t *testing.T, value []byte, jq string) {
		run := func() (string, error, uint64) {
			s := New(WithQueryMemory(fuzzBudget), WithQueryLimits(100*time.Millisecond, 1<<20, fuzzOutput), WithQueryGate(NewQueryGate(-1)))
			h := s.PutOutput(value)
			runtime.GC()
			before := heapAllocated()
			obs, err := s.Query(context.Background(), h, jq)
			allocated := heapAllocated() - before
			if err != nil {
				return "", err, allocated
			}
			v, _ := s.Get(obs.Handle)
			return string(v.JSON()), nil, allocated
		}
		out, err, allocated := run()
		if bound := fuzzAllocBound(len(value)); allocated > bound {
			t.Fatalf("Query(%q) over %d bytes allocated %d MiB, more than %d MiB (%v)", jq, len(value), allocated>>20, bound>>20, err)
		}
		if err != nil && !errors.Is(err, ErrQuery) && !errors.Is(err, ErrQueryTimeout) && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrQueryMemory) {
			t.Fatalf("Query(%q): unexpected error %v", jq, err)
		}
		out2, err2, _ := run()
		if errors.Is(err, ErrQueryTimeout) || errors.Is(err2, ErrQueryTimeout) {
			return
		}
		if out != out2 || (err == nil) != (err2 == nil) || err != nil && err.Error() != err2.Error() {
			t.Fatalf("Query(%q) twice: %.200q, %v, then %.200q, %v", jq, out, err, out2, err2)
		}
	})
}

// recordsJSON returns a JSON array of records of about size bytes, each
// with the fields of a typical listing or log (an id, names, a path, a
// status, a size, tags, a nested object).
func recordsJSON(size int) []byte {
	var b strings.Builder
	b.WriteByte('[')
	for i := 0; b.Len() < size-400; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"user-%d","path":"src/pkg%d/file_%d.go","status":%d,"size":%d,"tags":["a%d","b","c%d"],"meta":{"owner":"team-%d","created":"2024-01-%02dT10:00:00Z","ok":%v}}`,
			i, i, i%50, i, []int{200, 404, 500}[i%3], i*37%100000, i%7, i%11, i%13, i%28+1, i%2 == 0)
	}
	b.WriteByte(']')
	return []byte(b.String())
}

// BenchmarkQueryLarge runs everyday programs over a 64 MiB array of
// records (the input bound) with the default bounds but time: each must
// fit its memory budget (64 MiB plus 8 bytes per byte of input). It is
// the measurement DefaultQueryMemory and queryMemoryPerInput were chosen
// by; the baseline is the program `length`, which builds nothing.
func BenchmarkQueryLarge(b *testing.B) {
	s := New(WithQueryLimits(time.Minute, 0, 0))
	h := s.PutOutput(recordsJSON(DefaultQueryInput))
	for _, jq := range []string{
		`length`,
		`map(select(.status == 500)) | length`,
		`[.[] | .name] | length`,
		`group_by(.status) | map(length)`,
		`sort_by(.name) | length`,
		`unique_by(.meta.owner) | length`,
		`map({id, name}) | length`,
		`to_entries | length`,
		`tojson | length`,
		`map(tostring) | length`,
		`map(del(.meta)) | length`,
		`map(.size |= . + 1) | length`,
		`reduce .[] as $x ({}; .[$x.meta.owner] += 1) | length`,
		`INDEX(.meta.owner) | length`,
		`[.[] | "\(.id): \(.name)"] | length`,
		`[.[] | select(.name | test("user-1.*5$"))] | length`,
		`[.[] | .meta.created | split("T")[0]] | unique | length`,
		`max_by(.size) | .id`,
	} {
		b.Run(jq, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Query(context.Background(), h, jq); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
