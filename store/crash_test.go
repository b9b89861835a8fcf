//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/internal/testkit"
)

// crashEnv names the store directory when the test binary runs as the
// child of TestCrash.
const crashEnv = "STORE_TEST_CRASH_DIR"

const crashSession = "crash"

// TestCrash kills, with SIGKILL, a child process that stores large bodies
// in a loop, at a moment when a body is half written, and then checks the
// directory: every key present is whole and verifies, every handle the
// child recorded reads back, temporary files are never served, and a
// cleanup removes them. SIGKILL loses what the process had not yet
// written, not what the kernel holds, so this tests process crashes, not
// power loss.
func TestCrash(t *testing.T) {
	if dir := os.Getenv(crashEnv); dir != "" {
		crashChild(t, dir)
		return
	}
	dir := t.TempDir()
	stored := map[string]bool{} // keys the children reported as stored
	debris := 0
	for round := range 3 {
		for _, key := range crashRound(t, dir, round) {
			stored[key] = true
		}
		debris = verifyAfterCrash(t, dir, stored) // temp files add up over rounds
	}
	if debris == 0 {
		t.Fatal("no kill left a temporary file behind; the test did not exercise a torn write")
	}

	d := openDir(t, dir)
	p, err := d.Plan(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	temps := 0
	for _, it := range p.Delete {
		switch it.Reason {
		case ReasonAbandonedTemp:
			temps++
		case ReasonUnreferenced: // killed between the rename and the grant
			if stored[it.Key] {
				t.Errorf("a reported key is planned as unreferenced: %s", it.Name)
			}
		default:
			t.Errorf("unexpected plan item %s (%s)", it.Name, it.Reason)
		}
	}
	if temps != debris {
		t.Errorf("plan lists %d abandoned temp files, found %d after the kills", temps, debris)
	}
	if len(p.Keep) != 0 {
		t.Errorf("plan keeps %v", briefs(p.Keep))
	}
	r, err := d.Apply(p)
	if err != nil || len(r.Skipped) != 0 {
		t.Fatalf("Apply: skipped %v, %v", briefs(r.Skipped), err)
	}
	for _, name := range listDir(t, filepath.Join(dir, bodiesName)) {
		if strings.HasPrefix(name, TempPrefix) {
			t.Errorf("temp file %s survived the cleanup", name)
		}
	}
	for key := range stored {
		if _, err := d.Body(crashSession, key); err != nil {
			t.Errorf("after cleanup, Body(%.8s…): %v", key, err)
		}
	}
}

// crashRound runs one child until it is writing a body, kills it and
// returns the keys it reported as stored.
func crashRound(t *testing.T, dir string, round int) []string {
	t.Helper()
	child := testkit.StartChild(t, testkit.ChildCommand("TestCrash", crashEnv+"="+dir, fmt.Sprintf("STORE_TEST_CRASH_ROUND=%d", round)), "stored ")
	// Let the child store a few bodies, then wait until one is half
	// written and kill it.
	got := child.Reports(t, 3, 90*time.Second)
	deadline := time.Now().Add(30 * time.Second)
	for !halfWritten(filepath.Join(dir, bodiesName)) {
		if time.Now().After(deadline) {
			t.Fatal("never saw a body being written")
		}
		time.Sleep(100 * time.Microsecond)
	}
	return append(got, child.Kill(t)...)
}

// halfWritten reports whether bodies holds a temporary file that is
// neither empty nor as large as a large child body.
func halfWritten(bodies string) bool {
	es, _ := os.ReadDir(bodies)
	for _, e := range es {
		if !strings.HasPrefix(e.Name(), TempPrefix) {
			continue
		}
		if info, err := e.Info(); err == nil && info.Size() > 0 && info.Size() < crashBodySize {
			return true
		}
	}
	return false
}

const crashBodySize = 16 << 20

// crashChild stores bodies until it is killed, alternately large and
// small, printing each key after its handle is recorded.
func crashChild(t *testing.T, dir string) {
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	round := os.Getenv("STORE_TEST_CRASH_ROUND")
	large := make([]byte, crashBodySize)
	for i := 0; ; i++ {
		body := []byte(fmt.Sprintf("small body %s/%d", round, i))
		if i%2 == 1 {
			fill(large, fmt.Sprintf("%s/%d", round, i))
			body = large
		}
		key, err := d.PutBody(crashSession, body)
		if err != nil {
			t.Fatal(err)
		}
		rec := values.Record{Handle: fmt.Sprintf("r%s-%d", round, i), Key: key, Kind: "binary", Size: int64(len(body))}
		if err := d.AppendRecord(crashSession, rec); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("stored %s\n", key)
	}
}

// verifyAfterCrash reopens the store after a kill and checks it; it
// returns the number of temporary files left behind.
func verifyAfterCrash(t *testing.T, dir string, stored map[string]bool) (debris int) {
	t.Helper()
	d := openDir(t, dir)
	defer d.Close()
	for key := range stored {
		body, err := d.Body(crashSession, key)
		if err != nil || KeyOf(body) != key {
			t.Errorf("Body of stored key %.8s…: %d bytes, %v", key, len(body), err)
		}
	}
	recs, err := d.Records(crashSession)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) < len(stored) {
		t.Errorf("%d handle records, want at least the %d reported", len(recs), len(stored))
	}
	for _, r := range recs {
		body, err := d.Body(crashSession, r.Key)
		if err != nil || int64(len(body)) != r.Size {
			t.Errorf("handle %s: Body: %d bytes, %v", r.Handle, len(body), err)
		}
	}
	bodies := filepath.Join(dir, bodiesName)
	for _, name := range listDir(t, bodies) {
		path := filepath.Join(bodies, name)
		if CheckKey(name) == nil {
			if _, err := readBody(d.bodiesRoot, name, unknownSize); err != nil {
				t.Errorf("body %s does not verify after a crash: %v", name, err)
			}
			continue
		}
		if !strings.HasPrefix(name, TempPrefix) {
			t.Errorf("unexpected file %s", name)
			continue
		}
		debris++
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// A half-written body is never served under its own digest.
		if _, err := d.Body(crashSession, KeyOf(b)); !errors.Is(err, ErrNotFound) {
			t.Errorf("Body of the digest of temp file %s (%d bytes) = %v, want ErrNotFound", name, len(b), err)
		}
	}
	return debris
}
