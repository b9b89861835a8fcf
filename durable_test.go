package values_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/agentvalues/values"
	"github.com/agentvalues/values/internal/testkit"
	"github.com/agentvalues/values/store"
	"github.com/agentvalues/values/store/storetest"
)

// The tests of durable.go live here, outside the package, because they use
// the package store, which imports this one.

const testSession = "session-1"

// openSession opens session in d with Open, which must succeed.
func openSession(d values.Durable, session string, opts ...values.Option) *values.SessionValues {
	s, err := values.Open(d, session, opts...)
	if err != nil {
		panic(fmt.Sprintf("Open(%q): %v", session, err))
	}
	return s
}

// counting wraps a Durable, counts the bodies read back and written, and can
// be made to fail reads, writes of bodies, reads of the records, or the
// record of one handle.
type counting struct {
	values.Durable
	reads       atomic.Int64
	writes      atomic.Int64 // PutBody and AppendRecord calls
	failReads   atomic.Bool
	failBodies  atomic.Bool
	failRecords atomic.Bool
	failRecord  string // handle whose AppendRecord fails
}

var errInjected = errors.New("injected failure")

func (c *counting) Body(session, key string) ([]byte, error) {
	c.reads.Add(1)
	if c.failReads.Load() {
		return nil, fmt.Errorf("test: %w", errInjected)
	}
	return c.Durable.Body(session, key)
}

func (c *counting) PutBody(session string, body []byte) (string, error) {
	c.writes.Add(1)
	if c.failBodies.Load() {
		return "", fmt.Errorf("test: %w", errInjected)
	}
	return c.Durable.PutBody(session, body)
}

func (c *counting) AppendRecord(session string, r values.Record) error {
	c.writes.Add(1)
	if r.Handle == c.failRecord {
		return fmt.Errorf("test: %w", errInjected)
	}
	return c.Durable.AppendRecord(session, r)
}

func (c *counting) Records(session string) ([]values.Record, error) {
	if c.failRecords.Load() {
		return nil, fmt.Errorf("test: %w", errInjected)
	}
	return c.Durable.Records(session)
}

const testMemLimit = 64 << 10

// putKinds stores a value of every kind, two of them over testMemLimit,
// and returns their handles.
func putKinds(t *testing.T, s *values.SessionValues) []string {
	t.Helper()
	var rows, big strings.Builder
	rows.WriteString(`[`)
	for i := range 50 {
		if i > 0 {
			rows.WriteString(",")
		}
		fmt.Fprintf(&rows, `{"id":%d,"name":"user%d"}`, i, i)
	}
	rows.WriteString(`]`)
	big.WriteString(`[`)
	for i := range 5000 {
		if i > 0 {
			big.WriteString(",")
		}
		fmt.Fprintf(&big, `{"id":%d,"text":"row %d of a large result"}`, i, i)
	}
	big.WriteString(`]`)
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{0, 0xff, 7}, 400)...)
	var hs []string
	put := func(v any) {
		h, err := s.Put(v)
		if err != nil {
			t.Fatalf("Put(%T): %v", v, err)
		}
		hs = append(hs, h)
	}
	hs = append(hs, s.PutOutput([]byte(rows.String())))                                            // r1 array
	put(map[string]any{"name": "query", "rows": []int{10, 20, 30, 40}})                            // r2 object
	put(strings.Repeat("a line of text\n", 300) + "LAST")                                          // r3 text
	put(json.RawMessage(`42`))                                                                     // r4 number
	put(true)                                                                                      // r5 bool
	put(nil)                                                                                       // r6 null
	put(png)                                                                                       // r7 binary
	hs = append(hs, s.PutOutput([]byte("FIRST\n"+strings.Repeat("x", 2*testMemLimit)+"\nLAST\n"))) // r8 big text
	put("hi")                                                                                      // r9 short text
	hs = append(hs, s.Observe([]byte(big.String())).Handle)                                        // r10 big array
	put("")                                                                                        // r11 empty text
	return hs
}

// snapshot is everything a store shows of its values.
type snapshot struct {
	Handles  []string
	Previews map[string]string
	JSON     map[string]string
	Shape    map[string]string
	Pages    map[string]string
	Resolved string
}

func takeSnapshot(t *testing.T, s *values.SessionValues) snapshot {
	t.Helper()
	sn := snapshot{Handles: s.Handles(), Previews: map[string]string{}, JSON: map[string]string{}, Shape: map[string]string{}, Pages: map[string]string{}}
	for _, h := range sn.Handles {
		v, ok := s.Get(h)
		if !ok {
			t.Fatalf("Get(%s) = false", h)
		}
		sn.Previews[h] = values.RenderPreview(h, v)
		sn.JSON[h] = string(v.JSON())
		sn.Shape[h] = fmt.Sprintf("%v len=%d lines=%d size=%d sha=%x type=%q bytes=%d", v.Kind(), v.Len(), v.Lines(), v.Size(), v.Digest(), v.ContentType(), len(v.Bytes()))
		sn.Pages[h] = readAll(t, s, h)
	}
	out, refs, err := s.Resolve([]byte(`{"last":"$r2.rows.-1","row":"$r1.7","text":"$r8","big":"$r10.4999.text"}`))
	if err != nil || len(refs) != 4 {
		t.Fatalf("Resolve: %v, resolved %q", err, refs)
	}
	sn.Resolved = string(out)
	return sn
}

// readAll pages ref with a small limit and reassembles it.
func readAll(t *testing.T, s *values.SessionValues, ref string) string {
	t.Helper()
	got, err := pageAll(s, ref)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// pageAll pages ref with a small limit and reassembles it.
func pageAll(s *values.SessionValues, ref string) (string, error) {
	got, _, err := testkit.ReadPages(0, func(off int) (testkit.Page, error) {
		p, err := s.Read(ref, off, 16<<10)
		return testkit.Page{Content: p.Content, Offset: p.Offset, Next: p.Next, More: p.More}, err
	})
	if err != nil {
		return "", fmt.Errorf("Read(%s): %w", ref, err)
	}
	return got, nil
}

// stores runs f against a Memory store and a Dir store; reopen gives the
// store as a new process would see it.
func stores(t *testing.T, f func(t *testing.T, st func() values.Durable, reopen func() values.Durable)) {
	t.Run("memory", func(t *testing.T) {
		m := store.NewMemory()
		t.Cleanup(func() { m.Close() })
		f(t, func() values.Durable { return m }, func() values.Durable { return m })
	})
	t.Run("dir", func(t *testing.T) {
		dir := t.TempDir()
		d, err := store.OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		f(t, func() values.Durable { return d }, func() values.Durable {
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			if d, err = store.OpenDir(dir); err != nil {
				t.Fatal(err)
			}
			return d
		})
	})
}

func TestDurableRoundTrip(t *testing.T) {
	stores(t, func(t *testing.T, st func() values.Durable, reopen func() values.Durable) {
		c := &counting{Durable: st()}
		var failures []string
		s := openSession(c, testSession, values.WithMemoryLimit(testMemLimit),
			values.WithStoreErrors(func(h string, err error) { failures = append(failures, h+": "+err.Error()) }))
		if !s.Durable() || values.New().Durable() || new(values.SessionValues).Durable() {
			t.Errorf("Durable() = %v opened on a Durable, %v from New, %v zero; want true, false, false",
				s.Durable(), values.New().Durable(), new(values.SessionValues).Durable())
		}
		hs := putKinds(t, s)
		if len(failures) != 0 {
			t.Fatalf("store failures: %q", failures)
		}
		for _, h := range hs {
			if !s.Persisted(h) {
				t.Errorf("Persisted(%s) = false", h)
			}
		}
		if c.reads.Load() != 0 {
			t.Fatalf("Put read %d bodies back", c.reads.Load())
		}
		// Only the two values over the limit were dropped from memory.
		for _, h := range hs {
			before := c.reads.Load()
			v, _ := s.Get(h)
			v.JSON()
			want := int64(0)
			if h == "r8" || h == "r10" {
				want = 1
			}
			if got := c.reads.Load() - before; got != want {
				t.Errorf("JSON of %s (%d bytes) read %d bodies back, want %d", h, v.Size(), got, want)
			}
		}
		before := takeSnapshot(t, s)

		c2 := &counting{Durable: reopen()}
		s2, err := values.Open(c2, testSession, values.WithMemoryLimit(testMemLimit))
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hs {
			v, _ := s2.Get(h)
			if got := values.RenderPreview(h, v); got != before.Previews[h] {
				t.Errorf("preview of %s after Open:\n got %s\nwant %s", h, got, before.Previews[h])
			}
			if !s2.Persisted(h) {
				t.Errorf("Persisted(%s) = false after Open", h)
			}
		}
		if n := c2.reads.Load(); n != 0 {
			t.Fatalf("Open and previews read %d bodies back, want none", n)
		}
		after := takeSnapshot(t, s2)
		if diff := cmp.Diff(before, after); diff != "" {
			t.Errorf("after Open (-before +after):\n%s", diff)
		}
		// A value within the limit is read back once and kept; one over it
		// is read back once and held until another one over it is read
		// back.
		if v, _ := s2.Get("r8"); v.JSON() == nil { // r8 held, whatever the snapshot read last
			t.Fatal("r8 does not read back")
		}
		for i, tc := range []struct {
			h    string
			want int64
		}{{"r8", 0}, {"r1", 0}, {"r3", 0}, {"r10", 1}, {"r10", 0}, {"r1", 0}, {"r10", 0}, {"r8", 1}, {"r10", 1}} {
			before := c2.reads.Load()
			v, _ := s2.Get(tc.h)
			v.JSON()
			v.JSON()
			if got := c2.reads.Load() - before; got != tc.want {
				t.Errorf("step %d: two JSON calls on %s read %d bodies back, want %d", i, tc.h, got, tc.want)
			}
		}
		// Numbering goes on after the reopen.
		if h := s2.PutOutput([]byte("after the reopen")); h != "r12" || !s2.Persisted(h) {
			t.Errorf("first Put after Open: %s, durable %v; want r12, true", h, s2.Persisted(h))
		}
		if s2.Len() != 12 {
			t.Errorf("Len = %d, want 12", s2.Len())
		}
	})
}

// A store failure never fails a Put, never shows up as durable and never
// reaches a reopened session.
func TestDurableStoreFailure(t *testing.T) {
	mem := store.NewMemory()
	defer mem.Close()
	failing := storetest.Failing(nil)
	var mu sync.Mutex
	failed := map[string]error{}
	s := openSession(failWrites{w: failing, r: mem}, testSession, values.WithMemoryLimit(1024),
		values.WithStoreErrors(func(h string, err error) {
			mu.Lock()
			failed[h] = err
			mu.Unlock()
		}))
	hs := putKinds(t, s)
	if len(failed) != len(hs) {
		t.Errorf("callback told of %d failures, want %d", len(failed), len(hs))
	}
	for _, h := range hs {
		if err := failed[h]; !errors.Is(err, storetest.ErrFailing) {
			t.Errorf("failure of %s = %v, want storetest.ErrFailing", h, err)
		}
		if s.Persisted(h) {
			t.Errorf("Persisted(%s) = true", h)
		}
		v, _ := s.Get(h)
		if b, err := v.Load(); err != nil || len(b) != v.Size() {
			t.Errorf("%s: Load = %d bytes, %v; want it in memory", h, len(b), err)
		}
	}
	takeSnapshot(t, s) // everything works in memory

	s2, err := values.Open(mem, testSession)
	if err != nil {
		t.Fatal(err)
	}
	if s2.Len() != 0 || len(s2.Handles()) != 0 {
		t.Errorf("reopened: Len %d, handles %q; want none", s2.Len(), s2.Handles())
	}
	if _, ok := s2.Get("r1"); ok {
		t.Error("Get(r1) = true after reopening a session whose writes failed")
	}
	if _, err := values.Open(failing, testSession); !errors.Is(err, storetest.ErrFailing) {
		t.Errorf("Open on a failing store: %v, want storetest.ErrFailing", err)
	}
}

// failWrites writes to one Durable and reads from another.
type failWrites struct{ w, r values.Durable }

func (f failWrites) PutBody(s string, b []byte) (string, error) { return f.w.PutBody(s, b) }
func (f failWrites) AppendRecord(s string, r values.Record) error {
	return f.w.AppendRecord(s, r)
}
func (f failWrites) Body(s, k string) ([]byte, error)          { return f.r.Body(s, k) }
func (f failWrites) Records(s string) ([]values.Record, error) { return f.r.Records(s) }

// A handle whose body was stored but whose record failed stays in memory,
// is not durable, and is unknown after a reopen; later handles are not.
func TestDurableRecordFailure(t *testing.T) {
	mem := store.NewMemory()
	defer mem.Close()
	c := &counting{Durable: mem, failRecord: "r2"}
	var got []string
	s := openSession(c, testSession, values.WithMemoryLimit(16),
		values.WithStoreErrors(func(h string, err error) {
			if !errors.Is(err, errInjected) {
				t.Errorf("failure of %s = %v", h, err)
			}
			got = append(got, h)
		}))
	big := strings.Repeat("big ", 100)
	for range 3 {
		s.PutOutput([]byte(big))
	}
	if diff := cmp.Diff([]string{"r2"}, got); diff != "" {
		t.Errorf("failures (-want +got):\n%s", diff)
	}
	if !s.Persisted("r1") || s.Persisted("r2") || !s.Persisted("r3") {
		t.Errorf("Durable r1 r2 r3 = %v %v %v, want true false true", s.Persisted("r1"), s.Persisted("r2"), s.Persisted("r3"))
	}
	c.failReads.Store(true)
	if v, _ := s.Get("r2"); string(v.Bytes()) != big {
		t.Error("r2, whose record failed, is not in memory")
	}
	if v, _ := s.Get("r1"); v.Bytes() != nil {
		t.Error("r1, over the memory limit, is still in memory")
	}
	c.failReads.Store(false)

	s2, err := values.Open(c, testSession)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"r1", "r3"}, s2.Handles()); diff != "" {
		t.Errorf("handles after Open (-want +got):\n%s", diff)
	}
	if _, ok := s2.Get("r2"); ok || s2.Len() != 2 || s2.Persisted("r2") {
		t.Errorf("lost r2: Get %v, Len %d, Durable %v", ok, s2.Len(), s2.Persisted("r2"))
	}
	res, err := s2.ResolveDetail([]byte(`["$r2","$r3"]`))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Refs) != 2 || !errors.Is(res.Refs[0].Err, values.ErrUnknownHandle) || res.Refs[1].Err != nil {
		t.Errorf("ResolveDetail refs = %+v, want $r2 unknown and $r3 resolved", res.Refs)
	}
	if _, err := s2.Read("r2", 0, 0); !errors.Is(err, values.ErrUnknownHandle) {
		t.Errorf("Read(r2) = %v, want ErrUnknownHandle", err)
	}
	if h := s2.PutOutput([]byte("x")); h != "r4" {
		t.Errorf("next handle %s, want r4", h)
	}
}

// A value that cannot be read back still previews from its record, and
// every reader reports ErrUnavailable with the store's error.
func TestDurableUnavailable(t *testing.T) {
	mem := store.NewMemory()
	defer mem.Close()
	c := &counting{Durable: mem}
	s := openSession(c, testSession)
	hs := putKinds(t, s)
	s2, err := values.Open(c, testSession, values.WithMaxPreview(values.MinMaxPreview))
	if err != nil {
		t.Fatal(err)
	}
	c.failReads.Store(true)
	for _, h := range hs {
		v, _ := s2.Get(h)
		if _, err := v.Load(); !errors.Is(err, values.ErrUnavailable) || !errors.Is(err, errInjected) {
			t.Errorf("%s: Load error %v, want ErrUnavailable and the store's error", h, err)
		}
		if v.JSON() != nil || v.Bytes() != nil || len(v.AppendJSON([]byte("x"))) != 1 {
			t.Errorf("%s: JSON, Bytes or AppendJSON returned bytes of an unavailable value", h)
		}
		p := values.RenderPreview(h, v)
		if len(p) > values.MinMaxPreview || !strings.HasPrefix(p, h+" = ") {
			t.Errorf("%s: preview %q", h, p)
		}
		if _, err := s2.Read(h, 0, 0); !errors.Is(err, values.ErrUnavailable) {
			t.Errorf("Read(%s) = %v, want ErrUnavailable", h, err)
		}
		if _, err := s2.Put(v); !errors.Is(err, values.ErrUnavailable) {
			t.Errorf("Put of unavailable %s = %v, want ErrUnavailable", h, err)
		}
	}
	// r1's recorded preview is longer than the new bound, so it is
	// rendered again, which needs the body.
	v, _ := s2.Get("r1")
	if p := values.RenderPreview("r1", v); !strings.Contains(p, "unavailable") {
		t.Errorf("preview of r1 without its body: %q", p)
	}
	res, err := s2.ResolveDetail([]byte(`{"a":"$r2.rows.0"}`))
	if err != nil || len(res.Refs) != 1 || !errors.Is(res.Refs[0].Err, values.ErrUnavailable) {
		t.Errorf("ResolveDetail: %+v, %v; want $r2.rows.0 unresolved with ErrUnavailable", res.Refs, err)
	}
	if _, _, err := s2.Prepare(nil, []byte(`{"a":"$r2"}`)); err == nil || !strings.Contains(err.Error(), "unavailable") {
		t.Errorf("Prepare: %v, want an error saying $r2 is unavailable", err)
	}
}

// After a reopen with another preview bound, a preview that does not fit is
// rendered again from the body, as a store that never persisted would.
func TestDurablePreviewBoundChange(t *testing.T) {
	mem := store.NewMemory()
	defer mem.Close()
	s := openSession(mem, testSession)
	hs := putKinds(t, s)
	s2, err := values.Open(mem, testSession, values.WithMaxPreview(values.MinMaxPreview))
	if err != nil {
		t.Fatal(err)
	}
	plain := values.New(values.WithMaxPreview(values.MinMaxPreview))
	for _, h := range hs {
		v, _ := s2.Get(h)
		got := values.RenderPreview(h, v)
		if len(got) > values.MinMaxPreview {
			t.Errorf("%s: preview of %d bytes over the bound %d: %q", h, len(got), values.MinMaxPreview, got)
		}
		ph, err := plain.Put(v) // stores a copy, read back
		if err != nil {
			t.Fatal(err)
		}
		pv, _ := plain.Get(ph)
		orig, _ := s.Get(h)
		if want := values.RenderPreview(h, pv); len(values.RenderPreview(h, orig)) > values.MinMaxPreview && got != want {
			t.Errorf("%s: preview after Open\n got %q\nwant %q", h, got, want)
		}
	}
}

// Concurrent Puts append their records in handle order.
func TestDurableConcurrentPuts(t *testing.T) {
	mem := store.NewMemory()
	defer mem.Close()
	d := mem
	s := openSession(d, testSession, values.WithMemoryLimit(100))
	const workers, each = 6, 30
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				body := fmt.Sprintf(`{"worker":%d,"i":%d,"pad":%q}`, w, i, strings.Repeat("p", i*10))
				h := s.PutOutput([]byte(body))
				v, _ := s.Get(h)
				if string(v.Bytes()) != body || values.RenderPreview(h, v) == "" {
					t.Errorf("%s does not read back", h)
				}
			}
		})
	}
	wg.Wait()
	recs, err := d.Records(testSession)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != workers*each {
		t.Fatalf("%d records, want %d", len(recs), workers*each)
	}
	for i, r := range recs {
		if want := fmt.Sprintf("r%d", i+1); r.Handle != want {
			t.Fatalf("record %d is %s, want %s", i, r.Handle, want)
		}
	}
}

// A negative memory limit keeps every value in memory.
func TestDurableKeepAll(t *testing.T) {
	mem := store.NewMemory()
	defer mem.Close()
	c := &counting{Durable: mem}
	s := openSession(c, testSession, values.WithMemoryLimit(-1))
	hs := putKinds(t, s)
	takeSnapshot(t, s)
	if n := c.reads.Load(); n != 0 {
		t.Errorf("read %d bodies back, want none", n)
	}
	s2, err := values.Open(c, testSession, values.WithMemoryLimit(-1))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		for _, h := range hs {
			v, _ := s2.Get(h)
			v.JSON()
		}
	}
	if n := c.reads.Load(); n != int64(len(hs)) {
		t.Errorf("two passes after Open read %d bodies back, want %d (each once)", n, len(hs))
	}
}

// Open refuses records it did not write, and treats a record without a
// body as a lost handle.
func TestOpenBadRecords(t *testing.T) {
	good := func(h string) values.Record {
		return values.Record{Handle: h, Key: store.KeyOf([]byte("1")), Kind: "number", Size: 1, Meta: []byte(`{"v":1,"max":2048,"preview":"` + h + ` = 1"}`)}
	}
	for _, tc := range []struct {
		name string
		recs []values.Record
	}{
		{"not a handle", []values.Record{{Handle: "x1", Key: store.KeyOf(nil), Kind: "text"}}},
		{"leading zero", []values.Record{{Handle: "r01", Key: store.KeyOf(nil), Kind: "text"}}},
		{"huge handle", []values.Record{{Handle: "r99999999999", Key: store.KeyOf(nil), Kind: "text"}}},
		{"twice, other body", []values.Record{good("r1"), {Handle: "r1", Key: store.KeyOf([]byte("2")), Kind: "number", Size: 1, Meta: good("r1").Meta}}},
		{"twice, other kind", []values.Record{good("r1"), {Handle: "r1", Key: good("r1").Key, Kind: "text", Size: 1, Meta: good("r1").Meta}}},
		{"twice, once without a body", []values.Record{good("r1"), {Handle: "r1", Kind: "number", Size: 1}}},
		{"unknown kind", []values.Record{{Handle: "r1", Key: store.KeyOf(nil), Kind: "float", Meta: []byte(`{"v":1}`)}}},
		{"bad meta", []values.Record{{Handle: "r1", Key: store.KeyOf(nil), Kind: "text", Meta: []byte(`{`)}}},
		{"no meta", []values.Record{{Handle: "r1", Key: store.KeyOf(nil), Kind: "text"}}},
		{"future meta", []values.Record{{Handle: "r1", Key: store.KeyOf(nil), Kind: "text", Meta: []byte(`{"v":2}`)}}},
		{"bad digest", []values.Record{{Handle: "r1", Key: store.KeyOf(nil), Kind: "binary", Meta: []byte(`{"v":1,"sha256":"zz"}`)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := store.NewMemory()
			defer mem.Close()
			d := mem
			for _, r := range tc.recs {
				if err := d.AppendRecord(testSession, r); err != nil {
					t.Fatal(err)
				}
			}
			if s, err := values.Open(d, testSession); err == nil {
				t.Errorf("Open succeeded with handles %q", s.Handles())
			}
		})
	}
	t.Run("no body", func(t *testing.T) {
		mem := store.NewMemory()
		defer mem.Close()
		d := mem
		if _, err := d.PutBody(testSession, []byte("1")); err != nil {
			t.Fatal(err)
		}
		for _, r := range []values.Record{{Handle: "r1", Kind: "text"}, good("r2")} {
			if err := d.AppendRecord(testSession, r); err != nil {
				t.Fatal(err)
			}
		}
		s, err := values.Open(d, testSession)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"r2"}, s.Handles()); diff != "" {
			t.Errorf("handles (-want +got):\n%s", diff)
		}
		if v, _ := s.Get("r2"); string(v.JSON()) != "1" {
			t.Errorf("r2 = %q, want 1", v.JSON())
		}
		if h := s.PutOutput([]byte("x")); h != "r3" {
			t.Errorf("next handle %s, want r3", h)
		}
	})
}

// Open with a nil Durable is an empty in-memory store, and an empty session
// opens empty.
func TestOpenEmpty(t *testing.T) {
	s, err := values.Open(nil, testSession)
	if err != nil || s.Len() != 0 {
		t.Fatalf("Open(nil): %v, %v", s, err)
	}
	if h := s.PutOutput([]byte("x")); h != "r1" || s.Persisted(h) {
		t.Errorf("Put after Open(nil): %s, durable %v", h, s.Persisted(h))
	}
	mem := store.NewMemory()
	defer mem.Close()
	s, err = values.Open(mem, "new-session")
	if err != nil || s.Len() != 0 {
		t.Fatalf("Open of a new session: %v, %v", s, err)
	}
	if h := s.PutOutput([]byte("x")); h != "r1" || !s.Persisted(h) {
		t.Errorf("Put after Open: %s, durable %v", h, s.Persisted(h))
	}
	if _, err := values.Open(mem, "../escape"); !errors.Is(err, store.ErrInvalidSession) {
		t.Errorf("Open with a bad session id: %v, want store.ErrInvalidSession", err)
	}
}

// killEnv names the store directory when the test binary runs as the
// child of TestDurableKill.
const killEnv = "VALUES_TEST_KILL_DIR"

const killSession = "killed"

// killValue is the deterministic output stored under handle number n: JSON,
// text or binary in turn, some of them large.
func killValue(n int) []byte {
	size := 200 + n*37%5000
	if n%5 == 0 {
		size = 2<<20 + n // over the child's memory limit, and slow enough to be caught mid-write
	}
	switch n % 3 {
	case 0:
		var b bytes.Buffer
		b.WriteString(`[`)
		for i := 0; b.Len() < size; i++ {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"n":%d,"i":%d}`, n, i)
		}
		b.WriteString(`]`)
		return b.Bytes()
	case 1:
		line := fmt.Sprintf("value %d line\n", n)
		return []byte(strings.Repeat(line, size/len(line)+1))
	}
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(n*31 + i*7 | 0x80) // never valid UTF-8 for long
	}
	return b
}

// TestDurableKill kills, with SIGKILL, a child process that stores values
// in a loop into a Dir store, then reopens the session: every handle
// present reads back whole and right, the handles are r1…rN without a gap,
// and every handle the child reported is among them.
func TestDurableKill(t *testing.T) {
	if dir := os.Getenv(killEnv); dir != "" {
		killChild(t, dir)
		return
	}
	dir := t.TempDir()
	child := testkit.StartChild(t, testkit.ChildCommand("TestDurableKill", killEnv+"="+dir), "stored ")
	got := child.Reports(t, 12, 60*time.Second)
	// Kill it while a body is being written, if that is seen within a
	// thousand looks, else whatever it is doing: either way the reopened
	// session must hold every handle reported, whole, so the count of
	// looks only makes a torn write likelier, and no outcome depends on
	// the machine's speed.
	midWrite := false
	for range 1000 {
		if midWrite = writing(filepath.Join(dir, "bodies")); midWrite {
			break
		}
		runtime.Gosched()
	}
	got = append(got, child.Kill(t)...)

	st, err := store.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := values.Open(st, killSession, values.WithMemoryLimit(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	hs := s.Handles()
	if len(hs) < len(got) {
		t.Fatalf("%d handles after the kill, fewer than the %d the child reported", len(hs), len(got))
	}
	for i, h := range hs {
		if want := fmt.Sprintf("r%d", i+1); h != want {
			t.Fatalf("handle %d is %s, want %s: a gap", i, h, want)
		}
		v, _ := s.Get(h)
		b, err := v.Load()
		if err != nil || !bytes.Equal(b, killValue(i+1)) {
			t.Errorf("%s: %d bytes, %v; want its whole value (%d bytes)", h, len(b), err, len(killValue(i+1)))
		}
		if !s.Persisted(h) {
			t.Errorf("Persisted(%s) = false", h)
		}
	}
	last := hs[len(hs)-1]
	if _, _, err := s.Resolve([]byte(`["$` + last + `"]`)); err != nil {
		t.Errorf("Resolve $%s: %v", last, err)
	}
	if h := s.PutOutput([]byte("after")); h != fmt.Sprintf("r%d", len(hs)+1) {
		t.Errorf("first handle after the kill is %s, want r%d", h, len(hs)+1)
	}
	t.Logf("child reported %d handles; %d present after the kill (killed mid-write: %v)", len(got), len(hs), midWrite)
}

// writing reports whether dir holds a body being written.
func writing(dir string) bool {
	es, _ := os.ReadDir(dir)
	for _, e := range es {
		if strings.HasPrefix(e.Name(), store.TempPrefix) {
			return true
		}
	}
	return false
}

// killChild stores killValue(n) as rn until it is killed, printing each
// handle once it is durable.
func killChild(t *testing.T, dir string) {
	st, err := store.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := openSession(st, killSession, values.WithMemoryLimit(1<<20),
		values.WithStoreErrors(func(h string, err error) { t.Fatalf("storing %s: %v", h, err) }))
	for n := 1; ; n++ {
		h := s.PutOutput(killValue(n))
		if h != fmt.Sprintf("r%d", n) || !s.Persisted(h) {
			t.Fatalf("handle %s, durable %v; want r%d, true", h, s.Persisted(h), n)
		}
		fmt.Printf("stored %s\n", h)
	}
}

// BenchmarkOpen reopens a session of 10,000 handles; the "records"
// benchmarks beside each are the baseline, reading the records alone.
func BenchmarkOpen(b *testing.B) {
	const n = 10000
	fill := func(b *testing.B, d values.Durable) {
		s := openSession(d, "bench")
		for i := range n {
			s.PutOutput(fmt.Appendf(nil, `{"id":%d,"name":"user %d","tags":["a","b"],"text":%q}`, i, i, strings.Repeat("x", i%300)))
		}
	}
	b.Run("memory", func(b *testing.B) {
		mem := store.NewMemory()
		defer mem.Close()
		d := mem
		fill(b, d)
		benchOpen(b, d, func() (int, error) { hs, err := mem.Records("bench"); return len(hs), err })
	})
	b.Run("dir", func(b *testing.B) {
		dir, err := store.OpenDir(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		defer dir.Close()
		d := dir
		fill(b, d)
		benchOpen(b, d, func() (int, error) { hs, err := dir.Records("bench"); return len(hs), err })
	})
}

func benchOpen(b *testing.B, d values.Durable, records func() (int, error)) {
	b.Run("records", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if n, err := records(); err != nil || n != 10000 {
				b.Fatal(n, err)
			}
		}
	})
	b.Run("open", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s, err := values.Open(d, "bench")
			if err != nil || s.Len() != 10000 {
				b.Fatal(err)
			}
		}
	})
}

// FuzzOpenRecord opens a session whose one record holds arbitrary kind,
// Meta and body: Open never panics, and when it succeeds the value's preview keeps
// its bound and is valid UTF-8, and reading it fails cleanly or returns
// its recorded size.
func FuzzOpenRecord(f *testing.F) {
	f.Add("array", []byte(`{"v":1,"n":3,"max":2048,"preview":"r1 = array(len=3, [1, 2, 3])"}`), []byte("[1,2,3]"))
	f.Add("text", []byte(`{"v":1,"n":7,"lines":1,"preview":"r1 = \"a\\u00e9\\\\\" \ud800"}`), []byte("[1,2,3]"))
	f.Add("binary", []byte(`{"v":1,"n":7,"sha256":"00","ctype":"x"}`), []byte("[1,2,3]"))
	f.Add("object", []byte(` { "v" : 1 , "x" : -1.5e3 , "preview" : "`+strings.Repeat("p", 3000)+`" } `), []byte("[1,2,3]"))
	f.Add("number", []byte(`{"v":1,"n":99999999999999999999999}`), []byte("[1,2,3]"))
	f.Add("null", []byte(`{"v":1,"max":"2048"}`), []byte("[1,2,3]"))
	f.Add("array", []byte(`{"v":1,"n":3}`), []byte(`[1,2`))
	f.Add("object", []byte(`{"v":1,"n":1}`), []byte(`{"a":`+"\xff"+`}`))
	f.Add("text", []byte(`{"v":1,"n":1}`), []byte("\xff"))
	f.Fuzz(func(t *testing.T, kind string, meta, body []byte) {
		mem := store.NewMemory()
		defer mem.Close()
		d := mem
		key, err := d.PutBody(testSession, body)
		if err != nil {
			t.Fatal(err)
		}
		if d.AppendRecord(testSession, values.Record{Handle: "r1", Key: key, Kind: kind, Size: int64(len(body)), Meta: meta}) != nil {
			return // beyond the store's limits
		}
		s, err := values.Open(d, testSession, values.WithMaxPreview(values.MinMaxPreview))
		if err != nil {
			return
		}
		v, ok := s.Get("r1")
		if !ok {
			t.Fatal("Get(r1) = false after a successful Open")
		}
		for _, h := range []string{"r1", "other"} {
			if p := values.RenderPreview(h, v); len(p) > values.MinMaxPreview || !utf8.ValidString(p) {
				t.Errorf("preview %q: %d bytes, valid UTF-8 %v", p, len(p), utf8.ValidString(p))
			}
		}
		if b, err := v.Load(); err == nil && len(b) != v.Size() {
			t.Errorf("Load: %d bytes, Size %d", len(b), v.Size())
		}
		s.Resolve([]byte(`["$r1","$r1.0","$r1.x"]`))
		s.Read("r1", 0, 0)
	})
}

// A body that cannot be stored still leaves a record without a body, so a
// reopened session never hands the lost handle's number out again.
func TestDurableBodyFailureKeepsNumbering(t *testing.T) {
	mem := store.NewMemory()
	defer mem.Close()
	c := &counting{Durable: mem}
	var failed []string
	s := openSession(c, testSession,
		values.WithStoreErrors(func(h string, err error) { failed = append(failed, h) }))
	s.PutOutput([]byte("one"))
	c.failBodies.Store(true)
	s.PutOutput([]byte("two"))
	s.PutOutput([]byte("three"))
	if diff := cmp.Diff([]string{"r2", "r3"}, failed); diff != "" {
		t.Errorf("failures (-want +got):\n%s", diff)
	}
	if v, _ := s.Get("r3"); string(v.Bytes()) != "three" || s.Persisted("r3") {
		t.Errorf("r3 = %q, durable %v; want it in memory, not durable", v.Bytes(), s.Persisted("r3"))
	}
	c.failBodies.Store(false)

	s2, err := values.Open(c, testSession)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"r1"}, s2.Handles()); diff != "" {
		t.Errorf("handles after Open (-want +got):\n%s", diff)
	}
	if _, ok := s2.Get("r3"); ok {
		t.Error("r3, whose body was never stored, is known after Open")
	}
	if h := s2.PutOutput([]byte("four")); h != "r4" {
		t.Errorf("next handle %s, want r4: a lost handle's number was handed out again", h)
	}
}

// Open accepts a record appended twice, and refuses two different records
// for one handle.
func TestOpenDuplicateRecords(t *testing.T) {
	mem := store.NewMemory()
	defer mem.Close()
	d := mem
	key, err := d.PutBody(testSession, []byte(`[1,2]`))
	if err != nil {
		t.Fatal(err)
	}
	r1 := values.Record{Handle: "r1", Key: key, Kind: "array", Size: 5, Meta: []byte(`{"v":1,"n":2,"max":2048,"preview":"r1 = [1, 2]"}`)}
	r2 := values.Record{Handle: "r2", Kind: "text", Size: 3} // lost
	r3 := r1
	r3.Handle = "r3"
	for _, r := range []values.Record{r1, r1, r2, r3, r2, r3} {
		if err := d.AppendRecord(testSession, r); err != nil {
			t.Fatal(err)
		}
	}
	s, err := values.Open(d, testSession)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"r1", "r3"}, s.Handles()); diff != "" {
		t.Errorf("handles (-want +got):\n%s", diff)
	}
	if v, _ := s.Get("r3"); string(v.JSON()) != "[1,2]" || s.Len() != 2 {
		t.Errorf("r3 = %s, Len %d; want [1,2], 2", v.JSON(), s.Len())
	}
	if h := s.PutOutput([]byte("x")); h != "r4" {
		t.Errorf("next handle %s, want r4", h)
	}
}

// recordsOnly is a Durable that holds a fixed table of records and the
// bodies of a Memory store, to give Open records no store writes itself.
type recordsOnly struct {
	values.Durable
	recs []values.Record
}

func (r recordsOnly) Records(string) ([]values.Record, error) { return r.recs, nil }

// A lost record (the last one of a damaged table) stands for the handle
// after the highest recorded before it: that handle is unknown after Open
// and its number is never handed out again.
func TestOpenLostRecords(t *testing.T) {
	mem := store.NewMemory()
	defer mem.Close()
	key, err := mem.PutBody(testSession, []byte("1"))
	if err != nil {
		t.Fatal(err)
	}
	rec := func(h string) values.Record {
		return values.Record{Handle: h, Key: key, Kind: "number", Size: 1, Meta: []byte(`{"v":1,"preview":"` + h + ` = 1"}`)}
	}
	lost := values.Record{}
	for _, tc := range []struct {
		name    string
		recs    []values.Record
		handles []string
		next    string
	}{
		{"lost last", []values.Record{rec("r1"), rec("r2"), lost}, []string{"r1", "r2"}, "r4"},
		{"only lost", []values.Record{lost}, []string{}, "r2"},
		{"two lost", []values.Record{rec("r1"), lost, lost}, []string{"r1"}, "r4"},
		{"lost after a gap", []values.Record{rec("r1"), rec("r3"), lost}, []string{"r1", "r3"}, "r5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !lost.Lost() || rec("r1").Lost() {
				t.Fatal("Record.Lost")
			}
			s, err := values.Open(recordsOnly{mem, tc.recs}, testSession)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.handles, s.Handles()); diff != "" {
				t.Errorf("handles (-want +got):\n%s", diff)
			}
			if h := s.PutOutput([]byte("x")); h != tc.next {
				t.Errorf("next handle %s, want %s", h, tc.next)
			}
		})
	}
}

// Open accepts up to maxUnrecorded handles without a record, which it
// takes for lost, and refuses a handle number further past the records, so
// that one bad record cannot make it allocate without bound.
func TestOpenGap(t *testing.T) {
	for _, tc := range []struct {
		name string
		top  int // the second record's handle number, after r1
		ok   bool
	}{
		{"small gap", 5000, true},
		{"at the bound", 2 + values.MaxUnrecordedForTest, true},
		{"past the bound", 3 + values.MaxUnrecordedForTest, false},
		{"far past", 1 << 26, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := store.NewMemory()
			defer mem.Close()
			d := mem
			key, err := d.PutBody(testSession, []byte("1"))
			if err != nil {
				t.Fatal(err)
			}
			top := fmt.Sprintf("r%d", tc.top)
			for _, h := range []string{"r1", top} {
				r := values.Record{Handle: h, Key: key, Kind: "number", Size: 1, Meta: []byte(`{"v":1,"max":2048,"preview":"` + h + ` = 1"}`)}
				if err := d.AppendRecord(testSession, r); err != nil {
					t.Fatal(err)
				}
			}
			s, err := values.Open(d, testSession)
			if !tc.ok {
				if err == nil {
					t.Errorf("Open succeeded with %d handles", s.Len())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"r1", top}, s.Handles()); diff != "" {
				t.Errorf("handles (-want +got):\n%s", diff)
			}
			if _, ok := s.Get("r2"); ok || s.Persisted("r2") {
				t.Error("r2, never recorded, is known")
			}
			if h, want := s.PutOutput([]byte("x")), fmt.Sprintf("r%d", tc.top+1); h != want {
				t.Errorf("next handle %s, want %s", h, want)
			}
		})
	}
}

// bigArray returns a JSON array of at least size bytes whose items are
// {"i":0,"s":"…"}, {"i":1,…}, ….
func bigArray(size int, tag string) []byte {
	var b bytes.Buffer
	b.WriteString(`[`)
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"i":%d,"s":"%s item %d"}`, i, tag, i)
	}
	b.WriteString(`]`)
	return b.Bytes()
}

// A value kept only in the durable store is read back once for a Resolve
// with many paths into it and once for paging through it, and stays held
// until another such value is read back.
func TestDurableReadBackOnce(t *testing.T) {
	mem := store.NewMemory()
	defer mem.Close()
	c := &counting{Durable: mem}
	s := openSession(c, testSession, values.WithMemoryLimit(testMemLimit))
	a, b := bigArray(1<<20, "a"), bigArray(1<<20, "b")
	ha, hb := s.PutOutput(a), s.PutOutput(b)
	small := s.PutOutput([]byte(`{"x":1}`))
	s2, err := values.Open(c, testSession, values.WithMemoryLimit(testMemLimit))
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []struct {
		name string
		s    *values.SessionValues
	}{{"new", s}, {"open", s2}} {
		t.Run(st.name, func(t *testing.T) {
			s := st.s
			// Resolve with 10 paths into a, after b was read back last.
			if v, _ := s.Get(hb); v.JSON() == nil {
				t.Fatal("b does not read back")
			}
			var args []string
			for i := range 10 {
				args = append(args, fmt.Sprintf(`"$%s.%d.s"`, ha, i*997))
			}
			reads := c.reads.Load()
			out, refs, err := s.Resolve([]byte("[" + strings.Join(args, ",") + "]"))
			if err != nil || len(refs) != 10 {
				t.Fatalf("Resolve: %v, refs %q", err, refs)
			}
			if !strings.Contains(string(out), `"a item 8973"`) {
				t.Errorf("Resolve = %s", out)
			}
			if n := c.reads.Load() - reads; n != 1 {
				t.Errorf("Resolve with 10 paths into %s read it back %d times, want once", ha, n)
			}
			// Page through b, then a: each is read back once.
			for _, tc := range []struct {
				h    string
				want []byte
			}{{hb, b}, {ha, a}} {
				reads := c.reads.Load()
				if got := readAll(t, s, tc.h); got != string(tc.want) {
					t.Errorf("paging %s reassembled %d bytes, want %d", tc.h, len(got), len(tc.want))
				}
				if n := c.reads.Load() - reads; n != 1 {
					t.Errorf("paging through %s (%d bytes, %d pages) read it back %d times, want once", tc.h, len(tc.want), len(tc.want)/(16<<10)+1, n)
				}
			}
			// A value within the limit does not replace the held one, and
			// Load copies the held one.
			reads = c.reads.Load()
			readAll(t, s, small)
			readAll(t, s, ha)
			if v, _ := s.Get(ha); !bytes.Equal(v.Bytes(), a) {
				t.Errorf("Bytes of %s differ", ha)
			}
			want := int64(0)
			if s == s2 {
				want = 1 // small, read back once after Open and kept
			}
			if n := c.reads.Load() - reads; n != want {
				t.Errorf("%d reads for a held value and a small one, want %d", n, want)
			}
		})
	}
}

// Concurrent reads of values kept only in the durable store, which take
// turns being the one held, all read back right.
func TestDurableReadBackConcurrent(t *testing.T) {
	mem := store.NewMemory()
	defer mem.Close()
	s := openSession(mem, testSession, values.WithMemoryLimit(1024))
	var bodies [][]byte
	var hs []string
	for i := range 3 {
		bodies = append(bodies, bigArray(8<<10, fmt.Sprint(i)))
		hs = append(hs, s.PutOutput(bodies[i]))
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 30 {
				k := (w + i) % len(hs)
				if got, err := pageAll(s, hs[k]); err != nil || got != string(bodies[k]) {
					t.Errorf("%s read back %d bytes, %v; want %d", hs[k], len(got), err, len(bodies[k]))
				}
				out, _, err := s.Resolve([]byte(`"$` + hs[k] + `.0.s"`))
				if want := fmt.Sprintf(`"%d item 0"`, k); err != nil || string(out) != want {
					t.Errorf("Resolve $%s.0.s = %s, %v; want %s", hs[k], out, err, want)
				}
			}
		})
	}
	wg.Wait()
}

// TestDurableFirstHandle: a new durable session starts at WithFirstHandle,
// as New does, so that a gateway's new session never hands out a handle
// an earlier session's transcript holds; its handles are persisted and read
// back under those numbers, and a reopened session goes on after its
// highest, whatever WithFirstHandle says then. Handles below its first
// name nothing.
func TestDurableFirstHandle(t *testing.T) {
	stores(t, func(t *testing.T, st func() values.Durable, reopen func() values.Durable) {
		s := openSession(st(), testSession, values.WithFirstHandle(50))
		if h := s.PutOutput([]byte(`{"a":1}`)); h != "r50" || !s.Persisted(h) {
			t.Fatalf("first handle %s (persisted %v), want r50", h, s.Persisted(h))
		}
		s.PutOutput([]byte("second"))
		for _, first := range []int{1, 50, 1000} {
			again := openSession(reopen(), testSession, values.WithFirstHandle(first))
			if v, ok := again.Get("r50"); !ok || string(v.JSON()) != `{"a":1}` || again.Next() != "r52" || again.Len() != 2 {
				t.Errorf("reopened with WithFirstHandle(%d): r50 %v, next %s, len %d", first, ok, again.Next(), again.Len())
			}
			if _, ok := again.Get("r1"); ok {
				t.Errorf("reopened: r1 names a value")
			}
			if _, _, err := again.Resolve([]byte(`{"x":"$r49"}`)); err != nil {
				t.Errorf("resolving a handle below the first: %v", err)
			}
			if d, _ := again.ResolveDetail([]byte(`{"x":"$r49"}`)); len(d.Refs) != 1 || !errors.Is(d.Refs[0].Err, values.ErrUnknownHandle) {
				t.Errorf("$r49: %+v", d.Refs)
			}
		}
	})
}

// TestStoreTableBlocks stores more values than a block of the store's
// table holds (1024), in memory, and exactly a block durably, and reads
// each back by its handle, before and after the session is reopened, with
// a value added after the reopened table, in a block of its own.
func TestStoreTableBlocks(t *testing.T) {
	const block, first = 1024, 7
	check := func(t *testing.T, s *values.SessionValues, n int) {
		t.Helper()
		if s.Len() != n || s.Next() != fmt.Sprintf("r%d", first+n) {
			t.Fatalf("len %d, next %s; want %d, r%d", s.Len(), s.Next(), n, first+n)
		}
		hs := s.Handles()
		if len(hs) != n || hs[0] != fmt.Sprintf("r%d", first) || hs[n-1] != fmt.Sprintf("r%d", first+n-1) {
			t.Fatalf("handles: %d, %s … %s", len(hs), hs[0], hs[len(hs)-1])
		}
		for i, h := range hs {
			if v, ok := s.Get(h); !ok || string(v.JSON()) != fmt.Sprintf(`{"i":%d}`, i) {
				t.Fatalf("%s: %v %s, want value %d", h, ok, v.JSON(), i)
			}
		}
	}
	put := func(s *values.SessionValues, from, to int) {
		for i := from; i < to; i++ {
			s.PutOutput(fmt.Appendf(nil, `{"i":%d}`, i))
		}
	}
	t.Run("new", func(t *testing.T) {
		s := values.New(values.WithFirstHandle(first))
		put(s, 0, 2*block+5)
		check(t, s, 2*block+5)
	})
	stores(t, func(t *testing.T, st func() values.Durable, reopen func() values.Durable) {
		s := openSession(st(), testSession, values.WithFirstHandle(first))
		put(s, 0, block)
		again := openSession(reopen(), testSession)
		check(t, again, block)
		put(again, block, block+1)
		check(t, again, block+1)
	})
}
