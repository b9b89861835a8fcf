package testkit

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// A Page is one page of a value, as read at an offset.
type Page struct {
	Content string // the page's bytes of the value
	Offset  int    // where Content starts in the value
	Next    int    // where the next page starts
	More    bool   // whether bytes follow Next
}

// ReadPages reads a value forward from offset 0, calling read once for each page
// at the offset the previous page gave as Next, until a page without More.
// It returns the pages' contents joined and the number of pages read
// (0 when the first read failed).
//
// It stops with an error when read fails, when a page starts elsewhere than
// asked or has Next other than the end of its Content, when a page with More
// is empty, or when maxPages pages have been read (0: no bound) and more
// follow.
func ReadPages(maxPages int, read func(offset int) (Page, error)) (content string, pages int, err error) {
	var all strings.Builder
	offset := 0
	for {
		if maxPages > 0 && pages == maxPages {
			return all.String(), pages, fmt.Errorf("no end after %d pages", pages)
		}
		p, err := read(offset)
		if err != nil {
			return all.String(), pages, fmt.Errorf("reading the page at %d: %w", offset, err)
		}
		pages++
		switch {
		case p.Offset != offset:
			return all.String(), pages, fmt.Errorf("the page read at %d starts at %d", offset, p.Offset)
		case p.Next != p.Offset+len(p.Content):
			return all.String(), pages, fmt.Errorf("the page at %d holds %d bytes but gives the next page at %d", offset, len(p.Content), p.Next)
		case p.More && p.Content == "":
			return all.String(), pages, fmt.Errorf("the page at %d is empty and says more follows", offset)
		}
		all.WriteString(p.Content)
		if !p.More {
			return all.String(), pages, nil
		}
		offset = p.Next
	}
}

// nextLine matches the last line of a read_value page that more follows:
// "[shown: bytes 0-4095 of 9000; next page: read_value {…,"offset":4096}]".
var nextLine = regexp.MustCompile(`\[shown: bytes (\d+)-(\d+) of \d+[^\]]*"offset":(\d+)\}\]$`)

// ParsePage returns the page that text, a read_value result read at offset,
// shows: its content and, when it ends with the line naming the next page,
// the bytes that line states and its offset. A text without that line is
// the last page, whole.
func ParsePage(offset int, text string) Page {
	m := nextLine.FindStringSubmatch(text)
	if m == nil {
		return Page{Content: text, Offset: offset, Next: offset + len(text)}
	}
	from, _ := strconv.Atoi(m[1])
	to, _ := strconv.Atoi(m[2])
	next, _ := strconv.Atoi(m[3])
	n := min(max(to-from+1, 0), len(text))
	return Page{Content: text[:n], Offset: from, Next: next, More: true}
}
