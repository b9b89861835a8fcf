package storetest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/store"
)

// A Backend is what [Run] needs of one kind of store.
type Backend struct {
	// Open returns a new, empty store with opts applied ([store.WithTTL],
	// [store.WithClock]). The backend releases it when the test ends.
	Open func(t *testing.T, opts ...store.Option) values.Durable
	// Reopen returns a store over the same data as st, as another process
	// would open it, with opts applied; it may close st first, when two
	// stores cannot be open on the same data at once. A grant keeps the
	// expiry it was given, whatever TTL the reopened store has.
	Reopen func(t *testing.T, st values.Durable, opts ...store.Option) values.Durable
	// Corrupt changes the stored bytes of the body under key (st stays
	// open), as damage or tampering would; Body must then fail with
	// [store.ErrIntegrity]. Nil for a backend whose bodies nothing outside
	// it can reach (the memory store): the suite leaves that test out.
	Corrupt func(t *testing.T, st values.Durable, key string)
	// Sizes are body sizes the backend wants tried besides the suite's own
	// (empty, small, 1 MiB): a chunked backend names sizes around its
	// chunk size.
	Sizes []int
}

// Run runs the conformance suite on b: every backend of values.Durable
// the project ships passes it, with the guarantees the package store
// documents (content-addressed bodies, per-session grants, expiry, an
// append-only handle table, closing). Each test opens its own stores.
func Run(t *testing.T, b Backend) {
	for _, tc := range []struct {
		name string
		run  func(*testing.T, Backend)
	}{
		{"RoundTrip", testRoundTrip},
		{"PutCopiesBody", testPutCopiesBody},
		{"Dedupe", testDedupe},
		{"BodyErrors", testBodyErrors},
		{"Renewal", testRenewal},
		{"RenewalNeverShortens", testRenewalNeverShortens},
		{"NeverExpires", testNeverExpires},
		{"DefaultTTL", testDefaultTTL},
		{"Records", testRecords},
		{"AppendRecordInvalid", testAppendRecordInvalid},
		{"InvalidSession", testInvalidSession},
		{"Reopen", testReopen},
		{"Corrupt", testCorrupt},
		{"PutRepairs", testPutRepairs},
		{"Concurrent", testConcurrent},
		{"ValuesOpen", testValuesOpen},
		{"Closed", testClosed},
	} {
		if (tc.name == "Corrupt" || tc.name == "PutRepairs") && b.Corrupt == nil {
			continue
		}
		t.Run(tc.name, func(t *testing.T) { tc.run(t, b) })
	}
}

// Clock is a settable clock for [store.WithClock], starting in 2030.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a Clock at 2030-01-02 03:04:05 UTC.
func NewClock() *Clock { return &Clock{t: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// RandomBytes returns n bytes of a fixed pseudo-random sequence for seed.
func RandomBytes(n int, seed uint64) []byte {
	b := make([]byte, n+8)
	x := seed*0x9e3779b97f4a7c15 + 1
	for i := 0; i < n; i += 8 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		binary.LittleEndian.PutUint64(b[i:], x)
	}
	return b[:n:n]
}

func mustPut(t testing.TB, st values.Durable, session string, body []byte) string {
	t.Helper()
	key, err := st.PutBody(session, body)
	if err != nil {
		t.Fatalf("PutBody(%q, %d bytes): %v", session, len(body), err)
	}
	return key
}

func testRoundTrip(t *testing.T, b Backend) {
	bodies := []struct {
		name string
		body []byte
	}{
		{"empty", []byte{}},
		{"nil", nil},
		{"text", []byte("hello world")},
		{"binary", []byte{0, 1, 2, 0xff, 0, '\n'}},
		{"1MiB", RandomBytes(1<<20, 1)},
	}
	for i, n := range b.Sizes {
		bodies = append(bodies, struct {
			name string
			body []byte
		}{fmt.Sprintf("%d bytes", n), RandomBytes(n, uint64(100+i))})
	}
	st := b.Open(t)
	for _, tc := range bodies {
		t.Run(tc.name, func(t *testing.T) {
			key := mustPut(t, st, "s1", tc.body)
			if want := store.KeyOf(tc.body); key != want {
				t.Errorf("PutBody key = %s, want %s", key, want)
			}
			got, err := st.Body("s1", key)
			if err != nil {
				t.Fatalf("Body: %v", err)
			}
			if !bytes.Equal(got, tc.body) {
				t.Fatalf("Body returned %d bytes, want %d equal bytes", len(got), len(tc.body))
			}
			if len(got) > 0 {
				got[0] ^= 0xff // the caller owns the copy
				again, err := st.Body("s1", key)
				if err != nil || !bytes.Equal(again, tc.body) {
					t.Fatalf("Body after modifying a returned body = %v, %v", len(again), err)
				}
			}
		})
	}
}

func testPutCopiesBody(t *testing.T, b Backend) {
	st := b.Open(t)
	body := []byte("original")
	key := mustPut(t, st, "s", body)
	body[0] = 'X'
	if got, err := st.Body("s", key); err != nil || string(got) != "original" {
		t.Fatalf("Body = %q, %v; want %q", got, err, "original")
	}
}

func testDedupe(t *testing.T, b Backend) {
	st := b.Open(t)
	body := RandomBytes(4096, 2)
	var keys []string
	for _, s := range []string{"a", "b", "a", "c"} {
		keys = append(keys, mustPut(t, st, s, body))
	}
	for _, k := range keys[1:] {
		if k != keys[0] {
			t.Fatalf("keys differ: %v", keys)
		}
	}
	for _, s := range []string{"a", "b", "c"} {
		if got, err := st.Body(s, keys[0]); err != nil || !bytes.Equal(got, body) {
			t.Errorf("Body(%s) = %d bytes, %v", s, len(got), err)
		}
	}
}

func testBodyErrors(t *testing.T, b Backend) {
	const ttl = time.Hour
	clk := NewClock()
	st := b.Open(t, store.WithTTL(ttl), store.WithClock(clk.Now))
	key := mustPut(t, st, "a", []byte("secret"))
	unknown := store.KeyOf([]byte("never stored"))
	tests := []struct {
		name    string
		advance time.Duration
		session string
		key     string
		want    error
	}{
		{"owner reads", 0, "a", key, nil},
		{"other session denied", 0, "b", key, store.ErrDenied},
		{"unknown key", 0, "a", unknown, store.ErrNotFound},
		{"unknown key other session", 0, "b", unknown, store.ErrNotFound},
		{"invalid key", 0, "a", "../" + key[3:], store.ErrInvalidKey},
		{"uppercase key", 0, "a", strings.ToUpper(key), store.ErrInvalidKey},
		{"invalid session", 0, "../a", key, store.ErrInvalidSession},
		{"last nanosecond", ttl - time.Nanosecond, "a", key, nil},
		{"expired at ttl", time.Nanosecond, "a", key, store.ErrExpired},
		{"expired other session still denied", 0, "b", key, store.ErrDenied},
		{"expired long after", 1000 * time.Hour, "a", key, store.ErrExpired},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk.Advance(tc.advance)
			got, err := st.Body(tc.session, tc.key)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("Body(%q, %.8s…) error = %v, want %v", tc.session, tc.key, err, tc.want)
			}
			if err != nil && got != nil {
				t.Errorf("Body returned %d bytes with an error", len(got))
			}
		})
	}
}

func testRenewal(t *testing.T, b Backend) {
	const ttl = time.Hour
	clk := NewClock()
	st := b.Open(t, store.WithTTL(ttl), store.WithClock(clk.Now))
	key := mustPut(t, st, "a", []byte("v"))
	clk.Advance(ttl)
	if _, err := st.Body("a", key); !errors.Is(err, store.ErrExpired) {
		t.Fatalf("Body after ttl: %v, want ErrExpired", err)
	}
	mustPut(t, st, "a", []byte("v"))
	clk.Advance(ttl - time.Nanosecond)
	if _, err := st.Body("a", key); err != nil {
		t.Fatalf("Body after renewal: %v", err)
	}
}

// testRenewalNeverShortens renews a grant from a store with a shorter TTL
// (another process's, say): the longer grant stands.
func testRenewalNeverShortens(t *testing.T, b Backend) {
	clk := NewClock()
	st := b.Open(t, store.WithTTL(10*time.Hour), store.WithClock(clk.Now))
	key := mustPut(t, st, "a", []byte("long"))
	st = b.Reopen(t, st, store.WithTTL(time.Hour), store.WithClock(clk.Now))
	mustPut(t, st, "a", []byte("long"))
	clk.Advance(2 * time.Hour)
	if _, err := st.Body("a", key); err != nil {
		t.Fatalf("Body 2 h after a 10 h grant was renewed for 1 h: %v", err)
	}
}

func testNeverExpires(t *testing.T, b Backend) {
	clk := NewClock()
	st := b.Open(t, store.WithTTL(-1), store.WithClock(clk.Now))
	key := mustPut(t, st, "a", []byte("forever"))
	clk.Advance(200 * 365 * 24 * time.Hour)
	if _, err := st.Body("a", key); err != nil {
		t.Fatalf("Body after 200 years: %v", err)
	}
}

func testDefaultTTL(t *testing.T, b Backend) {
	clk := NewClock()
	st := b.Open(t, store.WithClock(clk.Now))
	key := mustPut(t, st, "a", []byte("v"))
	clk.Advance(store.DefaultTTL - time.Nanosecond)
	if _, err := st.Body("a", key); err != nil {
		t.Fatalf("Body just before DefaultTTL: %v", err)
	}
	clk.Advance(time.Nanosecond)
	if _, err := st.Body("a", key); !errors.Is(err, store.ErrExpired) {
		t.Fatalf("Body at DefaultTTL: %v, want ErrExpired", err)
	}
}

func testRecords(t *testing.T, b Backend) {
	key := store.KeyOf([]byte("x"))
	recs := []values.Record{
		{Handle: "r1", Key: key, Kind: "array", Size: 100, Meta: []byte{1, 2, 3}},
		{Handle: "r2"},
		{Handle: "r1", Key: key, Kind: "array", Size: 100, Meta: []byte("renewed metadata")},
		{Handle: strings.Repeat("h", store.MaxHandleLen), Kind: strings.Repeat("k", store.MaxKindLen), Size: 1 << 62, Meta: RandomBytes(20_000, 4)},
	}
	st := b.Open(t)
	if got, err := st.Records("nobody"); got != nil || err != nil {
		t.Fatalf("Records of an unknown session = %v, %v; want nil, nil", got, err)
	}
	for _, r := range recs {
		if err := st.AppendRecord("s", r); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.AppendRecord("s", values.Record{Handle: "r9", Meta: []byte{}}); err != nil {
		t.Fatal(err)
	}
	want := append(append([]values.Record(nil), recs...), values.Record{Handle: "r9"})
	got, err := st.Records("s")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Records (-want +got):\n%s", diff)
	}
	got[0].Meta[0] = 99 // the caller owns the records
	again, _ := st.Records("s")
	if diff := cmp.Diff(want, again); diff != "" {
		t.Errorf("Records after modifying a result (-want +got):\n%s", diff)
	}
	if got, _ := st.Records("other"); got != nil {
		t.Errorf("Records of another session = %v", got)
	}
}

func testAppendRecordInvalid(t *testing.T, b Backend) {
	tests := []struct {
		name string
		rec  values.Record
	}{
		{"empty handle", values.Record{}},
		{"long handle", values.Record{Handle: strings.Repeat("r", store.MaxHandleLen+1)}},
		{"long kind", values.Record{Handle: "r1", Kind: strings.Repeat("k", store.MaxKindLen+1)}},
		{"negative size", values.Record{Handle: "r1", Size: -1}},
		{"large meta", values.Record{Handle: "r1", Meta: make([]byte, store.MaxMetaSize+1)}},
		{"bad key", values.Record{Handle: "r1", Key: "abc"}},
	}
	st := b.Open(t)
	for _, tc := range tests {
		if err := st.AppendRecord("s", tc.rec); !errors.Is(err, store.ErrInvalidRecord) {
			t.Errorf("%s: AppendRecord = %v, want ErrInvalidRecord", tc.name, err)
		}
	}
	if got, err := st.Records("s"); got != nil || err != nil {
		t.Errorf("Records after invalid appends = %v, %v; want nil, nil", got, err)
	}
}

func testInvalidSession(t *testing.T, b Backend) {
	st := b.Open(t)
	key := mustPut(t, st, "ok", []byte("v"))
	for _, session := range []string{"", "../a", "a/b", "a b", strings.Repeat("s", store.MaxSessionLen+1), "é"} {
		if k, err := st.PutBody(session, []byte("v")); !errors.Is(err, store.ErrInvalidSession) || k != "" {
			t.Errorf("PutBody(%q) = %q, %v", session, k, err)
		}
		if _, err := st.Body(session, key); !errors.Is(err, store.ErrInvalidSession) {
			t.Errorf("Body(%q) = %v", session, err)
		}
		if err := st.AppendRecord(session, values.Record{Handle: "r1"}); !errors.Is(err, store.ErrInvalidSession) {
			t.Errorf("AppendRecord(%q) = %v", session, err)
		}
		if _, err := st.Records(session); !errors.Is(err, store.ErrInvalidSession) {
			t.Errorf("Records(%q) = %v", session, err)
		}
	}
}

func testReopen(t *testing.T, b Backend) {
	clk := NewClock()
	st := b.Open(t, store.WithTTL(time.Hour), store.WithClock(clk.Now))
	ka := mustPut(t, st, "a", []byte("alpha"))
	kb := mustPut(t, st, "b", []byte("beta"))
	recs := []values.Record{
		{Handle: "r1", Key: ka, Kind: "text", Size: 5, Meta: []byte("idx")},
		{Handle: "r2", Kind: "null"},
	}
	for _, r := range recs {
		if err := st.AppendRecord("a", r); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(30 * time.Minute)
	kc := mustPut(t, st, "a", []byte("gamma"))

	// A longer TTL on reopen does not extend grants already made.
	st = b.Reopen(t, st, store.WithTTL(100*time.Hour), store.WithClock(clk.Now))
	got, err := st.Records("a")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(recs, got); diff != "" {
		t.Errorf("Records after reopen (-want +got):\n%s", diff)
	}
	check := func(session, key, want string, wantErr error) {
		t.Helper()
		got, err := st.Body(session, key)
		if !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) || string(got) != want {
			t.Errorf("Body(%s, %.8s…) = %q, %v; want %q, %v", session, key, got, err, want, wantErr)
		}
	}
	check("a", ka, "alpha", nil)
	check("b", kb, "beta", nil)
	check("b", ka, "", store.ErrDenied)
	check("a", kb, "", store.ErrDenied)
	clk.Advance(45 * time.Minute) // 75 minutes after the first PutBody calls
	check("a", ka, "", store.ErrExpired)
	check("b", kb, "", store.ErrExpired)
	check("a", kc, "gamma", nil)
}

func testCorrupt(t *testing.T, b Backend) {
	sizes := append([]int{1, 10_000}, b.Sizes...)
	st := b.Open(t)
	for i, n := range sizes {
		body := RandomBytes(n, uint64(300+i))
		key := mustPut(t, st, "s", body)
		b.Corrupt(t, st, key)
		got, err := st.Body("s", key)
		if !errors.Is(err, store.ErrIntegrity) || got != nil {
			t.Errorf("Body of a corrupted %d-byte body = %d bytes, %v; want ErrIntegrity", n, len(got), err)
		}
	}
}

// testPutRepairs stores a body again after it was damaged: PutBody writes
// it again, so that the key it returns reads back.
func testPutRepairs(t *testing.T, b Backend) {
	sizes := append([]int{1, 10_000}, b.Sizes...)
	st := b.Open(t)
	for i, n := range sizes {
		body := RandomBytes(n, uint64(400+i))
		key := mustPut(t, st, "s", body)
		b.Corrupt(t, st, key)
		mustPut(t, st, "s", body)
		if got, err := st.Body("s", key); err != nil || !bytes.Equal(got, body) {
			t.Errorf("Body of a %d-byte body put again after damage = %d bytes, %v", n, len(got), err)
		}
	}
}

func testConcurrent(t *testing.T, b Backend) {
	st := b.Open(t, store.WithTTL(time.Hour))
	shared := RandomBytes(50_000, 6)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			session := fmt.Sprintf("s%d", g)
			for i := range 20 {
				own := RandomBytes(1000+i, uint64(g*100+i))
				for _, body := range [][]byte{shared, own} {
					key, err := st.PutBody(session, body)
					if err != nil {
						t.Error(err)
						return
					}
					if got, err := st.Body(session, key); err != nil || !bytes.Equal(got, body) {
						t.Errorf("Body: %d bytes, %v", len(got), err)
						return
					}
				}
				if err := st.AppendRecord(session, values.Record{Handle: fmt.Sprintf("r%d", i+1), Key: store.KeyOf(own)}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for g := range 8 {
		session := fmt.Sprintf("s%d", g)
		recs, err := st.Records(session)
		if err != nil || len(recs) != 20 {
			t.Fatalf("Records(%s) = %d records, %v; want 20", session, len(recs), err)
		}
		for i, r := range recs {
			if r.Handle != fmt.Sprintf("r%d", i+1) {
				t.Errorf("Records(%s)[%d] = %s, out of order", session, i, r.Handle)
			}
			if _, err := st.Body(session, r.Key); err != nil {
				t.Errorf("Body(%s, %.8s…): %v", session, r.Key, err)
			}
		}
	}
}

// testValuesOpen persists a session of the library through the store and
// reopens it: the handles and their values come back.
func testValuesOpen(t *testing.T, b Backend) {
	st := b.Open(t)
	s, err := values.Open(st, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte(`{"id":1,"name":"a"},`), 500)
	outputs := [][]byte{[]byte(`{"rows":[1,2,3]}`), append(append([]byte("["), big...), `{"id":2}]`...), []byte("plain text\n")}
	var handles []string
	for _, out := range outputs {
		handles = append(handles, s.PutOutput(out))
	}
	st = b.Reopen(t, st)
	again, err := values.Open(st, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range handles {
		v, ok := again.Get(h)
		if !ok {
			t.Fatalf("%s is gone after reopening", h)
		}
		got, err := v.Load()
		if err != nil || !bytes.Equal(got, outputs[i]) {
			t.Errorf("%s after reopening: %d bytes, %v; want %d", h, len(got), err, len(outputs[i]))
		}
	}
	if next := again.PutOutput([]byte("more")); next != "r4" {
		t.Errorf("the reopened session hands out %s next, want r4", next)
	}
}

func testClosed(t *testing.T, b Backend) {
	st := b.Open(t)
	c, ok := st.(io.Closer)
	if !ok {
		t.Fatalf("%T has no Close method", st)
	}
	key := mustPut(t, st, "a", []byte("v"))
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := st.PutBody("a", []byte("v")); !errors.Is(err, store.ErrClosed) {
		t.Errorf("PutBody = %v", err)
	}
	if _, err := st.Body("a", key); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Body = %v", err)
	}
	if err := st.AppendRecord("a", values.Record{Handle: "r1"}); !errors.Is(err, store.ErrClosed) {
		t.Errorf("AppendRecord = %v", err)
	}
	if _, err := st.Records("a"); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Records = %v", err)
	}
}
