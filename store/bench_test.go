package store

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	values "github.com/agentvalues/values"
)

// BenchmarkPutBody stores a new body (a fresh first 8 bytes each time, so no
// dedupe) in a Dir, beside storing the same body again (dedupe: compare and
// grant) and two baselines on the same file system: os.WriteFile of the
// same bytes, and the same write followed by an fsync, the floor for a
// durable write.
func BenchmarkPutBody(b *testing.B) {
	for _, size := range []int{1 << 20, 64 << 20} {
		body := make([]byte, size)
		fill(body, "bench")
		name := fmt.Sprintf("%dMiB", size>>20)
		b.Run(name+"/dir", func(b *testing.B) {
			d := openDir(b, b.TempDir())
			b.SetBytes(int64(size))
			b.ReportAllocs()
			i := uint64(0)
			for b.Loop() {
				i++
				binary.LittleEndian.PutUint64(body, i)
				if _, err := d.PutBody("bench", body); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/dir-dedupe", func(b *testing.B) {
			d := openDir(b, b.TempDir())
			mustPut(b, d, "bench", body)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.PutBody("bench", body); err != nil {
					b.Fatal(err)
				}
			}
		})
		// The baselines rewrite one file, so that unwritten pages do not
		// pile up in the page cache over the run.
		b.Run(name+"/baseline-writefile", func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "body")
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if err := os.WriteFile(path, body, 0o600); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/baseline-writefile-fsync", func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "body")
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
				if err != nil {
					b.Fatal(err)
				}
				if err := writeSyncClose(f, body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAppendRecord appends one handle record with 100 bytes of
// metadata, beside the floor of appending the same bytes to a file and
// fsyncing it.
func BenchmarkAppendRecord(b *testing.B) {
	rec := values.Record{Handle: "r1", Key: KeyOf(nil), Kind: "array", Size: 1 << 20, Meta: make([]byte, 100)}
	b.Run("dir", func(b *testing.B) {
		d := openDir(b, b.TempDir())
		b.ReportAllocs()
		for b.Loop() {
			if err := d.AppendRecord("bench", rec); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("baseline-append-fsync", func(b *testing.B) {
		f, err := os.OpenFile(filepath.Join(b.TempDir(), "log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		data := appendRecord(nil, encodeHandle(rec))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := f.Write(data); err != nil {
				b.Fatal(err)
			}
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRecords reads back 10,000 handle records (100 bytes of
// metadata each) of one session: Records alone, a whole reopen (OpenDir,
// which loads the session's 10,000 grants, then Records and Close), and
// the baseline of os.ReadFile of the handle log.
func BenchmarkRecords(b *testing.B) {
	const n = 10_000
	dir := b.TempDir()
	writeBenchLogs(b, dir, "bench", n)
	b.Run("records", func(b *testing.B) {
		d := openDir(b, dir)
		defer d.Close()
		b.ReportAllocs()
		for b.Loop() {
			recs, err := d.Records("bench")
			if err != nil || len(recs) != n {
				b.Fatalf("%d records, %v", len(recs), err)
			}
		}
	})
	b.Run("reopen", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			d, err := OpenDir(dir)
			if err != nil {
				b.Fatal(err)
			}
			recs, err := d.Records("bench")
			if err != nil || len(recs) != n {
				b.Fatalf("%d records, %v", len(recs), err)
			}
			d.Close()
		}
	})
	b.Run("baseline-readfile", func(b *testing.B) {
		path := handleLog(b, dir, "bench")
		b.ReportAllocs()
		for b.Loop() {
			if _, err := os.ReadFile(path); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// writeBenchLogs writes the grant and handle logs of a session with n
// values directly, as n calls of PutBody and AppendRecord would (without
// n fsyncs).
func writeBenchLogs(b *testing.B, dir, session string, n int) {
	d := openDir(b, dir)
	d.Close()
	sdir, err := sessionPath(dir, session)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.Mkdir(sdir, 0o700); err != nil {
		b.Fatal(err)
	}
	grants := appendRecord(nil, encodeHeader(logGrants, session))
	handles := appendRecord(nil, encodeHeader(logHandles, session))
	meta := make([]byte, 100)
	for i := range n {
		body := []byte(strconv.Itoa(i))
		key := KeyOf(body)
		grants = appendRecord(grants, encodeGrant(key, d.cfg.newGrant(d.cfg.now(), len(body))))
		binary.LittleEndian.PutUint64(meta, uint64(i))
		rec := values.Record{Handle: "r" + strconv.Itoa(i+1), Key: key, Kind: "array", Size: int64(i), Meta: meta}
		handles = appendRecord(handles, encodeHandle(rec))
	}
	if err := os.WriteFile(filepath.Join(sdir, grantsLog), grants, 0o600); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sdir, handlesLog), handles, 0o600); err != nil {
		b.Fatal(err)
	}
}
