package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	values "github.com/agentvalues/values"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// brief is what a test compares of an item.
type brief struct {
	Name   string
	Reason Reason
}

func briefs(items []Item) []brief {
	var out []brief
	for _, it := range items {
		out = append(out, brief{it.Name, it.Reason})
	}
	return out
}

func bodyName(key string) string { return bodiesName + "/" + key }

// cleaner opens a fresh store of each backend as a testStore and a Cleaner.
func cleaner(t *testing.T, be backend, opts ...Option) (testStore, Cleaner) {
	st := be.open(t, opts...)
	return st, st.(Cleaner)
}

func TestPlanApply(t *testing.T) {
	const ttl = time.Hour
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			clk := newClock()
			st, c := cleaner(t, be, WithTTL(ttl), WithClock(clk.Now))
			start := clk.Now()
			kx := mustPut(t, st, "a", []byte("x"))
			kShared := mustPut(t, st, "a", []byte("shared"))
			clk.Advance(30 * time.Minute)
			ky := mustPut(t, st, "b", []byte("y"))
			mustPut(t, st, "b", []byte("shared"))

			// Before any grant runs out nothing is planned.
			p, err := c.Plan(clk.Now())
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Delete) != 0 || p.Retained != 3 {
				t.Fatalf("early plan: delete %v, retained %d; want none, 3", briefs(p.Delete), p.Retained)
			}

			// After a's grants run out, x goes; shared stays for b.
			clk.Advance(40 * time.Minute)
			p, err = c.Plan(clk.Now())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]brief{{bodyName(kx), ReasonExpired}}, briefs(p.Delete)); diff != "" {
				t.Fatalf("plan (-want +got):\n%s", diff)
			}
			if p.Retained != 2 || !p.Now.Equal(clk.Now()) {
				t.Errorf("plan retained %d at %v; want 2 at %v", p.Retained, p.Now, clk.Now())
			}
			r, err := c.Apply(p)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(briefs(p.Delete), briefs(r.Deleted)); diff != "" || len(r.Skipped) != 0 {
				t.Fatalf("apply deleted (-want +got):\n%s\nskipped %v", diff, briefs(r.Skipped))
			}
			if _, err := st.Body("a", kx); !errors.Is(err, ErrExpired) {
				t.Errorf("Body of a deleted expired body = %v, want ErrExpired", err)
			}
			if _, err := st.Body("b", kShared); err != nil {
				t.Errorf("Body of a body still granted to b: %v", err)
			}
			if _, err := st.Body("a", kShared); !errors.Is(err, ErrExpired) {
				t.Errorf("Body of a's expired grant = %v, want ErrExpired", err)
			}
			if _, err := st.Body("b", ky); err != nil {
				t.Errorf("Body of a live body: %v", err)
			}

			// Applying the same plan again finds the body gone.
			r, err = c.Apply(p)
			if err != nil || len(r.Deleted) != 0 || !cmp.Equal([]brief{{bodyName(kx), ReasonGone}}, briefs(r.Skipped)) {
				t.Errorf("second Apply = deleted %v, skipped %v, %v", briefs(r.Deleted), briefs(r.Skipped), err)
			}

			// Storing x again makes it readable again.
			mustPut(t, st, "a", []byte("x"))
			if got, err := st.Body("a", kx); err != nil || string(got) != "x" {
				t.Errorf("Body after storing again = %q, %v", got, err)
			}
			_ = start
		})
	}
}

func TestApplyRaces(t *testing.T) {
	const ttl = time.Hour
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			t.Run("grant renewed", func(t *testing.T) {
				clk := newClock()
				st, c := cleaner(t, be, WithTTL(ttl), WithClock(clk.Now))
				key := mustPut(t, st, "a", []byte("v"))
				clk.Advance(2 * ttl)
				p, err := c.Plan(clk.Now())
				if err != nil || len(p.Delete) != 1 {
					t.Fatalf("Plan = %v, %v", briefs(p.Delete), err)
				}
				mustPut(t, st, "b", []byte("v")) // another session stores it again
				r, err := c.Apply(p)
				if err != nil || len(r.Deleted) != 0 || !cmp.Equal([]brief{{bodyName(key), ReasonReferenced}}, briefs(r.Skipped)) {
					t.Fatalf("Apply = deleted %v, skipped %v, %v", briefs(r.Deleted), briefs(r.Skipped), err)
				}
				if _, err := st.Body("b", key); err != nil {
					t.Fatalf("Body: %v", err)
				}
			})
			t.Run("plan for the future", func(t *testing.T) {
				clk := newClock()
				st, c := cleaner(t, be, WithTTL(ttl), WithClock(clk.Now))
				key := mustPut(t, st, "a", []byte("v"))
				p, err := c.Plan(clk.Now().Add(10 * ttl))
				if err != nil || len(p.Delete) != 1 {
					t.Fatalf("Plan = %v, %v", briefs(p.Delete), err)
				}
				r, err := c.Apply(p)
				if err != nil || len(r.Deleted) != 0 || !cmp.Equal([]brief{{bodyName(key), ReasonReferenced}}, briefs(r.Skipped)) {
					t.Fatalf("Apply = deleted %v, skipped %v, %v", briefs(r.Deleted), briefs(r.Skipped), err)
				}
			})
			t.Run("plan of another store", func(t *testing.T) {
				clk := newClock()
				st1, c1 := cleaner(t, be, WithTTL(ttl), WithClock(clk.Now))
				st2, c2 := cleaner(t, be, WithTTL(ttl), WithClock(clk.Now))
				key := mustPut(t, st1, "a", []byte("v"))
				mustPut(t, st2, "a", []byte("v"))
				clk.Advance(2 * ttl)
				p, _ := c1.Plan(clk.Now())
				r, err := c2.Apply(p)
				if err != nil || len(r.Deleted) != 0 || !cmp.Equal([]brief{{bodyName(key), ReasonNotPlanned}}, briefs(r.Skipped)) {
					t.Fatalf("Apply = deleted %v, skipped %v, %v", briefs(r.Deleted), briefs(r.Skipped), err)
				}
			})
			t.Run("items not made by plan", func(t *testing.T) {
				clk := newClock()
				st, c := cleaner(t, be, WithTTL(ttl), WithClock(clk.Now))
				key := mustPut(t, st, "a", []byte("v"))
				clk.Advance(2 * ttl)
				forged := Plan{Now: clk.Now(), Delete: []Item{
					{Name: bodyName(key), Key: key, Reason: ReasonExpired},
					{Name: "../../etc/passwd", Reason: ReasonAbandonedTemp},
				}}
				r, err := c.Apply(forged)
				if err != nil || len(r.Deleted) != 0 || len(r.Skipped) != 2 || r.Skipped[0].Reason != ReasonNotPlanned || r.Skipped[1].Reason != ReasonNotPlanned {
					t.Fatalf("Apply = deleted %v, skipped %v, %v", briefs(r.Deleted), briefs(r.Skipped), err)
				}
				// Editing a planned item's fields has no effect, and an
				// item removed from Delete is not deleted.
				other := mustPut(t, st, "b", []byte("w"))
				clk.Advance(-2 * ttl)
				third := mustPut(t, st, "c", []byte("third"))
				clk.Advance(4 * ttl)
				p, _ := c.Plan(clk.Now())
				if len(p.Delete) != 3 {
					t.Fatalf("Plan = %v", briefs(p.Delete))
				}
				var edited []Item
				for _, it := range p.Delete {
					if it.Key == key {
						it.Key, it.Name, it.Reason = other, bodyName(other), ReasonForeign
						edited = append(edited, it)
					}
				}
				p.Delete = edited
				r, err = c.Apply(p)
				if err != nil || len(r.Skipped) != 0 || !cmp.Equal([]brief{{bodyName(key), ReasonExpired}}, briefs(r.Deleted)) {
					t.Fatalf("Apply = deleted %v, skipped %v, %v", briefs(r.Deleted), briefs(r.Skipped), err)
				}
				p, _ = c.Plan(clk.Now())
				want := []brief{{bodyName(other), ReasonExpired}, {bodyName(third), ReasonExpired}}
				if diff := cmp.Diff(want, briefs(p.Delete), cmpopts.SortSlices(func(a, b brief) bool { return a.Name < b.Name })); diff != "" {
					t.Fatalf("what is left to delete (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// TestApplyMemoryStoredAgain: a body deleted and stored again after a
// plan is a different body to that plan. (For a Dir, the file-level
// version of this is TestApplyChangedFile.)
func TestApplyMemoryStoredAgain(t *testing.T) {
	const ttl = time.Hour
	clk := newClock()
	m := NewMemory(WithTTL(ttl), WithClock(clk.Now))
	key := mustPut(t, m, "a", []byte("v"))
	clk.Advance(2 * ttl)
	p1, _ := m.Plan(clk.Now())
	p2, _ := m.Plan(clk.Now())
	if r, err := m.Apply(p1); err != nil || len(r.Deleted) != 1 {
		t.Fatalf("Apply = %v, %v", r, err)
	}
	// Stored again with a grant that is already over at the plan's time.
	clk.Advance(-2 * ttl)
	mustPut(t, m, "a", []byte("v"))
	clk.Advance(2 * ttl)
	r, err := m.Apply(p2)
	if err != nil || len(r.Deleted) != 0 || !cmp.Equal([]brief{{bodyName(key), ReasonChanged}}, briefs(r.Skipped)) {
		t.Fatalf("Apply of a stale plan = deleted %v, skipped %v, %v", briefs(r.Deleted), briefs(r.Skipped), err)
	}
}

func TestApplyChangedFile(t *testing.T) {
	const ttl = time.Hour
	body := []byte("0123456789")
	tests := []struct {
		name   string
		change func(t *testing.T, path string)
		want   Reason
	}{
		{"rewritten", func(t *testing.T, path string) {
			writeKeepTime(t, path, []byte("9876543210"), false)
		}, ReasonChanged},
		{"replaced with the same size and time", func(t *testing.T, path string) {
			writeKeepTime(t, path, body, true)
		}, ReasonChanged},
		{"touched", func(t *testing.T, path string) {
			if err := os.Chtimes(path, time.Now(), time.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
		}, ReasonChanged},
		{"mode changed", func(t *testing.T, path string) {
			if err := os.Chmod(path, 0o400); err != nil {
				t.Fatal(err)
			}
		}, ReasonChanged},
		{"replaced with a symlink", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(t.TempDir(), "target"), path); err != nil {
				t.Fatal(err)
			}
		}, ReasonChanged},
		{"removed", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}, ReasonGone},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			dir := t.TempDir()
			d := openDir(t, dir, WithTTL(ttl), WithClock(clk.Now))
			key := mustPut(t, d, "a", body)
			clk.Advance(2 * ttl)
			p, err := d.Plan(clk.Now())
			if err != nil || len(p.Delete) != 1 {
				t.Fatalf("Plan = %v, %v", briefs(p.Delete), err)
			}
			path := filepath.Join(dir, bodiesName, key)
			tc.change(t, path)
			before, _ := os.Lstat(path)
			r, err := d.Apply(p)
			if err != nil || len(r.Deleted) != 0 || !cmp.Equal([]brief{{bodyName(key), tc.want}}, briefs(r.Skipped)) {
				t.Fatalf("Apply = deleted %v, skipped %v, %v", briefs(r.Deleted), briefs(r.Skipped), err)
			}
			if after, _ := os.Lstat(path); (before == nil) != (after == nil) || before != nil && !os.SameFile(before, after) {
				t.Fatal("Apply touched a changed file")
			}
		})
	}
}

// writeKeepTime rewrites path with data and restores its modification
// time; with replace it writes a new file and renames it over path.
func writeKeepTime(t *testing.T, path string, data []byte, replace bool) {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	target := path
	if replace {
		target = path + ".new"
	}
	if err := os.WriteFile(target, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(target, info.ModTime(), info.ModTime()); err != nil {
		t.Fatal(err)
	}
	if replace {
		if err := os.Rename(target, path); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPlanFailsClosed(t *testing.T) {
	clk := newClock()
	dir := t.TempDir()
	d := openDir(t, dir, WithTTL(time.Hour), WithClock(clk.Now))
	key := mustPut(t, d, "a", []byte("expired soon"))
	live := mustPut(t, d, "b", []byte("live"))
	_ = live
	if err := d.AppendRecord("a", values.Record{Handle: "r1", Key: key}); err != nil {
		t.Fatal(err)
	}

	outsideDir := t.TempDir()
	outside := filepath.Join(outsideDir, "precious")
	if err := os.WriteFile(outside, []byte("do not delete"), 0o600); err != nil {
		t.Fatal(err)
	}
	orphan := KeyOf([]byte("orphan"))
	sdir, _ := sessionPath(dir, "a")
	bodies := filepath.Join(dir, bodiesName)
	var (
		file    = func(path string) error { return os.WriteFile(path, []byte("foreign"), 0o600) }
		symlink = func(path string) error { return os.Symlink(outside, path) }
		mkdir   = func(path string) error { return os.Mkdir(path, 0o700) }
		dirlink = func(path string) error { return os.Symlink(outsideDir, path) }
	)
	setup := []struct {
		path   string
		make   func(string) error
		delete bool // Plan lists it for deletion; everything else it keeps
		reason Reason
	}{
		{filepath.Join(dir, "notes.txt"), file, false, ReasonForeign},
		{filepath.Join(dir, ".tmp-123"), file, true, ReasonAbandonedTemp},
		{filepath.Join(dir, ".tmp-link"), symlink, false, ReasonSymlink},
		{filepath.Join(dir, "elsewhere"), dirlink, false, ReasonSymlink},
		{filepath.Join(bodies, "notes.txt"), file, false, ReasonForeign},
		{filepath.Join(bodies, orphan), func(p string) error { return os.WriteFile(p, []byte("orphan"), 0o600) }, true, ReasonUnreferenced},
		{filepath.Join(bodies, "ORPHAN"), file, false, ReasonForeign},
		{filepath.Join(bodies, KeyOf([]byte("upper"))[:KeyLen-1]+"A"), file, false, ReasonForeign},
		{filepath.Join(bodies, KeyOf([]byte("link"))), symlink, false, ReasonSymlink},
		{filepath.Join(bodies, KeyOf([]byte("dir"))), mkdir, false, ReasonNotRegular},
		{filepath.Join(bodies, ".tmp-456"), file, true, ReasonAbandonedTemp},
		{filepath.Join(bodies, ".tmp-dir"), mkdir, false, ReasonForeign},
		{filepath.Join(bodies, ".tmp-link"), symlink, false, ReasonSymlink},
		{filepath.Join(dir, sessionsName, "notes.txt"), file, false, ReasonForeign},
		{filepath.Join(dir, sessionsName, KeyOf([]byte("s"))), file, false, ReasonNotRegular},
		{filepath.Join(dir, sessionsName, KeyOf([]byte("l"))), dirlink, false, ReasonSymlink},
		{filepath.Join(sdir, "notes.txt"), file, false, ReasonForeign},
		{filepath.Join(sdir, ".tmp-789"), file, false, ReasonForeign},
	}
	var wantDelete, wantKeep []brief
	for _, s := range setup {
		if err := s.make(s.path); err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, s.path)
		b := brief{filepath.ToSlash(rel), s.reason}
		if s.delete {
			wantDelete = append(wantDelete, b)
		} else {
			wantKeep = append(wantKeep, b)
		}
	}
	clk.Advance(2 * time.Hour)
	mustPut(t, d, "b", []byte("live"))
	wantDelete = append(wantDelete, brief{bodyName(key), ReasonExpired})

	p, err := d.Plan(clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	sortBriefs := cmpopts.SortSlices(func(a, b brief) bool { return a.Name < b.Name })
	if diff := cmp.Diff(wantDelete, briefs(p.Delete), sortBriefs); diff != "" {
		t.Errorf("plan delete (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantKeep, briefs(p.Keep), sortBriefs); diff != "" {
		t.Errorf("plan keep (-want +got):\n%s", diff)
	}
	if p.Retained != 1 {
		t.Errorf("plan retained %d, want 1", p.Retained)
	}
	r, err := d.Apply(p)
	if err != nil || len(r.Skipped) != 0 {
		t.Fatalf("Apply: skipped %v, %v", briefs(r.Skipped), err)
	}
	for _, s := range setup {
		_, err := os.Lstat(s.path)
		if s.delete != errors.Is(err, os.ErrNotExist) {
			t.Errorf("after Apply %s: %v (planned for deletion: %v)", s.path, err, s.delete)
		}
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != "do not delete" {
		t.Errorf("file outside the store: %q, %v", b, err)
	}
	// The store still works, and what it owns is intact.
	if got, err := d.Body("b", live); err != nil || string(got) != "live" {
		t.Errorf("Body of a live body = %q, %v", got, err)
	}
	if recs, err := d.Records("a"); err != nil || len(recs) != 1 {
		t.Errorf("Records = %v, %v", recs, err)
	}
	// A second plan finds only what it refuses to touch.
	p, err = d.Plan(clk.Now())
	if err != nil || len(p.Delete) != 0 {
		t.Errorf("second plan deletes %v, %v", briefs(p.Delete), err)
	}
}

func TestPlanInUse(t *testing.T) {
	clk := newClock()
	dir := t.TempDir()
	d := openDir(t, dir, WithTTL(time.Hour), WithClock(clk.Now))
	key := mustPut(t, d, "a", []byte("v"))
	clk.Advance(2 * time.Hour)

	// A PutBody of key holds its lock while it writes the body and the grant;
	// a temp file being written is registered when it is created.
	unlock := d.lockKey(key)
	d.mu.Lock()
	tmp, err := os.CreateTemp(d.bodies, TempPrefix+"*")
	if err != nil {
		t.Fatal(err)
	}
	tmp.Close()
	tmpName := filepath.Base(tmp.Name())
	d.temps[tmpName] = true
	d.mu.Unlock()

	p, err := d.Plan(clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	want := []brief{{bodyName(tmpName), ReasonInUse}, {bodyName(key), ReasonInUse}}
	if diff := cmp.Diff(want, briefs(p.Keep)); diff != "" || len(p.Delete) != 0 {
		t.Errorf("plan keep (-want +got):\n%s\ndelete %v", diff, briefs(p.Delete))
	}

	// Planned while idle, applied while busy: the temp file is skipped;
	// the body waits for the key's lock and is then checked again.
	unlock()
	d.mu.Lock()
	delete(d.temps, tmpName)
	d.mu.Unlock()
	p, err = d.Plan(clk.Now())
	if err != nil || len(p.Delete) != 2 {
		t.Fatalf("idle plan = %v, %v", briefs(p.Delete), err)
	}
	d.mu.Lock()
	d.temps[tmpName] = true
	d.mu.Unlock()
	unlock = d.lockKey(key)
	done := make(chan Report)
	go func() {
		r, err := d.Apply(p)
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	mustPutLocked(t, d, "b", key, 1) // what a PutBody does while Apply waits
	unlock()
	r := <-done
	want = []brief{{bodyName(tmpName), ReasonInUse}, {bodyName(key), ReasonReferenced}}
	if diff := cmp.Diff(want, briefs(r.Skipped)); diff != "" || len(r.Deleted) != 0 {
		t.Errorf("apply skipped (-want +got):\n%s\ndeleted %v", diff, briefs(r.Deleted))
	}
	if got, err := d.Body("b", key); err != nil || string(got) != "v" {
		t.Errorf("Body = %q, %v", got, err)
	}
}

// mustPutLocked does the grant half of a PutBody of key for session, whose
// body of size bytes exists, while the test holds the key's lock.
func mustPutLocked(t *testing.T, d *Dir, session, key string, size int) {
	t.Helper()
	if err := d.addGrant(d.session(session), key, d.cfg.newGrant(d.cfg.now(), size)); err != nil {
		t.Fatal(err)
	}
}

func TestApplyMemoryNeverFails(t *testing.T) {
	m := NewMemory()
	if r, err := m.Apply(Plan{}); err != nil || r.Deleted != nil || r.Skipped != nil {
		t.Errorf("Apply of an empty plan = %v, %v", r, err)
	}
}

func TestReasonString(t *testing.T) {
	seen := map[string]bool{}
	for r := ReasonExpired; r <= ReasonFailed; r++ {
		s := r.String()
		if s == "" || seen[s] || bytes.ContainsAny([]byte(s), "( ") {
			t.Errorf("Reason(%d).String() = %q", int(r), s)
		}
		seen[s] = true
	}
	if got := Reason(0).String(); got != "reason(0)" {
		t.Errorf("Reason(0).String() = %q", got)
	}
	if got := (ReasonFailed + 1).String(); got != "reason(13)" {
		t.Errorf("String of an unknown reason = %q", got)
	}
}
