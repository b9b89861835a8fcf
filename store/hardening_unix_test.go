//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package store

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	values "github.com/agentvalues/values"
)

// Environment of the child processes of the tests below.
const (
	childDirEnv = "STORE_TEST_CHILD_DIR"
	childKeyEnv = "STORE_TEST_CHILD_KEY"
)

// runChild runs test in a child process of the test binary with the
// given store directory and key, and returns its lines starting with
// "result ".
func runChild(t *testing.T, test, dir, key string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), childDirEnv+"="+dir, childKeyEnv+"="+key)
	out, err := cmd.CombinedOutput()
	var result []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if r, ok := strings.CutPrefix(sc.Text(), "result "); ok {
			result = append(result, r)
		}
	}
	if err != nil || len(result) != 1 {
		t.Fatalf("child %s: %v; want one result line, output:\n%s", test, err, out)
	}
	return result[0]
}

// vmHWM returns the peak resident memory of this process in bytes, from
// /proc/self/status, or -1 where there is no such file.
func vmHWM(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if errors.Is(err, fs.ErrNotExist) {
		return -1
	}
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	return -1
}

// maxSparseHWM bounds the peak memory of a child that reads a tampered
// body: far below the smallest sparse body below, and far above what the
// test binary needs (also under the race detector).
const maxSparseHWM = 160 << 20

// TestBodyHugeSparse: a body replaced by a huge sparse file fails with
// ErrIntegrity without being read into memory. Each case runs Body in a
// child process, which reports the error and its peak memory; reading the
// file whole would need at least its size (1 TiB: the child dies).
func TestBodyHugeSparse(t *testing.T) {
	if dir := os.Getenv(childDirEnv); dir != "" {
		d, err := OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		_, err = d.Body("a", os.Getenv(childKeyEnv))
		fmt.Printf("result integrity=%v hwm=%d err=%v\n", errors.Is(err, ErrIntegrity), vmHWM(t), err)
		d.Close()
		return
	}
	body := []byte(`{"the":"body"}`)
	tests := []struct {
		name     string
		size     int64
		sizeless bool // the grant was recorded without a size, by an older version
	}{
		{"1 TiB", 1 << 40, false},
		{"one byte more", int64(len(body)) + 1, false},
		{"one byte less", int64(len(body)) - 1, false},
		{"grant without a size, 256 MiB", 256 << 20, true},
		{"grant without a size, one byte more", int64(len(body)) + 1, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			d := openDir(t, dir)
			key := mustPut(t, d, "a", body)
			d.Close()
			if tc.sizeless {
				writeSizelessGrant(t, dir, "a", key)
				d := openDir(t, dir)
				if got, err := d.Body("a", key); err != nil || !bytes.Equal(got, body) {
					t.Fatalf("Body through a grant without a size = %q, %v", got, err)
				}
				d.Close()
			}
			if err := os.Truncate(filepath.Join(dir, bodiesName, key), tc.size); err != nil {
				t.Fatal(err)
			}
			got := runChild(t, "TestBodyHugeSparse", dir, key)
			var integrity bool
			var hwm int64
			if _, err := fmt.Sscanf(got, "integrity=%t hwm=%d", &integrity, &hwm); err != nil {
				t.Fatalf("child result %q: %v", got, err)
			}
			if !integrity {
				t.Errorf("Body of a %d-byte body: %s; want ErrIntegrity", tc.size, got)
			}
			t.Logf("child: %s", got)
			if hwm < 0 {
				t.Logf("no /proc/self/status: peak memory not checked")
			} else if hwm > maxSparseHWM {
				t.Errorf("Body of a %d-byte body peaked at %d MiB of memory, want at most %d MiB", tc.size, hwm>>20, maxSparseHWM>>20)
			}
		})
	}
}

// writeSizelessGrant rewrites the grant log of session to hold one grant on
// key in the format of older versions, without the body's size.
func writeSizelessGrant(t *testing.T, dir, session, key string) {
	t.Helper()
	sdir, err := sessionPath(dir, session)
	if err != nil {
		t.Fatal(err)
	}
	g := grant{granted: 1, expires: never}
	log := appendRecord(nil, encodeHeader(logGrants, session))
	log = appendRecord(log, encodeGrant(key, g)[:oldGrantLen])
	if err := os.WriteFile(filepath.Join(sdir, grantsLog), log, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestLockSurvivesLockFileRemoval: removing or replacing LOCK while a Dir
// is open lets no second Dir open the directory, in this process or
// another; the open Dir refuses further writes with ErrReplaced, still
// reads, and once closed the directory opens again.
func TestLockSurvivesLockFileRemoval(t *testing.T) {
	if dir := os.Getenv(childDirEnv); dir != "" {
		d, err := OpenDir(dir)
		if err == nil {
			d.Close()
		}
		fmt.Printf("result locked=%v err=%v\n", errors.Is(err, ErrLocked), err)
		return
	}
	tampers := []struct {
		name   string
		tamper func(lock string) error
	}{
		{"LOCK removed", os.Remove},
		{"LOCK replaced", func(lock string) error {
			tmp := lock + ".new"
			if err := os.WriteFile(tmp, nil, 0o600); err != nil {
				return err
			}
			return os.Rename(tmp, lock)
		}},
	}
	opens := []struct {
		name string
		open func(t *testing.T, dir string) error // a second OpenDir's error
	}{
		{"same process", func(t *testing.T, dir string) error {
			d, err := OpenDir(dir)
			if err == nil {
				d.Close()
			}
			return err
		}},
		{"another process", func(t *testing.T, dir string) error {
			got := runChild(t, "TestLockSurvivesLockFileRemoval", dir, "")
			if strings.HasPrefix(got, "locked=true ") {
				return ErrLocked
			}
			return errors.New(got)
		}},
	}
	for _, tm := range tampers {
		for _, op := range opens {
			t.Run(tm.name+"/"+op.name, func(t *testing.T) {
				dir := t.TempDir()
				d := openDir(t, dir)
				key := mustPut(t, d, "a", []byte("before"))
				if err := tm.tamper(filepath.Join(dir, lockName)); err != nil {
					t.Fatal(err)
				}
				if err := op.open(t, dir); !errors.Is(err, ErrLocked) {
					t.Fatalf("second OpenDir = %v, want ErrLocked", err)
				}
				if k, err := d.PutBody("a", []byte("after")); k != "" || !errors.Is(err, ErrReplaced) {
					t.Errorf("PutBody = %q, %v; want \"\", ErrReplaced", k, err)
				}
				if err := d.AppendRecord("a", values.Record{Handle: "r1", Key: key}); !errors.Is(err, ErrReplaced) {
					t.Errorf("AppendRecord = %v, want ErrReplaced", err)
				}
				if got, err := d.Body("a", key); err != nil || string(got) != "before" {
					t.Errorf("Body = %q, %v", got, err)
				}
				if err := d.Close(); err != nil {
					t.Fatal(err)
				}
				d = openDir(t, dir)
				mustPut(t, d, "a", []byte("after"))
				if got, err := d.Body("a", key); err != nil || string(got) != "before" {
					t.Errorf("Body after reopening = %q, %v", got, err)
				}
			})
		}
	}
}

// tree returns every file, directory and symbolic link under root (not
// following links) with its contents or target, keyed by path relative to
// root; nil if root does not exist.
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(root, func(path string, de fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && path == root {
			m = nil
			return filepath.SkipAll
		}
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		switch {
		case de.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			m[rel] = "-> " + target
			return err
		case de.IsDir():
			m[rel] = "dir"
		default:
			b, err := os.ReadFile(path)
			m[rel] = string(b)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestWritesRefuseSwappedPaths: after a file or directory of an open Dir
// is swapped for a symbolic link or another file, the writes that go
// through it fail with ErrReplaced and change nothing, in the store or
// outside it; nothing is reported durable.
func TestWritesRefuseSwappedPaths(t *testing.T) {
	// A swap gets the store directory and an outside directory, and the
	// session directory of session "a".
	type swapFunc func(dir, outside, sdir string) error
	copyFile := func(from, to string) error {
		b, err := os.ReadFile(from)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o600)
	}
	linkOut := func(path, outside string, copyFirst bool) error {
		target := filepath.Join(outside, filepath.Base(path))
		if copyFirst {
			if err := copyFile(path, target); err != nil {
				return err
			}
		}
		if err := os.Rename(path, path+".moved"); err != nil {
			return err
		}
		return os.Symlink(target, path)
	}
	linkDirOut := func(path, outside string) error {
		target := filepath.Join(outside, filepath.Base(path))
		if err := os.Mkdir(target, 0o700); err != nil {
			return err
		}
		if err := os.Rename(path, path+".moved"); err != nil {
			return err
		}
		return os.Symlink(target, path)
	}
	tests := []struct {
		name        string
		swap        swapFunc
		put, append bool // which writes must fail
		again       bool // and fail again, the swap being one no Dir accepts
	}{
		{"handles.log linked out of the store", func(dir, out, sdir string) error {
			return linkOut(filepath.Join(sdir, handlesLog), out, true)
		}, false, true, true},
		{"handles.log linked to grants.log", func(dir, out, sdir string) error {
			path := filepath.Join(sdir, handlesLog)
			if err := os.Remove(path); err != nil {
				return err
			}
			return os.Symlink(grantsLog, path)
		}, false, true, true},
		{"handles.log replaced by a copy", func(dir, out, sdir string) error {
			path := filepath.Join(sdir, handlesLog)
			if err := copyFile(path, path+".copy"); err != nil {
				return err
			}
			return os.Rename(path+".copy", path)
		}, false, true, false}, // the copy is a good log: the next append prepares it
		{"grants.log linked out of the store", func(dir, out, sdir string) error {
			return linkOut(filepath.Join(sdir, grantsLog), out, true)
		}, true, false, true},
		{"session directory linked out of the store", func(dir, out, sdir string) error {
			if err := linkDirOut(sdir, out); err != nil {
				return err
			}
			for _, name := range []string{grantsLog, handlesLog} {
				if err := copyFile(filepath.Join(sdir+".moved", name), filepath.Join(sdir, name)); err != nil {
					return err
				}
			}
			return nil
		}, true, true, true},
		{"bodies linked out of the store", func(dir, out, sdir string) error {
			return linkDirOut(filepath.Join(dir, bodiesName), out)
		}, true, true, true},
		{"sessions linked out of the store", func(dir, out, sdir string) error {
			return linkDirOut(filepath.Join(dir, sessionsName), out)
		}, true, true, true},
		{"store directory moved, an empty one in its place", func(dir, out, sdir string) error {
			if err := os.Rename(dir, dir+".moved"); err != nil {
				return err
			}
			return os.Mkdir(dir, 0o700)
		}, true, true, true},
		{"store directory linked elsewhere", func(dir, out, sdir string) error {
			if err := os.Rename(dir, dir+".moved"); err != nil {
				return err
			}
			return os.Symlink(out, dir)
		}, true, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "store")
			outside := t.TempDir()
			d := openDir(t, dir)
			key := mustPut(t, d, "a", []byte("before"))
			if err := d.AppendRecord("a", values.Record{Handle: "r1", Key: key}); err != nil {
				t.Fatal(err)
			}
			sdir, _ := sessionPath(dir, "a")
			if err := tc.swap(dir, outside, sdir); err != nil {
				t.Fatal(err)
			}
			// A PutBody that fails at its grant leaves its body in the store's
			// bodies/, unreferenced, as a crash there would; cleanup
			// removes it. Nothing else may change.
			newBody := []byte("a new body")
			trees := func() map[string]map[string]string {
				m := map[string]map[string]string{"parent": tree(t, parent), "outside": tree(t, outside)}
				delete(m["parent"], filepath.Join("store", bodiesName, KeyOf(newBody)))
				return m
			}
			write := func(want func(error) bool, wantText string) {
				t.Helper()
				if tc.put {
					if k, err := d.PutBody("a", newBody); k != "" || !want(err) {
						t.Errorf("PutBody = %q, %v; want \"\", %s", k, err, wantText)
					}
				}
				if tc.append {
					if err := d.AppendRecord("a", values.Record{Handle: "r2"}); !want(err) {
						t.Errorf("AppendRecord = %v, want %s", err, wantText)
					}
				}
			}
			before := trees()
			write(func(err error) bool { return errors.Is(err, ErrReplaced) }, "ErrReplaced")
			if tc.again { // nor does a later try write anywhere
				write(func(err error) bool { return err != nil }, "an error")
			}
			if diff := cmp.Diff(before, trees()); diff != "" {
				t.Errorf("a refused write changed files (-before +after):\n%s", diff)
			}
		})
	}

	// Undoing a swap makes writes work again, and nothing was lost.
	t.Run("restored", func(t *testing.T) {
		dir := t.TempDir()
		d := openDir(t, dir)
		key := mustPut(t, d, "a", []byte("before"))
		if err := d.AppendRecord("a", values.Record{Handle: "r1", Key: key}); err != nil {
			t.Fatal(err)
		}
		sdir, _ := sessionPath(dir, "a")
		path := filepath.Join(sdir, handlesLog)
		if err := linkOut(path, t.TempDir(), true); err != nil {
			t.Fatal(err)
		}
		if err := d.AppendRecord("a", values.Record{Handle: "r2"}); !errors.Is(err, ErrReplaced) {
			t.Fatalf("AppendRecord = %v, want ErrReplaced", err)
		}
		if err := os.Rename(path+".moved", path); err != nil {
			t.Fatal(err)
		}
		if err := d.AppendRecord("a", values.Record{Handle: "r2"}); err != nil {
			t.Fatalf("AppendRecord after restoring: %v", err)
		}
		want := []values.Record{{Handle: "r1", Key: key}, {Handle: "r2"}}
		if got, err := d.Records("a"); err != nil || !cmp.Equal(want, got) {
			t.Errorf("Records = %v, %v; want %v", got, err, want)
		}
	})
}
