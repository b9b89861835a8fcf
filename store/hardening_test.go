package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	values "github.com/agentvalues/values"
)

// recordStarts returns the offset of each record of buf, a log of intact
// records only.
func recordStarts(t *testing.T, buf []byte) []int {
	t.Helper()
	var starts []int
	for off := 0; off < len(buf); {
		_, n, ok := parseRecord(buf[off:])
		if !ok {
			t.Fatalf("no intact record at offset %d of %d", off, len(buf))
		}
		starts = append(starts, off)
		off += n
	}
	return starts
}

// TestDamagedLastHandleIsFenced: whatever damage is confined to the last
// record of a handle log, a session reopened with values.Open on the Dir
// treats that handle as lost: it is unknown, a reference to it
// does not resolve, and its number is never handed out again, not even
// after another reopen.
func TestDamagedLastHandleIsFenced(t *testing.T) {
	const session = "fence"
	damages := []struct {
		name   string
		damage func(rec []byte) []byte // returns what replaces the last record
	}{
		{"bit flipped in the payload", func(r []byte) []byte { r[len(r)-1] ^= 1; return r }},
		{"bit flipped in the checksum", func(r []byte) []byte { r[9] ^= 0x10; return r }},
		{"bit flipped in the length", func(r []byte) []byte { r[5] ^= 1; return r }},
		{"bit flipped in the magic", func(r []byte) []byte { r[0] ^= 0x80; return r }},
		{"last byte cut", func(r []byte) []byte { return r[:len(r)-1] }},
		{"cut inside the record header", func(r []byte) []byte { return r[:7] }},
		{"zeroed", func(r []byte) []byte { return make([]byte, len(r)) }},
	}
	for _, tc := range damages {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			st := openDir(t, dir)
			s, err := values.Open(st, session,
				values.WithStoreErrors(func(h string, err error) { t.Errorf("storing %s: %v", h, err) }))
			if err != nil {
				t.Fatal(err)
			}
			for i := 1; i <= 5; i++ {
				if h := s.PutOutput(fmt.Appendf(nil, `{"n":%d}`, i)); h != fmt.Sprintf("r%d", i) || !s.Persisted(h) {
					t.Fatalf("Put %d gave %s, persisted %v", i, h, s.Persisted(h))
				}
			}
			st.Close()

			path := handleLog(t, dir, session)
			buf, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			starts := recordStarts(t, buf)
			last := starts[len(starts)-1]
			damaged := append(buf[:last:last], tc.damage(append([]byte(nil), buf[last:]...))...)
			if err := os.WriteFile(path, damaged, 0o600); err != nil {
				t.Fatal(err)
			}

			st = openDir(t, dir)
			s, err = values.Open(st, session)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := s.Get("r5"); ok {
				t.Error("r5 is known after its record was damaged")
			}
			if diff := cmp.Diff([]string{"r1", "r2", "r3", "r4"}, s.Handles()); diff != "" {
				t.Errorf("handles after reopening (-want +got):\n%s", diff)
			}
			if res, err := s.ResolveDetail([]byte(`["$r5"]`)); err != nil || len(res.Refs) != 1 || !errors.Is(res.Refs[0].Err, values.ErrUnknownHandle) {
				t.Errorf("Resolve $r5 = %+v, %v; want it unresolved with ErrUnknownHandle", res.Refs, err)
			}
			if h := s.PutOutput([]byte(`{"after":true}`)); h != "r6" || !s.Persisted(h) {
				t.Fatalf("first handle after the damage is %s (persisted %v), want r6: r5 must never be handed out again", h, s.Persisted(h))
			}
			st.Close()

			// The loss is on record now: another reopen still fences r5.
			st = openDir(t, dir)
			s, err = values.Open(st, session)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"r1", "r2", "r3", "r4", "r6"}, s.Handles()); diff != "" {
				t.Errorf("handles after the second reopen (-want +got):\n%s", diff)
			}
			out, _, err := s.Resolve([]byte(`["$r6"]`))
			if err != nil || string(out) != `[{"after":true}]` {
				t.Errorf("Resolve $r6 = %s, %v", out, err)
			}
			if h := s.PutOutput([]byte(`{"later":true}`)); h != "r7" {
				t.Errorf("next handle is %s, want r7", h)
			}
			st.Close()
		})
	}
}

// writeHandleLog writes the handle log of session in the store at root:
// its header, a record for each payload, then tail.
func writeHandleLog(t *testing.T, root, session string, payloads [][]byte, tail []byte) {
	t.Helper()
	sdir, err := sessionPath(root, session)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(sdir, 0o700); err != nil {
		t.Fatal(err)
	}
	log := appendRecord(nil, encodeHeader(logHandles, session))
	for _, p := range payloads {
		log = appendRecord(log, p)
	}
	if err := os.WriteFile(filepath.Join(sdir, handlesLog), append(log, tail...), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestRecordsLostInPlace: Dir.Records returns each lost record, and a
// damaged tail, as the zero values.Record at its place in the order, never
// dropping or numbering it (values.Open numbers lost records).
func TestRecordsLostInPlace(t *testing.T) {
	key := KeyOf([]byte("x"))
	r := func(h string) values.Record { return values.Record{Handle: h, Key: key, Kind: "text", Size: 1} }
	var lost values.Record
	tests := []struct {
		name string
		recs []values.Record // lost ones written as lost records
		torn bool            // a damaged tail follows them
		want []values.Record
	}{
		{"none lost", []values.Record{r("r1"), r("r2")}, false, []values.Record{r("r1"), r("r2")}},
		{"only record lost", []values.Record{lost}, false, []values.Record{lost}},
		{"last lost", []values.Record{r("r1"), r("r2"), lost}, false, []values.Record{r("r1"), r("r2"), lost}},
		{"lost then more", []values.Record{r("r1"), lost, r("r3")}, false, []values.Record{r("r1"), lost, r("r3")}},
		{"two lost", []values.Record{r("r1"), lost, lost}, false, []values.Record{r("r1"), lost, lost}},
		{"after a gap", []values.Record{r("r1"), r("r4"), lost}, false, []values.Record{r("r1"), r("r4"), lost}},
		{"after a record appended twice", []values.Record{r("r2"), r("r2"), lost}, false, []values.Record{r("r2"), r("r2"), lost}},
		{"after a foreign handle", []values.Record{r("x"), lost}, false, []values.Record{r("x"), lost}},
		{"torn tail", []values.Record{r("r1")}, true, []values.Record{r("r1"), lost}},
		{"torn tail after a lost record", []values.Record{r("r1"), lost}, true, []values.Record{r("r1"), lost, lost}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			d := openDir(t, dir)
			var payloads [][]byte
			for _, rec := range tc.recs {
				if rec.Lost() {
					payloads = append(payloads, lostPayload)
				} else {
					payloads = append(payloads, encodeHandle(rec))
				}
			}
			var tail []byte
			if tc.torn {
				whole := appendRecord(nil, encodeHandle(r("r9")))
				tail = whole[:len(whole)-1]
			}
			writeHandleLog(t, dir, "s", payloads, tail)
			got, err := d.Records("s")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Records (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckSessionMessage(t *testing.T) {
	tests := []struct {
		id, want string
	}{
		{"é", `store: invalid session id: "é" has 'é' at byte 0, want A-Z a-z 0-9 . _ -`},
		{"abé", `store: invalid session id: "abé" has 'é' at byte 2, want A-Z a-z 0-9 . _ -`},
		{"a日本", `store: invalid session id: "a日本" has '日' at byte 1, want A-Z a-z 0-9 . _ -`},
		{"a😀", `store: invalid session id: "a😀" has '😀' at byte 1, want A-Z a-z 0-9 . _ -`},
		{"a b", `store: invalid session id: "a b" has ' ' at byte 1, want A-Z a-z 0-9 . _ -`},
		{"a\u200b", `store: invalid session id: "a\u200b" has '\u200b' at byte 1, want A-Z a-z 0-9 . _ -`},
		{"a\x00", `store: invalid session id: "a\x00" has '\x00' at byte 1, want A-Z a-z 0-9 . _ -`},
		{"\xff", `store: invalid session id: "\xff" has '\xff' at byte 0, want A-Z a-z 0-9 . _ -`},
		{"ab\xc3", `store: invalid session id: "ab\xc3" has '\xc3' at byte 2, want A-Z a-z 0-9 . _ -`},
		{"\xc3\xa9\xff", `store: invalid session id: "é\xff" has 'é' at byte 0, want A-Z a-z 0-9 . _ -`},
		{"a/b", `store: invalid session id: "a/b" has '/' at byte 1, want A-Z a-z 0-9 . _ -`},
	}
	for _, tc := range tests {
		t.Run(tc.id, func(t *testing.T) {
			err := CheckSession(tc.id)
			if !errors.Is(err, ErrInvalidSession) {
				t.Fatalf("CheckSession(%q) = %v, want ErrInvalidSession", tc.id, err)
			}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
			if !utf8.ValidString(err.Error()) || strings.Contains(err.Error(), "Ã") {
				t.Errorf("message %q is not valid UTF-8 or shows bytes as Latin-1", err)
			}
		})
	}
	// A long id is clipped at a character boundary, never inside one.
	long := strings.Repeat("é", MaxSessionLen)
	if msg := CheckSession(long).Error(); !utf8.ValidString(msg) || strings.Contains(msg, `\x`) {
		t.Errorf("message for a long id splits a character: %q", msg)
	}
}
