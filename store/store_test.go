package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	values "github.com/agentvalues/values"
)

// clock is a settable clock for WithClock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// testStore is what every backend of this package is: a values.Durable
// that can be closed.
type testStore interface {
	values.Durable
	Close() error
}

// backend opens a fresh store of one kind.
type backend struct {
	name string
	open func(t *testing.T, opts ...Option) testStore
}

var backends = []backend{
	{"memory", func(t *testing.T, opts ...Option) testStore {
		m := NewMemory(opts...)
		t.Cleanup(func() { m.Close() })
		return m
	}},
	{"dir", func(t *testing.T, opts ...Option) testStore {
		return openDir(t, t.TempDir(), opts...)
	}},
}

func openDir(t testing.TB, dir string, opts ...Option) *Dir {
	t.Helper()
	d, err := OpenDir(dir, opts...)
	if err != nil {
		t.Fatalf("OpenDir: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func mustPut(t testing.TB, st values.Durable, session string, body []byte) string {
	t.Helper()
	key, err := st.PutBody(session, body)
	if err != nil {
		t.Fatalf("PutBody(%q): %v", session, err)
	}
	return key
}

func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// fill fills b with bytes derived from seed.
func fill(b []byte, seed string) {
	x := uint64(len(seed)) | 1
	for _, c := range []byte(seed) {
		x = x*0x100000001b3 ^ uint64(c)
	}
	for i := 0; i+8 <= len(b); i += 8 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		binary.LittleEndian.PutUint64(b[i:], x)
	}
}

func TestDedupe(t *testing.T) {
	clk := newClock()
	dir := t.TempDir()
	d := openDir(t, dir, WithClock(clk.Now))
	body := randomBytes(4096, 2)
	var keys []string
	for _, s := range []string{"a", "b", "a", "c", "a"} {
		keys = append(keys, mustPut(t, d, s, body))
	}
	for _, k := range keys[1:] {
		if k != keys[0] {
			t.Fatalf("keys differ: %v", keys)
		}
	}
	names := listDir(t, filepath.Join(dir, bodiesName))
	if diff := cmp.Diff([]string{keys[0]}, names); diff != "" {
		t.Errorf("bodies/ (-want +got):\n%s", diff)
	}
	// Same clock, same expiry: repeated PutBody calls by "a" recorded one grant.
	if got := grantRecords(t, dir, "a"); got != 1 {
		t.Errorf("session a has %d grant records, want 1", got)
	}
	clk.Advance(time.Hour) // a renewal extends the grant and is recorded
	mustPut(t, d, "a", body)
	if got := grantRecords(t, dir, "a"); got != 2 {
		t.Errorf("after a renewal session a has %d grant records, want 2", got)
	}

	m := NewMemory()
	for _, s := range []string{"a", "b", "a"} {
		mustPut(t, m, s, body)
	}
	if len(m.bodies) != 1 {
		t.Errorf("memory holds %d bodies, want 1", len(m.bodies))
	}
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func grantRecords(t *testing.T, root, session string) int {
	t.Helper()
	dir, err := sessionPath(root, session)
	if err != nil {
		t.Fatal(err)
	}
	sdir, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer sdir.Close()
	st, err := readLog(sdir, grantsLog, logGrants)
	if err != nil {
		t.Fatal(err)
	}
	return len(st.payloads)
}

func TestOptions(t *testing.T) {
	clk := newClock()
	tests := []struct {
		name    string
		opts    []Option
		wantTTL time.Duration
		wantNow time.Time // zero: time.Now
	}{
		{"none", nil, DefaultTTL, time.Time{}},
		{"ttl 0 is the default", []Option{WithTTL(0)}, DefaultTTL, time.Time{}},
		{"negative ttl", []Option{WithTTL(-1)}, -1, time.Time{}},
		{"ttl", []Option{WithTTL(time.Hour)}, time.Hour, time.Time{}},
		{"later option wins", []Option{WithTTL(time.Hour), WithTTL(time.Minute)}, time.Minute, time.Time{}},
		{"later 0 restores the default", []Option{WithTTL(time.Hour), WithTTL(0)}, DefaultTTL, time.Time{}},
		{"clock", []Option{WithClock(clk.Now)}, DefaultTTL, clk.Now()},
		{"nil clock is time.Now", []Option{WithClock(clk.Now), WithClock(nil)}, DefaultTTL, time.Time{}},
		{"nil option ignored", []Option{nil, WithTTL(time.Hour), nil}, time.Hour, time.Time{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newConfig(tc.opts)
			if c.ttl != tc.wantTTL {
				t.Errorf("ttl = %v, want %v", c.ttl, tc.wantTTL)
			}
			got := c.now()
			if tc.wantNow.IsZero() {
				if d := time.Since(got); d < 0 || d > time.Minute {
					t.Errorf("now() = %v, want about time.Now()", got)
				}
			} else if !got.Equal(tc.wantNow) {
				t.Errorf("now() = %v, want %v", got, tc.wantNow)
			}
		})
	}
}

func TestTamper(t *testing.T) {
	body := randomBytes(10_000, 3)
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.WriteFile(outside, body, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		tamper func(path string) error
		repair bool // a later PutBody of the same body restores it
	}{
		{"flip a byte", func(p string) error {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b[len(b)/2] ^= 1
			return os.WriteFile(p, b, 0o600)
		}, true},
		{"truncate", func(p string) error { return os.Truncate(p, int64(len(body)-1)) }, true},
		{"empty", func(p string) error { return os.Truncate(p, 0) }, true},
		{"extend", func(p string) error {
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.Write([]byte{0})
			return err
		}, true},
		{"symlink to the right bytes", func(p string) error {
			if err := os.Remove(p); err != nil {
				return err
			}
			return os.Symlink(outside, p)
		}, true},
		{"missing", os.Remove, true},
		{"directory", func(p string) error {
			if err := os.Remove(p); err != nil {
				return err
			}
			return os.Mkdir(p, 0o700)
		}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			d := openDir(t, dir)
			key := mustPut(t, d, "a", body)
			path := filepath.Join(dir, bodiesName, key)
			if err := tc.tamper(path); err != nil {
				t.Fatal(err)
			}
			got, err := d.Body("a", key)
			if !errors.Is(err, ErrIntegrity) || got != nil {
				t.Fatalf("Body after tampering = %d bytes, %v; want nil, ErrIntegrity", len(got), err)
			}
			_, err = d.PutBody("a", body)
			if !tc.repair {
				if err == nil {
					t.Fatal("PutBody over a directory succeeded")
				}
				return
			}
			if err != nil {
				t.Fatalf("PutBody to repair: %v", err)
			}
			if got, err := d.Body("a", key); err != nil || !bytes.Equal(got, body) {
				t.Fatalf("Body after repair: %d bytes, %v", len(got), err)
			}
			if b, err := os.ReadFile(outside); err != nil || !bytes.Equal(b, body) {
				t.Fatalf("file outside the store changed: %v", err)
			}
		})
	}
}

var badKeys = []string{
	"",
	"..",
	"../x",
	"/etc/passwd",
	"bodies/../../etc/passwd",
	strings.Repeat("a", KeyLen-1),
	strings.Repeat("a", KeyLen+1),
	strings.Repeat("A", KeyLen),
	strings.ToUpper(KeyOf(nil)),
	KeyOf(nil)[:KeyLen-1] + "/",
	KeyOf(nil)[:KeyLen-1] + "\x00",
	"../" + KeyOf(nil)[3:],
	"./" + KeyOf(nil)[2:],
	strings.Repeat("g", KeyLen),
	" " + KeyOf(nil)[1:],
}

var badSessions = []string{
	"",
	".",
	"..",
	"../x",
	"a/b",
	"/abs",
	`a\b`,
	"a b",
	"a\x00",
	"é",
	"C:",
	strings.Repeat("x", MaxSessionLen+1),
}

func TestTraversal(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			st := be.open(t)
			for _, key := range badKeys {
				if _, err := st.Body("a", key); !errors.Is(err, ErrInvalidKey) {
					t.Errorf("Body(a, %q) = %v, want ErrInvalidKey", key, err)
				}
				if err := st.AppendRecord("a", values.Record{Handle: "r1", Key: key}); key != "" && !errors.Is(err, ErrInvalidRecord) {
					t.Errorf("AppendRecord with key %q = %v, want ErrInvalidRecord", key, err)
				}
			}
			key := mustPut(t, st, "a", []byte("v"))
			for _, s := range badSessions {
				if _, err := st.PutBody(s, []byte("v")); !errors.Is(err, ErrInvalidSession) {
					t.Errorf("PutBody(%q) = %v, want ErrInvalidSession", s, err)
				}
				if _, err := st.Body(s, key); !errors.Is(err, ErrInvalidSession) {
					t.Errorf("Body(%q) = %v, want ErrInvalidSession", s, err)
				}
				if err := st.AppendRecord(s, values.Record{Handle: "r1"}); !errors.Is(err, ErrInvalidSession) {
					t.Errorf("AppendRecord(%q) = %v, want ErrInvalidSession", s, err)
				}
				if _, err := st.Records(s); !errors.Is(err, ErrInvalidSession) {
					t.Errorf("Records(%q) = %v, want ErrInvalidSession", s, err)
				}
			}
		})
	}
	// Nothing was created next to the store directory, and only session
	// "a" inside it.
	parent := t.TempDir()
	dir := filepath.Join(parent, "store")
	d := openDir(t, dir)
	mustPut(t, d, "a", []byte("v"))
	for _, s := range badSessions {
		d.PutBody(s, []byte("v"))
		d.AppendRecord(s, values.Record{Handle: "r1"})
	}
	for _, key := range badKeys {
		d.Body("a", key)
		d.AppendRecord("a", values.Record{Handle: "r1", Key: key})
	}
	if diff := cmp.Diff([]string{"store"}, listDir(t, parent)); diff != "" {
		t.Errorf("parent directory (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{sessionName("a")}, listDir(t, filepath.Join(dir, sessionsName))); diff != "" {
		t.Errorf("sessions/ (-want +got):\n%s", diff)
	}
}

// handleLog returns the path of the handle log of session in the store at
// root.
func handleLog(t testing.TB, root, session string) string {
	t.Helper()
	dir, err := sessionPath(root, session)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, handlesLog)
}

func TestRecordsTornTail(t *testing.T) {
	dir := t.TempDir()
	d := openDir(t, dir)
	recs := []values.Record{
		{Handle: "r1", Kind: "text", Size: 1, Meta: []byte("one")},
		{Handle: "r2", Kind: "text", Size: 2, Meta: []byte("two")},
		{Handle: "r3", Kind: "text", Size: 3, Meta: []byte("three")},
	}
	for _, r := range recs[:2] {
		if err := d.AppendRecord("s", r); err != nil {
			t.Fatal(err)
		}
	}
	path := handleLog(t, dir, "s")
	intact, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.AppendRecord("s", recs[2]); err != nil {
		t.Fatal(err)
	}
	full, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	extra := values.Record{Handle: "r4", Kind: "bool", Size: 4}

	tails := map[string][]byte{
		"zeros":   make([]byte, 100),
		"garbage": randomBytes(37, 5),
		"magic":   []byte(recMagic + "\xff\xff"),
	}
	for cut := len(intact) + 1; cut < len(full); cut++ {
		tails["cut at "+strings.Repeat("+", cut-len(intact))] = full[len(intact):cut]
	}
	// A damaged tail, torn or damaged after the fact, is one lost record
	// (see log.go): it reads as such, an append writes a lost record in
	// its place, and the loss survives any number of reopens.
	lost := values.Record{}
	for name, tail := range tails {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(path, append(append([]byte(nil), intact...), tail...), 0o600); err != nil {
				t.Fatal(err)
			}
			d := openDir(t, dir)
			got, err := d.Records("s")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(append(recs[:2:2], lost), got); diff != "" {
				t.Fatalf("Records with a damaged tail (-want +got):\n%s", diff)
			}
			if err := d.AppendRecord("s", extra); err != nil {
				t.Fatal(err)
			}
			want := append(recs[:2:2], lost, extra)
			got, err = d.Records("s")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("Records after appending past a damaged tail (-want +got):\n%s", diff)
			}
			d.Close()
			wantLog := appendRecord(appendRecord(append([]byte(nil), intact...), lostPayload), encodeHandle(extra))
			if b, _ := os.ReadFile(path); !bytes.Equal(b, wantLog) {
				t.Fatalf("log after the append is %x, want %x", b, wantLog)
			}
			d = openDir(t, dir)
			if got, err := d.Records("s"); err != nil || !cmp.Equal(want, got) {
				t.Fatalf("Records after reopening = %v, %v; want %v", got, err, want)
			}
			d.Close()
		})
	}

	t.Run("torn header", func(t *testing.T) {
		if err := os.WriteFile(path, full[:5], 0o600); err != nil {
			t.Fatal(err)
		}
		d := openDir(t, dir)
		if got, err := d.Records("s"); err != nil || !cmp.Equal([]values.Record{lost}, got) {
			t.Fatalf("Records with a torn header = %v, %v; want one lost record", got, err)
		}
		if err := d.AppendRecord("s", extra); err != nil {
			t.Fatal(err)
		}
		if got, err := d.Records("s"); err != nil || !cmp.Equal([]values.Record{lost, extra}, got) {
			t.Fatalf("Records = %v, %v; want [lost r4]", got, err)
		}
		d.Close()
	})

	// The limit: a cut at a record boundary leaves an intact, shorter log.
	t.Run("cut at a record boundary", func(t *testing.T) {
		if err := os.WriteFile(path, intact, 0o600); err != nil {
			t.Fatal(err)
		}
		d := openDir(t, dir)
		if got, err := d.Records("s"); err != nil || !cmp.Equal(recs[:2], got) {
			t.Fatalf("Records = %v, %v; want r1 r2", got, err)
		}
		d.Close()
	})

	t.Run("empty log", func(t *testing.T) {
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		d := openDir(t, dir)
		if got, err := d.Records("s"); got != nil || err != nil {
			t.Fatalf("Records with an empty log = %v, %v; want nil, nil", got, err)
		}
		d.Close()
	})

	t.Run("damage before an intact record", func(t *testing.T) {
		damaged := append([]byte(nil), full...)
		damaged[len(intact)-2] ^= 1 // inside r2, followed by r3
		if err := os.WriteFile(path, damaged, 0o600); err != nil {
			t.Fatal(err)
		}
		d := openDir(t, dir)
		if got, err := d.Records("s"); !errors.Is(err, ErrIntegrity) || got != nil {
			t.Fatalf("Records = %v, %v; want nil, ErrIntegrity", got, err)
		}
		if err := d.AppendRecord("s", extra); !errors.Is(err, ErrIntegrity) {
			t.Fatalf("AppendRecord to a damaged log = %v, want ErrIntegrity", err)
		}
		if b, _ := os.ReadFile(path); !bytes.Equal(b, damaged) {
			t.Fatal("a damaged log was modified")
		}
		d.Close()
	})
}

func TestGrantLogDamage(t *testing.T) {
	clk := newClock()
	dir := t.TempDir()
	d := openDir(t, dir, WithClock(clk.Now))
	ka := mustPut(t, d, "a", []byte("one"))
	clk.Advance(time.Second)
	kb := mustPut(t, d, "a", []byte("two"))
	kOther := mustPut(t, d, "b", []byte("other"))
	d.Close()
	sdir, _ := sessionPath(dir, "a")
	path := filepath.Join(sdir, grantsLog)
	full, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("torn tail", func(t *testing.T) {
		if err := os.WriteFile(path, full[:len(full)-3], 0o600); err != nil {
			t.Fatal(err)
		}
		d := openDir(t, dir, WithClock(clk.Now))
		if _, err := d.Body("a", ka); err != nil {
			t.Errorf("Body of the intact grant: %v", err)
		}
		// The lost grant may have been on any key: the session is told
		// so, not that it never stored one.
		if _, err := d.Body("a", kb); !errors.Is(err, ErrIntegrity) {
			t.Errorf("Body of the torn grant = %v, want ErrIntegrity", err)
		}
		if _, err := d.Body("a", kOther); !errors.Is(err, ErrIntegrity) {
			t.Errorf("Body of another session's key = %v, want ErrIntegrity", err)
		}
		if _, err := d.Body("b", ka); !errors.Is(err, ErrDenied) {
			t.Errorf("Body from an intact session = %v, want ErrDenied", err)
		}
		mustPut(t, d, "a", []byte("two")) // grants again past the torn tail
		d.Close()
		d = openDir(t, dir, WithClock(clk.Now))
		if _, err := d.Body("a", kb); err != nil {
			t.Errorf("Body after re-granting: %v", err)
		}
		if _, err := d.Body("a", KeyOf([]byte("never stored"))); !errors.Is(err, ErrIntegrity) {
			t.Errorf("Body of an unknown key after the loss was recorded = %v, want ErrIntegrity", err)
		}
		d.Close()
	})

	t.Run("damage before an intact record", func(t *testing.T) {
		damaged := append([]byte(nil), full...)
		damaged[len(damaged)-70] ^= 1 // inside the first grant, before the second
		if err := os.WriteFile(path, damaged, 0o600); err != nil {
			t.Fatal(err)
		}
		d := openDir(t, dir, WithClock(clk.Now))
		if _, err := d.Body("a", ka); !errors.Is(err, ErrIntegrity) {
			t.Errorf("Body from the damaged session = %v, want ErrIntegrity", err)
		}
		if _, err := d.PutBody("a", []byte("three")); !errors.Is(err, ErrIntegrity) {
			t.Errorf("PutBody to the damaged session = %v, want ErrIntegrity", err)
		}
		if _, err := d.Plan(clk.Now()); !errors.Is(err, ErrIntegrity) {
			t.Errorf("Plan with a damaged session = %v, want ErrIntegrity", err)
		}
		if _, err := d.Body("b", kOther); err != nil {
			t.Errorf("Body from an intact session: %v", err)
		}
		if b, _ := os.ReadFile(path); !bytes.Equal(b, damaged) {
			t.Error("a damaged log was modified")
		}
		d.Close()
	})

	t.Run("log of another session", func(t *testing.T) {
		bdir, _ := sessionPath(dir, "b")
		if err := os.WriteFile(path, full, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(bdir, grantsLog), full, 0o600); err != nil {
			t.Fatal(err)
		}
		d := openDir(t, dir, WithClock(clk.Now))
		if _, err := d.Body("b", ka); !errors.Is(err, ErrIntegrity) {
			t.Errorf("Body through a copied log = %v, want ErrIntegrity", err)
		}
		if _, err := d.Body("a", ka); err != nil {
			t.Errorf("Body from the real session: %v", err)
		}
		d.Close()
	})
}

func TestLocked(t *testing.T) {
	dir := t.TempDir()
	d := openDir(t, dir)
	if _, err := OpenDir(dir); !errors.Is(err, ErrLocked) {
		t.Fatalf("second OpenDir = %v, want ErrLocked", err)
	}
	d.Close()
	d2 := openDir(t, dir)
	d2.Close()
}

func TestOpenDirRefuses(t *testing.T) {
	tests := []struct {
		name  string
		setup func(dir string) error
	}{
		{"other format", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, formatName), []byte("something else\n"), 0o600)
		}},
		{"bodies is a symlink", func(dir string) error {
			return os.Symlink(os.TempDir(), filepath.Join(dir, bodiesName))
		}},
		{"sessions is a file", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, sessionsName), nil, 0o600)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := tc.setup(dir); err != nil {
				t.Fatal(err)
			}
			if d, err := OpenDir(dir); err == nil {
				d.Close()
				t.Fatal("OpenDir succeeded")
			}
			// The lock was released: fixing the problem lets it open.
			for _, n := range []string{formatName, bodiesName, sessionsName} {
				os.Remove(filepath.Join(dir, n))
			}
			openDir(t, dir).Close()
		})
	}
	if _, err := OpenDir(""); err == nil {
		t.Error(`OpenDir("") succeeded`)
	}
}

func TestClosed(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			st := be.open(t)
			key := mustPut(t, st, "a", []byte("v"))
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			if err := st.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			if _, err := st.PutBody("a", []byte("v")); !errors.Is(err, ErrClosed) {
				t.Errorf("PutBody = %v", err)
			}
			if _, err := st.Body("a", key); !errors.Is(err, ErrClosed) {
				t.Errorf("Body = %v", err)
			}
			if err := st.AppendRecord("a", values.Record{Handle: "r1"}); !errors.Is(err, ErrClosed) {
				t.Errorf("AppendRecord = %v", err)
			}
			if _, err := st.Records("a"); !errors.Is(err, ErrClosed) {
				t.Errorf("Records = %v", err)
			}
			c := st.(Cleaner)
			if _, err := c.Plan(time.Now()); !errors.Is(err, ErrClosed) {
				t.Errorf("Plan = %v", err)
			}
			if _, err := c.Apply(Plan{}); !errors.Is(err, ErrClosed) {
				t.Errorf("Apply = %v", err)
			}
		})
	}
}

func TestPermissions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	d := openDir(t, dir)
	key := mustPut(t, d, "a", []byte("v"))
	if err := d.AppendRecord("a", values.Record{Handle: "r1", Key: key}); err != nil {
		t.Fatal(err)
	}
	sdir, _ := sessionPath(dir, "a")
	want := map[string]os.FileMode{
		dir:                                 0o700 | os.ModeDir,
		filepath.Join(dir, bodiesName):      0o700 | os.ModeDir,
		filepath.Join(dir, sessionsName):    0o700 | os.ModeDir,
		sdir:                                0o700 | os.ModeDir,
		filepath.Join(dir, formatName):      0o600,
		filepath.Join(dir, lockName):        0o600,
		filepath.Join(dir, bodiesName, key): 0o600,
		filepath.Join(sdir, grantsLog):      0o600,
		filepath.Join(sdir, handlesLog):     0o600,
	}
	for path, mode := range want {
		info, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode() != mode {
			t.Errorf("%s has mode %s, want %s", path, info.Mode(), mode)
		}
	}
}

func TestConcurrent(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			clk := newClock()
			st := be.open(t, WithTTL(time.Hour), WithClock(clk.Now))
			shared := randomBytes(50_000, 6)
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Go(func() {
					session := "s" + string(rune('0'+g))
					for i := range 20 {
						own := randomBytes(1000+i, uint64(g*100+i))
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
						if err := st.AppendRecord(session, values.Record{Handle: "r" + string(rune('1'+i%9)), Key: KeyOf(own)}); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Go(func() { // cleanups racing the writers delete nothing live
				c := st.(Cleaner)
				for range 20 {
					p, err := c.Plan(clk.Now())
					if err != nil {
						t.Error(err)
						return
					}
					r, err := c.Apply(p)
					if err != nil {
						t.Error(err)
						return
					}
					if len(r.Deleted) > 0 {
						t.Errorf("Apply deleted %v while every body is live", r.Deleted)
					}
				}
			})
			wg.Wait()
			for g := range 8 {
				session := "s" + string(rune('0'+g))
				recs, err := st.Records(session)
				if err != nil || len(recs) != 20 {
					t.Fatalf("Records(%s) = %d records, %v; want 20", session, len(recs), err)
				}
				for _, r := range recs {
					if _, err := st.Body(session, r.Key); err != nil {
						t.Errorf("Body(%s, %.8s…): %v", session, r.Key, err)
					}
				}
			}
		})
	}
}
