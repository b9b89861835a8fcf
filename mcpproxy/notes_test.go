package mcpproxy

import (
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestNotes: each result stored is noted with its tool, server and how it
// reached the agent, and counted per session and overall, the bytes
// returned against the bytes shown.
func TestNotes(t *testing.T) {
	f := newFixture(t, nil, nil)
	big := f.call(t, "list_items", `{"n":500}`)
	small := f.call(t, "echo", `{"path":"a","value":1}`)
	q := f.call(t, "query_value", `{"ref":"r1","jq":".items | length"}`)
	f.call(t, "read_value", `{"ref":"r1"}`) // stores nothing

	sessions := f.proxy.Sessions()
	if len(sessions) != 1 || sessions[0].Values != f.proxy.Values() {
		t.Fatalf("Sessions() = %+v, want the one session over the proxy's store", sessions)
	}
	notes := f.proxy.Notes(f.proxy.Values())
	size := func(h string) int {
		v, _ := f.proxy.Values().Get(h)
		return v.Size()
	}
	shown := func(res *mcp.CallToolResult) int {
		n := 0
		for _, c := range res.Content {
			n += len(c.(*mcp.TextContent).Text)
		}
		return n
	}
	want := []Note{
		{Handle: "r1", Tool: "list_items", Server: "testserver", Previewed: true, Returned: size("r1"), Shown: shown(big)},
		{Handle: "r2", Tool: "echo", Server: "testserver", Returned: size("r2"), Shown: shown(small)},
		{Handle: "r3", Tool: "query_value", Returned: size("r3"), Shown: shown(q)},
	}
	if diff := cmp.Diff(want, notes, cmpopts.IgnoreFields(Note{}, "Time")); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
	for _, n := range notes {
		if n.Time.IsZero() {
			t.Errorf("%s noted without a time", n.Handle)
		}
	}
	var stats Stats
	for _, n := range want {
		stats.Results++
		stats.Returned += int64(n.Returned)
		stats.Shown += int64(n.Shown)
	}
	if sessions[0].Stats != stats || f.proxy.Totals() != stats {
		t.Errorf("session stats %+v, totals %+v; want %+v", sessions[0].Stats, f.proxy.Totals(), stats)
	}
	if stats.Returned <= stats.Shown {
		t.Errorf("returned %d bytes, shown %d: the preview of 500 items should be smaller", stats.Returned, stats.Shown)
	}
}

// TestNotesBounded: a store's notes keep the most recent MaxNotes, in
// order, and count every one, under concurrent notes and reads.
func TestNotesBounded(t *testing.T) {
	st := newStores(&Options{})
	vals := st.shared
	const writers, each = 4, MaxNotes/2 + 7
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				st.note(vals, Note{Handle: "r1", Tool: "t", Returned: w, Shown: i})
				if i%512 == 0 {
					st.notesOf(vals)
					st.sessions()
				}
			}
		}()
	}
	wg.Wait()
	notes, stats := st.notesOf(vals)
	if len(notes) != MaxNotes {
		t.Errorf("%d notes kept, want %d", len(notes), MaxNotes)
	}
	if stats.Results != writers*each || st.totals() != stats {
		t.Errorf("stats %+v, totals %+v; want %d results", stats, st.totals(), writers*each)
	}
	// Each writer's notes are kept in its order.
	last := map[int]int{}
	for _, n := range notes {
		if prev, ok := last[n.Returned]; ok && n.Shown <= prev {
			t.Fatalf("writer %d: note %d after %d", n.Returned, n.Shown, prev)
		}
		last[n.Returned] = n.Shown
	}
}

// TestIsPreview: a result is shown whole when its last block is the line
// naming its own handle, and a preview otherwise (a line naming another
// handle, r10 for r1, included).
func TestIsPreview(t *testing.T) {
	line := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "x"}, &mcp.TextContent{Text: s}}}
	}
	for _, c := range []struct {
		h, last string
		want    bool
	}{
		{"r1", "[stored as r1 (object, 1 key, 11 B): …]", false},
		{"r1", "[stored as r10 (object, 1 key, 11 B): …]", true},
		{"r10", "[stored as r1 (object …]", true},
		{"r1", "[stored as r1", true},
		{"r1", "preview", true},
	} {
		if got := isPreview(c.h, line(c.last)); got != c.want {
			t.Errorf("isPreview(%s, %q) = %v, want %v", c.h, c.last, got, c.want)
		}
	}
	if !isPreview("r1", &mcp.CallToolResult{}) {
		t.Error("a result of no blocks is not a preview")
	}
}
