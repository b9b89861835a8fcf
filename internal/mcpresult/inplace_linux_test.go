package mcpresult

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/internal/jsontext"
	"golang.org/x/sys/unix"
)

// TestTakeInPlace decodes large texts in place in lines in mappings of
// their own, at every kind of offset in a page, with their pages moved
// into the value as the proxy's connection moves them (mremap), and with
// a move that fails: the value is the text's decoding, byte for byte.
func TestTakeInPlace(t *testing.T) {
	var body strings.Builder
	for i := 0; body.Len() < 9<<20; i++ {
		fmt.Fprintf(&body, `{\"id\":%d,\"name\":\"Zoë \\\"q\\\" \ud83d\ude00 \u00e9\"}\n`, i)
		if i%1000 == 0 {
			body.WriteString(strings.Repeat("x", i%4096)) // runs without escapes, of all lengths
		}
	}
	text := `"` + body.String() + `"`
	if err := jsontext.Valid([]byte(text)); err != nil {
		t.Fatal(err)
	}
	want := jsontext.AppendUnquoted(nil, []byte(text))
	page := unix.Getpagesize()
	for _, tc := range []struct {
		prefix int // bytes of the line before the result's text
		fail   bool
	}{{1, false}, {page - 40, false}, {page + 7, false}, {3*page - 1, false}, {100, true}} {
		line := make([]byte, 0, len(text)+tc.prefix+64)
		line = append(line, `{"content":[{"type":"text","text":`...)
		line = append(line, strings.Repeat(" ", max(tc.prefix-len(line), 0))...)
		line = append(line, text...)
		line = append(line, `}]}`...)
		m, err := unix.Mmap(-1, 0, len(line), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			t.Fatal(err)
		}
		r := m[:copy(m, line)]
		res, ok := Parse(r, nil)
		if !ok || !res.AllText() || len(res.texts) != 1 {
			t.Fatalf("Parse: %v", ok)
		}
		moves := 0
		res.SetMove(func(dst, src []byte) bool {
			if tc.fail {
				return false
			}
			moves++
			// As the proxy's connection moves them (wire.movePages).
			_, _, errno := unix.Syscall6(unix.SYS_MREMAP, uintptr(unsafe.Pointer(unsafe.SliceData(src))), uintptr(len(src)), uintptr(len(src)),
				unix.MREMAP_MAYMOVE|unix.MREMAP_FIXED|unix.MREMAP_DONTUNMAP, uintptr(unsafe.Pointer(unsafe.SliceData(dst))), 0)
			return errno == 0
		})
		got := res.takeText()
		if !bytes.Equal(got, want) {
			i := 0
			for i < min(len(got), len(want)) && got[i] == want[i] {
				i++
			}
			t.Fatalf("prefix %d: the value (%d bytes) differs from the decoding (%d bytes) at %d", tc.prefix, len(got), len(want), i)
		}
		if !tc.fail && moves < 2 {
			t.Errorf("prefix %d: %d moves of pages, want the decoding moved in steps", tc.prefix, moves)
		}
		unix.Munmap(m)
	}
}

// TestStoreMovedStructured stores large structured content and a large
// text from lines in mappings of their own whose pages are moved into the
// values, at several offsets in a page: the values are the structured
// content's bytes and the text's decoding.
func TestStoreMovedStructured(t *testing.T) {
	var rows strings.Builder
	rows.WriteString(`{"rows":[`)
	for i := 0; rows.Len() < 9<<20; i++ {
		if i > 0 {
			rows.WriteByte(',')
		}
		fmt.Fprintf(&rows, `{"id":%d,"name":"Zoë \"q\" %d"}`, i, i%977)
	}
	rows.WriteString(`]}`)
	structured := rows.String()
	log := strings.Repeat("line \"one\" ✓\n", 6<<20/14)
	text := jsontext.AppendQuote(nil, []byte(log))
	page := unix.Getpagesize()
	for _, prefix := range []int{0, 5, page - 3, page + 1000} {
		line := `{"structuredContent":` + strings.Repeat(" ", prefix) + structured + `,"content":[{"type":"text","text":` + string(text) + `}]}`
		m, err := unix.Mmap(-1, 0, len(line), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			t.Fatal(err)
		}
		r := m[:copy(m, line)]
		res, ok := Parse(r, nil)
		if !ok {
			t.Fatal("Parse failed")
		}
		moves := 0
		res.SetMove(func(dst, src []byte) bool {
			moves++
			_, _, errno := unix.Syscall6(unix.SYS_MREMAP, uintptr(unsafe.Pointer(unsafe.SliceData(src))), uintptr(len(src)), uintptr(len(src)),
				unix.MREMAP_MAYMOVE|unix.MREMAP_FIXED|unix.MREMAP_DONTUNMAP, uintptr(unsafe.Pointer(unsafe.SliceData(dst))), 0)
			return errno == 0
		})
		vals := values.New()
		h, ch := Store(vals, res.Structured(), res)
		v, _ := vals.Get(h)
		c, _ := vals.Get(ch)
		if ch == "" || string(v.Bytes()) != structured || string(c.Bytes()) != log {
			t.Fatalf("prefix %d: stored %q (%d bytes) and %q (%d bytes), want the structured content and the text", prefix, h, len(v.Bytes()), ch, len(c.Bytes()))
		}
		if moves < 4 {
			t.Errorf("prefix %d: %d moves of pages, want both values moved in steps", prefix, moves)
		}
		unix.Munmap(m)
	}
}

// FuzzTakeInPlace decodes the JSON string body, repeated over a few
// pages, in place in a line in a mapping of its own, whose pages are
// moved into the value, from any offset in a page: the value is the
// string's decoding.
func FuzzTakeInPlace(f *testing.F) {
	for _, seed := range []string{`a`, `\"x\"\\ \ud83d\ude00 \ud800 \u00e9 `, `line "one" ✓\n`, `\u0000\t\/`} {
		f.Add(seed, uint16(7))
	}
	page := unix.Getpagesize()
	f.Fuzz(func(t *testing.T, body string, offset uint16) {
		if body == "" || jsontext.Valid([]byte(`"`+body+`"`)) != nil {
			return
		}
		text := `"` + strings.Repeat(body, 3*page/len(body)+1) + `"`
		want := jsontext.AppendUnquoted(nil, []byte(text))
		line := `{"content":[{"type":"text","text":` + strings.Repeat(" ", int(offset)%page) + text + `}]}`
		m, err := unix.Mmap(-1, 0, len(line), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Munmap(m)
		res, ok := Parse(m[:copy(m, line)], nil)
		if !ok || len(res.texts) != 1 {
			t.Fatalf("Parse of %q: %v", line, ok)
		}
		res.SetMove(func(dst, src []byte) bool {
			_, _, errno := unix.Syscall6(unix.SYS_MREMAP, uintptr(unsafe.Pointer(unsafe.SliceData(src))), uintptr(len(src)), uintptr(len(src)),
				unix.MREMAP_MAYMOVE|unix.MREMAP_FIXED|unix.MREMAP_DONTUNMAP, uintptr(unsafe.Pointer(unsafe.SliceData(dst))), 0)
			return errno == 0
		})
		if got := res.takeInPlace(); !bytes.Equal(got, want) {
			t.Fatalf("body %q at offset %d: in place %q, want %q", body, offset, got, want)
		}
	})
}
