package testkit

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// pager pages text in pages of n bytes, as a correct reader does.
func pager(text string, n int) func(int) (Page, error) {
	return func(off int) (Page, error) {
		end := min(off+n, len(text))
		return Page{Content: text[off:end], Offset: off, Next: end, More: end < len(text)}, nil
	}
}

func TestReadPages(t *testing.T) {
	errRead := errors.New("read failed")
	for _, tc := range []struct {
		name      string
		maxPages  int
		read      func(int) (Page, error)
		want      string
		wantPages int
		wantErr   string // in the error; "" for none
	}{
		{"one page", 0, pager("abc", 10), "abc", 1, ""},
		{"pages", 0, pager("abcdefg", 3), "abcdefg", 3, ""},
		{"empty value", 0, pager("", 3), "", 1, ""},
		{"within the bound", 3, pager("abcdefg", 3), "abcdefg", 3, ""},
		{"past the bound", 2, pager("abcdefg", 3), "abcdef", 2, "no end after 2 pages"},
		{"first read fails", 0, func(int) (Page, error) { return Page{}, errRead }, "", 0, "read failed"},
		{"a later read fails", 0, func(off int) (Page, error) {
			if off > 0 {
				return Page{}, errRead
			}
			return pager("abcdefg", 3)(off)
		}, "abc", 1, "reading the page at 3: read failed"},
		{"starts elsewhere", 0, func(off int) (Page, error) {
			p, _ := pager("abcdefg", 3)(off)
			p.Offset++
			return p, nil
		}, "", 1, "the page read at 0 starts at 1"},
		{"next not at the end", 0, func(off int) (Page, error) {
			p, _ := pager("abcdefg", 3)(off)
			p.Next++
			return p, nil
		}, "", 1, "holds 3 bytes but gives the next page at 4"},
		{"empty page with more", 0, func(off int) (Page, error) {
			return Page{Offset: off, Next: off, More: true}, nil
		}, "", 1, "is empty and says more follows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, pages, err := ReadPages(tc.maxPages, tc.read)
			if got != tc.want || pages != tc.wantPages {
				t.Errorf("ReadPages = %q, %d pages; want %q, %d", got, pages, tc.want, tc.wantPages)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want one saying %q", err, tc.wantErr)
			}
		})
	}
	if _, _, err := ReadPages(0, func(int) (Page, error) { return Page{}, errRead }); !errors.Is(err, errRead) {
		t.Errorf("error %v does not wrap the read's", err)
	}
}

func TestParsePage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		offset int
		text   string
		want   Page
	}{
		{"last page", 8, "the rest", Page{Content: "the rest", Offset: 8, Next: 16}},
		{"a page of more", 0, "abcd\n[shown: bytes 0-3 of 10; next page: read_value {\"ref\":\"r1\",\"offset\":4}]",
			Page{Content: "abcd", Offset: 0, Next: 4, More: true}},
		{"ending in a newline", 4, "ef\n\n[shown: bytes 4-6 of 10; next page: read_value {\"ref\":\"$r1.a\",\"offset\":7}]",
			Page{Content: "ef\n", Offset: 4, Next: 7, More: true}},
		{"base64", 0, "QUJD\n[shown: bytes 0-3 of 8 (base64); next page: read_value {\"ref\":\"r2\",\"offset\":4}]",
			Page{Content: "QUJD", Offset: 0, Next: 4, More: true}},
		{"the end line of an empty value", 0, `[end of "r1": 0 bytes in all, none at offset 0]`,
			Page{Content: `[end of "r1": 0 bytes in all, none at offset 0]`, Offset: 0, Next: 47}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ParsePage(tc.offset, tc.text)); diff != "" {
				t.Errorf("ParsePage (-want +got):\n%s", diff)
			}
		})
	}
}
