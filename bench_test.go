package values

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/agentvalues/values/internal/testkit"
	"github.com/tidwall/gjson"
)

// The benchmarks come in pairs: a benchmark of this package beside the
// baseline its performance target is stated against, so the ratio can be
// read from one run:
//
//	go test -run='^$' -bench=. -benchtime=5x .

// bigJSONArray returns a ~100 MB JSON array of 1M objects.
var bigJSONArray = sync.OnceValue(func() []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i := range 1_000_000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"user-%07d","active":%t,"score":%d.%02d,"tags":["a","\u00e9"],"note":"n\t%d"}`,
			i, i, i%3 == 0, i%1000, i%100, i%977)
	}
	b.WriteByte(']')
	return b.Bytes()
})

// bigTextLog returns a ~100 MB text log with multi-byte characters.
var bigTextLog = sync.OnceValue(func() []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < 100<<20; i++ {
		fmt.Fprintf(&b, "2026-12-02T12:00:%02d.%06dZ INFO worker=%d request handled path=/api/v1/items/%d status=200 µs=%d ✓\n", i%60, i%1_000_000, i%16, i, i%977)
	}
	return b.Bytes()
})

// benchPutPreview stores data in a new store and renders its preview, the
// work an agent loop does per tool result.
func benchPutPreview(b *testing.B, data []byte) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	cpu := cpuClock()
	for b.Loop() {
		s := New()
		h := s.PutOutput(data)
		v, _ := s.Get(h)
		_ = RenderPreview(h, v)
	}
	reportCPU(b, cpu)
	// A large array is scanned by two goroutines when GOMAXPROCS allows
	// (jsontext.Scan), so the benchmark says which it ran at: a b.Loop
	// benchmark runs whole in its first call, which go test -cpu=1,2
	// makes before it sets GOMAXPROCS (golang/go#49980), so every -cpu
	// value but the last must run in a process of its own.
	b.ReportMetric(float64(runtime.GOMAXPROCS(0)), "procs")
}

func BenchmarkPutPreviewJSONArray(b *testing.B) { benchPutPreview(b, bigJSONArray()) }

// BenchmarkPutPreviewEnvelope stores the array of BenchmarkPutPreviewJSONArray
// in an envelope, as a paginated API returns it: its preview shows the
// envelope and, as the part that dominates it, the array. (Compare it with
// BenchmarkBaselineGJSONValid, the same array alone.)
func BenchmarkPutPreviewEnvelope(b *testing.B) { benchPutPreview(b, bigEnvelope()) }

// BenchmarkPutTextHoldingJSON stores the array of
// BenchmarkPutPreviewJSONArray as text (Put of a string): the text is
// indexed as the JSON it holds, in one scan.
func BenchmarkPutTextHoldingJSON(b *testing.B) {
	text := string(bigJSONArray())
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		s := New()
		h, err := s.Put(text)
		if err != nil {
			b.Fatal(err)
		}
		v, _ := s.Get(h)
		_ = RenderPreview(h, v)
	}
}

// BenchmarkPutPreviewCutJSON stores the array of
// BenchmarkPutPreviewJSONArray cut short, as a tool that stops printing
// at a byte limit leaves it: it is text, found not to be JSON in one scan.
func BenchmarkPutPreviewCutJSON(b *testing.B) {
	data := bigJSONArray()
	benchPutPreview(b, data[:len(data)-10])
}

var bigEnvelope = sync.OnceValue(func() []byte {
	return fmt.Appendf(nil, `{"object":"list","data":%s,"has_more":true,"next_cursor":"c_1000000"}`, bigJSONArray())
})

func BenchmarkBaselineGJSONValid(b *testing.B) {
	data := bigJSONArray()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	cpu := cpuClock()
	for b.Loop() {
		if !gjson.ValidBytes(data) {
			b.Fatal("invalid")
		}
	}
	reportCPU(b, cpu)
}

func BenchmarkBaselineEncodingJSONAny(b *testing.B) {
	data := bigJSONArray()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPreviewOnly renders the preview of an already stored 100 MB
// array; its cost must not depend on the value's size.
func BenchmarkPreviewOnly(b *testing.B) {
	s := New()
	h := s.PutOutput(bigJSONArray())
	v, _ := s.Get(h)
	b.ReportAllocs()
	for b.Loop() {
		_ = RenderPreview(h, v)
	}
}

// BenchmarkPreviewOnlySmall is BenchmarkPreviewOnly's baseline: the same
// preview of a five-item array.
func BenchmarkPreviewOnlySmall(b *testing.B) {
	s := New()
	h := s.PutOutput([]byte(`[{"id":0,"name":"user-0000000"},1,2,3,4,5]`))
	v, _ := s.Get(h)
	_ = RenderPreview(h, v) // builds the index of a value shown whole
	b.ReportAllocs()
	for b.Loop() {
		_ = RenderPreview(h, v)
	}
}

func BenchmarkPutPreviewText(b *testing.B) { benchPutPreview(b, bigTextLog()) }

// BenchmarkTextFormatDetection is what recognizing formats costs a text
// of none (the 100 MB log of BenchmarkPutPreviewText): each detector
// decides from a bounded prefix, so this is microseconds beside the
// milliseconds of the Put it is part of.
func BenchmarkTextFormatDetection(b *testing.B) {
	data := bigTextLog()
	b.ReportAllocs()
	for b.Loop() {
		if detectFormat(data, 0) != nil {
			b.Fatal("the log is taken for a format")
		}
	}
}

// BenchmarkBaselineTextFloor is the floor for storing text: one copy,
// utf8.Valid and bytes.Count over the same bytes.
func BenchmarkBaselineTextFloor(b *testing.B) {
	data := bigTextLog()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		c := bytes.Clone(data)
		if !utf8.Valid(c) {
			b.Fatal("invalid")
		}
		_ = bytes.Count(c, []byte{'\n'})
	}
}

// BenchmarkRetainedJSONArray reports the heap retained by storing a fresh
// 100 MB array, output bytes included, as a multiple of its raw size
// (retained/raw); the target is at most 1.2.
func BenchmarkRetainedJSONArray(b *testing.B) {
	data := bigJSONArray()
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		s := New()
		s.PutOutput(bytes.Clone(data)) // the tool's output, now owned by the store
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(len(data)), "retained/raw")
		runtime.KeepAlive(s)
	}
}

// BenchmarkQueryFilter100MB runs a jq filter over the 100 MB array (its
// input bound raised to take it): decoding the value dominates, so the
// baseline is encoding/json decoding it into any
// (BenchmarkBaselineEncodingJSONAny).
func BenchmarkQueryFilter100MB(b *testing.B) {
	data := bigJSONArray()
	s := New(WithQueryLimits(time.Minute, 200<<20, 0))
	h := s.PutOutput(data)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Query(context.Background(), h, `[.[] | select(.score > 990)] | length`); err != nil {
			b.Fatal(err)
		}
	}
}

// benchObserve is the per-result work of an agent loop for a small result:
// Observe stores it in a session that already holds many values and returns
// the transcript text: the result whole up to the inline limit (2 KiB by
// default), its preview past it. Both it and its floor report their CPU
// per result (cpu-ns/op), the figures to divide on a busy machine.
func benchObserve(b *testing.B, n int) {
	data := testkit.SmallResult(n)
	s := New()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	cpu := cpuClock()
	for b.Loop() {
		out := bytes.Clone(data) // Observe keeps out: each result is its own
		if o := s.Observe(out); o.Previewed != (len(data) > DefaultMaxPreview) {
			b.Fatalf("a %d-byte result: previewed %v", len(data), o.Previewed)
		}
	}
	reportCPU(b, cpu)
}

// benchObserveBaseline is the floor for a small result: validate it and
// copy it. With kept, it is the floor of what Observe does for a result
// shown whole past that: the copy is kept, as a store that keeps every
// result keeps it, and the transcript text, the result followed by the
// same stored line, is made as a copy of its own (Observe returns a
// string; the caller's result stays a slice).
func benchObserveBaseline(b *testing.B, n int, kept bool) {
	data := testkit.SmallResult(n)
	var line string
	if kept {
		line = New().Observe(bytes.Clone(data)).Text[len(data):]
	}
	var keep [][]byte
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	cpu := cpuClock()
	for b.Loop() {
		out := bytes.Clone(data)
		if !gjson.ValidBytes(out) {
			b.Fatal("invalid")
		}
		if kept {
			keep = append(keep, out)
			transcriptSink = unsafe.String(unsafe.SliceData(out), len(out)) + line // one copy, as Observe makes it
		}
	}
	reportCPU(b, cpu)
	runtime.KeepAlive(keep)
}

// transcriptSink keeps benchObserveBaseline's text from being optimized away.
var transcriptSink string

func BenchmarkObserve200B(b *testing.B)             { benchObserve(b, 200) }
func BenchmarkObserve200BBaseline(b *testing.B)     { benchObserveBaseline(b, 200, false) }
func BenchmarkObserve2KiB(b *testing.B)             { benchObserve(b, 2048) }
func BenchmarkObserve2KiBBaseline(b *testing.B)     { benchObserveBaseline(b, 2048, false) }
func BenchmarkObserve200BKeptBaseline(b *testing.B) { benchObserveBaseline(b, 200, true) }
func BenchmarkObserve2KiBKeptBaseline(b *testing.B) { benchObserveBaseline(b, 2048, true) }
func BenchmarkObserve4KiBPreviewed(b *testing.B) {
	benchObserve(b, 4096)
}
func BenchmarkObserve4KiBPreviewedBaseline(b *testing.B) { benchObserveBaseline(b, 4096, false) }

// Reference lookups into one large value: many references into a 10 MB
// top-level array of 100k objects, the shape the demo uses ("$r1.512.path"),
// and one key near the end of a 10 MB object, each beside one
// gjson.ValidBytes pass over the same value.

// refsArray returns a ~10 MB JSON array of 100k objects.
var refsArray = sync.OnceValue(func() []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i := range 100_000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"path":"src/pkg%03d/file%06d.go","size":%d,"mode":"0644","mtime":"2026-01-%02dT10:00:00Z","kind":"file"}`, i%1000, i, i*37%100000, i%28+1)
	}
	b.WriteByte(']')
	return b.Bytes()
})

// refsObject returns a ~10 MB JSON object of 100k keys.
var refsObject = sync.OnceValue(func() []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i := range 100_000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"src/pkg%03d/file%06d.go":{"size":%d,"mode":"0644","mtime":"2026-01-%02dT10:00:00Z","kind":"file"}`, i%1000, i, i*37%100000, i%28+1)
	}
	b.WriteByte('}')
	return b.Bytes()
})

// refsArgs returns tool arguments holding n references "$r1.I.path" to
// items spread over the array of items items, in a scattered order.
func refsArgs(n, items int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"paths":[`)
	for k := range n {
		if k > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"$r1.%d.path"`, (k*7919+512)%items)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

func benchResolveRefs(b *testing.B, value, args []byte, want int) {
	s := New()
	if _, err := s.Put(json.RawMessage(value)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_, refs, err := s.Resolve(args)
		if err != nil || len(refs) != want {
			b.Fatalf("%d references resolved, %v; want %d", len(refs), err, want)
		}
	}
}

func benchValidBaseline(b *testing.B, value []byte) {
	b.SetBytes(int64(len(value)))
	b.ReportAllocs()
	for b.Loop() {
		if !gjson.ValidBytes(value) {
			b.Fatal("invalid")
		}
	}
}

func BenchmarkResolveRefs100TopArray(b *testing.B) {
	benchResolveRefs(b, refsArray(), refsArgs(100, 100_000), 100)
}
func BenchmarkResolveRefs1000TopArray(b *testing.B) {
	benchResolveRefs(b, refsArray(), refsArgs(1000, 100_000), 1000)
}
func BenchmarkResolveRefs10000TopArray(b *testing.B) {
	benchResolveRefs(b, refsArray(), refsArgs(10_000, 100_000), 10_000)
}
func BenchmarkResolveRefsTopArrayBaselineGJSONValid(b *testing.B) {
	benchValidBaseline(b, refsArray())
}

// BenchmarkResolveRefs1000NestedArray is the 1000 references through an
// array one level down ("$r1.rows.N.path").
func BenchmarkResolveRefs1000NestedArray(b *testing.B) {
	value := append(append([]byte(`{"rows":`), refsArray()...), '}')
	args := bytes.ReplaceAll(refsArgs(1000, 100_000), []byte(`"$r1.`), []byte(`"$r1.rows.`))
	benchResolveRefs(b, value, args, 1000)
}

func BenchmarkResolveRefsKeyNearEndTopObject(b *testing.B) {
	benchResolveRefs(b, refsObject(), []byte(`{"size":"$r1.src/pkg998/file099998\\.go.size"}`), 1)
}
func BenchmarkResolveRefsTopObjectBaselineGJSONValid(b *testing.B) {
	benchValidBaseline(b, refsObject())
}

// BenchmarkPutPreviewObject10MB stores and previews the 10 MB object of
// 100k keys, whose key blocks Put records; its baseline is
// BenchmarkResolveRefsTopObjectBaselineGJSONValid.
func BenchmarkPutPreviewObject10MB(b *testing.B) { benchPutPreview(b, refsObject()) }
