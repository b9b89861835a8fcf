package store

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	values "github.com/agentvalues/values"
)

// fuzzRoot is a store root for path checks; nothing is created there.
var fuzzRoot = filepath.Join(string(filepath.Separator)+"srv", "store")

// inside reports whether path is a direct child of dir.
func inside(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && filepath.IsLocal(rel) && !strings.ContainsRune(rel, filepath.Separator) && filepath.Join(dir, rel) == path
}

func checkError(t *testing.T, err, sentinel error) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("error %v does not match %v", err, sentinel)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "store: ") || !utf8.ValidString(msg) {
		t.Fatalf("error message %q lacks the prefix or is not UTF-8", msg)
	}
}

func FuzzCheckKey(f *testing.F) {
	for _, k := range badKeys {
		f.Add(k)
	}
	f.Add(KeyOf(nil))
	f.Add(KeyOf([]byte("x")))
	f.Fuzz(func(t *testing.T, key string) {
		valid := len(key) == KeyLen && strings.Trim(key, "0123456789abcdef") == ""
		err := CheckKey(key)
		path, perr := bodyPath(fuzzRoot, key)
		if !valid {
			checkError(t, err, ErrInvalidKey)
			checkError(t, perr, ErrInvalidKey)
			return
		}
		if err != nil || perr != nil {
			t.Fatalf("valid key %q rejected: %v, %v", key, err, perr)
		}
		if !inside(filepath.Join(fuzzRoot, bodiesName), path) || filepath.Base(path) != key {
			t.Fatalf("key %q yields path %q outside %s", key, path, filepath.Join(fuzzRoot, bodiesName))
		}
		// A key is only ever the digest of some bytes: any bytes give a
		// valid key, and the same bytes the same key.
		if k := KeyOf([]byte(key)); CheckKey(k) != nil || k != KeyOf([]byte(key)) {
			t.Fatalf("KeyOf(%q) = %q", key, k)
		}
	})
}

func FuzzCheckSession(f *testing.F) {
	for _, s := range badSessions {
		f.Add(s, "a")
	}
	f.Add("a", "A")
	f.Add("session-1", "session-1.")
	f.Add(strings.Repeat("x", MaxSessionLen), "..")
	f.Fuzz(func(t *testing.T, a, b string) {
		pa := checkSessionPath(t, a)
		pb := checkSessionPath(t, b)
		if pa != "" && pb != "" && (pa == pb) != (a == b) {
			t.Fatalf("sessions %q and %q share directory %q: %v", a, b, pa, pa == pb)
		}
	})
}

// checkSessionPath checks the rules for session id and returns its
// directory, or "" if id is invalid.
func checkSessionPath(t *testing.T, id string) string {
	t.Helper()
	valid := len(id) >= 1 && len(id) <= MaxSessionLen && id != "." && id != ".." &&
		strings.Trim(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == ""
	err := CheckSession(id)
	path, perr := sessionPath(fuzzRoot, id)
	if !valid {
		checkError(t, err, ErrInvalidSession)
		checkError(t, perr, ErrInvalidSession)
		checkSessionMessage(t, id, err.Error())
		return ""
	}
	if err != nil || perr != nil {
		t.Fatalf("valid session %q rejected: %v, %v", id, err, perr)
	}
	sessions := filepath.Join(fuzzRoot, sessionsName)
	if !inside(sessions, path) || CheckKey(filepath.Base(path)) != nil {
		t.Fatalf("session %q yields directory %q, not a digest in %s", id, path, sessions)
	}
	for _, name := range []string{grantsLog, handlesLog} {
		if p := filepath.Join(path, name); !inside(path, p) {
			t.Fatalf("log %q escapes %q", p, path)
		}
	}
	// The header of its logs names it and reads back.
	for _, kind := range []byte{logGrants, logHandles} {
		got, err := decodeHeader(encodeHeader(kind, id), kind)
		if err != nil || got != id {
			t.Fatalf("header of %q reads back as %q, %v", id, got, err)
		}
	}
	return path
}

// checkSessionMessage checks that msg, the error for invalid session id,
// names the first offending character truthfully: at its byte offset, the
// character itself when it is a printable UTF-8 one, else an escape.
func checkSessionMessage(t *testing.T, id, msg string) {
	t.Helper()
	if len(id) == 0 || len(id) > MaxSessionLen || id == "." || id == ".." {
		return
	}
	i := strings.IndexFunc(id, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '.' || r == '_' || r == '-')
	})
	if i < 0 {
		t.Fatalf("invalid id %q has no offending character", id)
	}
	if !strings.HasSuffix(msg, fmt.Sprintf(" at byte %d, want A-Z a-z 0-9 . _ -", i)) {
		t.Fatalf("message %q does not name byte %d of %q", msg, i, id)
	}
	r, n := utf8.DecodeRuneInString(id[i:])
	switch {
	case r == utf8.RuneError && n <= 1:
		if !strings.Contains(msg, fmt.Sprintf(`has '\x%02x' at`, id[i])) {
			t.Fatalf("message %q does not show invalid byte %#x as \\x%02x", msg, id[i], id[i])
		}
	case strconv.IsPrint(r) && r != '\'' && r != '\\':
		if !strings.Contains(msg, "has '"+string(r)+"' at") {
			t.Fatalf("message %q does not show %q", msg, r)
		}
	}
}

// FuzzScanLog: reading any bytes as a log never panics; what it accepts
// is exactly a run of intact records, and what it ignores holds none.
func FuzzScanLog(f *testing.F) {
	log := appendRecord(appendRecord(nil, []byte("first")), []byte("second"))
	f.Add(log)
	f.Add(log[:len(log)-1])
	f.Add(append(append([]byte(nil), log...), 0, 0, 0))
	f.Add(append([]byte("garbage"), log...))
	f.Add([]byte(recMagic))
	f.Fuzz(func(t *testing.T, buf []byte) {
		payloads, end, err := scanLog(buf)
		if err != nil {
			checkError(t, err, ErrIntegrity)
			if _, found := nextRecord(buf, 1); !found {
				t.Fatalf("damage reported but no intact record follows it: %v", err)
			}
			return
		}
		var again []byte
		for _, p := range payloads {
			again = appendRecord(again, p)
		}
		if !bytes.Equal(again, buf[:end]) {
			t.Fatalf("records re-encode as %x, want %x", again, buf[:end])
		}
		if off, found := nextRecord(buf, end); found {
			t.Fatalf("intact record at %d after the accepted end %d", off, end)
		}
	})
}

// FuzzLogTornTail: cutting a log of three records anywhere reads back the
// records wholly before the cut, and never fails.
func FuzzLogTornTail(f *testing.F) {
	f.Add([]byte("a"), []byte("bb"), []byte(""), uint16(30))
	f.Add([]byte(recMagic), []byte(recMagic+"\x00\x00\x00\x00"), []byte("ccc"), uint16(40))
	f.Fuzz(func(t *testing.T, a, b, c []byte, cut uint16) {
		recs := [][]byte{a, b, c}
		var log []byte
		var ends []int
		for _, r := range recs {
			log = appendRecord(log, r)
			ends = append(ends, len(log))
		}
		n := int(cut) % (len(log) + 1)
		payloads, end, err := scanLog(log[:n])
		if err != nil {
			// Only a record nested whole in a torn payload can look like
			// damage followed by an intact record; that fails closed.
			if _, found := nextRecord(log[:n], 1); !found {
				t.Fatalf("cut at %d: %v", n, err)
			}
			return
		}
		want := 0
		for want < len(ends) && ends[want] <= n {
			want++
		}
		if len(payloads) != want {
			t.Fatalf("cut at %d: %d records, want %d", n, len(payloads), want)
		}
		for i, p := range payloads {
			if !bytes.Equal(p, recs[i]) {
				t.Fatalf("record %d = %q, want %q", i, p, recs[i])
			}
		}
		if want > 0 && end != ends[want-1] || want == 0 && end != 0 {
			t.Fatalf("end = %d, want %d", end, ends)
		}
	})
}

// FuzzHandleRecord: every record AppendRecord accepts encodes and decodes
// to itself; decoding any bytes never panics and yields a valid record.
func FuzzHandleRecord(f *testing.F) {
	f.Add("r1", KeyOf(nil), "array", int64(100), []byte{1, 2, 3})
	f.Add("r2", "", "", int64(0), []byte(nil))
	f.Add("", "x", "k", int64(-1), []byte("m"))
	f.Fuzz(func(t *testing.T, handle, key, kind string, size int64, meta []byte) {
		r := values.Record{Handle: handle, Key: key, Kind: kind, Size: size, Meta: meta}
		if dec, err := decodeHandle(append([]byte{recHandle}, meta...)); err == nil && CheckRecord(dec) != nil {
			t.Fatalf("decoded an invalid record %+v", dec)
		}
		if err := CheckRecord(r); err != nil {
			checkError(t, err, ErrInvalidRecord)
			return
		}
		got, err := decodeHandle(encodeHandle(r))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(cloneRecord(r), got); diff != "" {
			t.Fatalf("round trip (-want +got):\n%s", diff)
		}
	})
}

// FuzzHandleLogDamage: damage confined to the last record of a handle log,
// a flipped bit or a cut inside it, never drops that record silently: the
// log reads as the records before it and one lost record, and so does the
// log after the next append writes a lost record in place of the damage,
// now without damage. The only other outcome is ErrIntegrity (for example
// when the damaged record holds a whole intact record in its Meta).
func FuzzHandleLogDamage(f *testing.F) {
	f.Add(uint8(3), []byte("meta"), uint32(0), false)
	f.Add(uint8(1), []byte(nil), uint32(77), true)
	f.Add(uint8(0), []byte(nil), uint32(3), true)
	f.Add(uint8(2), appendRecord(nil, encodeHandle(values.Record{Handle: "r9"})), uint32(20), false)
	f.Add(uint8(2), appendRecord(nil, encodeHandle(values.Record{Handle: "r9"})), uint32(5), true)
	f.Fuzz(func(t *testing.T, n uint8, meta []byte, pos uint32, cut bool) {
		count := int(n%6) + 1
		recs := make([]values.Record, count)
		log := appendRecord(nil, encodeHeader(logHandles, "s"))
		last := 0
		for i := range recs {
			recs[i] = values.Record{Handle: "r" + strconv.Itoa(i+1), Kind: "text", Size: int64(i), Meta: meta}
			last = len(log)
			log = appendRecord(log, encodeHandle(recs[i]))
			recs[i] = cloneRecord(recs[i])
		}
		rec := log[last:]
		var damaged []byte
		if cut {
			damaged = log[:last+1+int(pos%uint32(len(rec)-1))]
		} else {
			bit := int(pos % uint32(8*len(rec)))
			damaged = append([]byte(nil), log...)
			damaged[last+bit/8] ^= 1 << (bit % 8)
		}
		st, err := parseLog(damaged, logHandles)
		var got []values.Record
		if err == nil {
			got, err = handleRecords(st)
		}
		if err != nil {
			checkError(t, err, ErrIntegrity)
			return
		}
		want := append(recs[:count-1:count-1], values.Record{})
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("damaged log reads as (-want +got):\n%s", diff)
		}
		if st.session != "s" || !st.damaged() || st.end != int64(last) {
			t.Fatalf("damaged log: session %q, end %d of %d; want \"s\", %d", st.session, st.end, st.size, last)
		}
		fixed := appendRecord(damaged[:st.end:st.end], lostPayload)
		st, err = parseLog(fixed, logHandles)
		if err == nil {
			got, err = handleRecords(st)
		}
		if err != nil || st.damaged() {
			t.Fatalf("log with a lost record in place of the damage: damaged %v, %v", st.damaged(), err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("log with a lost record reads as (-want +got):\n%s", diff)
		}
	})
}

// FuzzGrantRecord: a grant encodes and decodes to itself, merging with an
// older grant on the same key that lacks the size keeps the size; a lost
// record counts as one; decoding any payload never panics and yields only
// valid keys and sizes.
func FuzzGrantRecord(f *testing.F) {
	f.Add([]byte("body"), int64(1), int64(2), []byte("G"))
	f.Add([]byte(nil), int64(-1), int64(math.MaxInt64), []byte("L"))
	f.Fuzz(func(t *testing.T, body []byte, granted, expires int64, raw []byte) {
		key := KeyOf(body)
		g := grant{granted: granted, expires: expires, size: int64(len(body))}
		rec := encodeGrant(key, g)
		grants, lost, err := decodeGrants([][]byte{rec[:oldGrantLen], lostPayload, rec})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(map[string]grant{key: g}, grants, cmp.AllowUnexported(grant{})); diff != "" || lost != 1 {
			t.Fatalf("decoded grants (-want +got):\n%s\nlost %d, want 1", diff, lost)
		}
		gs, _, err := decodeGrants([][]byte{raw})
		if err != nil {
			checkError(t, err, ErrIntegrity)
			return
		}
		for k, g := range gs {
			if CheckKey(k) != nil || g.size < unknownSize {
				t.Fatalf("decoded %q as key %q, size %d", raw, k, g.size)
			}
		}
	})
}
