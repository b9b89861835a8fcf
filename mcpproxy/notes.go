package mcpproxy

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/internal/jsontext"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What the proxy notes of the values it stores, for a reader of its live
// sessions (the value browser, mcpproxy/browse): for each value a tool
// call, a resource read or a query stored, which tool of which server
// returned it and when, and how it reached the agent; and, per store and
// overall, how many results were stored and how many bytes the tools
// returned against how many reached the agent. The notes are taken where
// the result is presented (finishCall, presentResource, handleQueryValue),
// once per result, under a lock of the store's own (the counters overall
// are atomic): the cost is a few words and one lock per call.

// MaxNotes bounds the values a session's notes describe: the most recent
// MaxNotes results stored. Older ones are still listed and readable (the
// store holds them), without their tool, server and time; the counters
// ([Stats]) count every result.
const MaxNotes = 4096

// maxNoteTool bounds the bytes of a noted tool name or resource URI (a
// name is short; a URI may not be).
const maxNoteTool = 256

// A Note is what the proxy noted of one stored result.
type Note struct {
	Handle string // its handle, "r3"
	// ContentHandle is the handle of the result's content blocks when
	// they were stored apart from its structured content, else "".
	ContentHandle string
	Tool          string    // the tool called as the agent named it, "query_value", or "resources/read URI"
	Server        string    // the server that returned it: its name in a gateway, its own name behind a proxy; "" for query_value
	Time          time.Time // when it was stored
	// Previewed reports whether the agent got a preview and hint in place
	// of the result, rather than the result whole.
	Previewed bool
	// Returned is the bytes the result stored (its values' sizes); Shown
	// the bytes of text and structured content the agent got for it.
	Returned, Shown int
}

// Stats counts the results a session (or the proxy, overall) stored.
type Stats struct {
	Results  int64 // results stored: tool results, resource contents, query results
	Returned int64 // bytes the tools returned, as stored
	Shown    int64 // bytes of text and structured content that reached the agent for them
}

// A SessionInfo describes one live upstream session, for a reader.
type SessionInfo struct {
	ID      string    // its Mcp-Session-Id; "" on stdio
	Started time.Time // when the proxy first saw it
	// Values is its store, nil until it stores its first value. With one
	// store for every session (not Options.PerSession) every session has
	// the same.
	Values *values.SessionValues
	Stats  Stats // of its store
}

// noteLog is the notes of one store.
type noteLog struct {
	mu    sync.Mutex
	ring  []Note // at most MaxNotes, oldest first from next once full
	next  int    // where the next note goes once ring is full
	stats Stats
}

// counters are the Stats overall, kept by stores.
type counters struct {
	results, returned, shown atomic.Int64
}

// logOf returns the notes of the store vals, made at first use.
func (st *stores) logOf(vals *values.SessionValues) *noteLog {
	if l, ok := st.notes.Load(vals); ok {
		return l.(*noteLog)
	}
	l, _ := st.notes.LoadOrStore(vals, &noteLog{})
	return l.(*noteLog)
}

// note records n, a result stored in vals.
func (st *stores) note(vals *values.SessionValues, n Note) {
	if len(n.Tool) > maxNoteTool {
		n.Tool = jsontext.ClipString(n.Tool[:maxNoteTool])
	}
	st.total.results.Add(1)
	st.total.returned.Add(int64(n.Returned))
	st.total.shown.Add(int64(n.Shown))
	l := st.logOf(vals)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stats.Results++
	l.stats.Returned += int64(n.Returned)
	l.stats.Shown += int64(n.Shown)
	if len(l.ring) < MaxNotes {
		l.ring = append(l.ring, n)
		return
	}
	l.ring[l.next] = n
	l.next = (l.next + 1) % MaxNotes
}

// forget drops the notes of vals, a store no session uses any more.
func (st *stores) forget(vals *values.SessionValues) {
	st.notes.Delete(vals)
}

// valueSize is the size of the value under h in vals, 0 for none.
func valueSize(vals *values.SessionValues, h string) int {
	if h == "" {
		return 0
	}
	v, _ := vals.Get(h)
	return v.Size()
}

// noteResult notes the result out that the agent got for a call of tool
// on server, whose result went to vals.
func (st *stores) noteResult(vals *values.SessionValues, tool, server string, out *mcp.CallToolResult) {
	h, _ := out.Meta[MetaHandle].(string)
	if h == "" {
		return
	}
	ch, _ := out.Meta[MetaContentHandle].(string)
	shown := 0
	for _, c := range out.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			shown += len(t.Text)
		}
	}
	if raw, ok := out.StructuredContent.(json.RawMessage); ok {
		shown += len(raw)
	}
	st.note(vals, Note{
		Handle: h, ContentHandle: ch, Tool: tool, Server: server, Time: time.Now(),
		Previewed: isPreview(h, out),
		Returned:  valueSize(vals, h) + valueSize(vals, ch),
		Shown:     shown,
	})
}

// isPreview reports whether out, the result present built for the value
// h, is a preview: a result shown whole ends with the line naming its
// handle (mcpresult.HandleLine: "[stored as r3 (…"), which a preview
// never does. It reads no more than that line's start: it runs on every
// call.
func isPreview(h string, out *mcp.CallToolResult) bool {
	if len(out.Content) == 0 {
		return true
	}
	t, ok := out.Content[len(out.Content)-1].(*mcp.TextContent)
	const head = "[stored as "
	if !ok || !strings.HasPrefix(t.Text, head) {
		return true
	}
	rest := t.Text[len(head):] // h and " (", without making h+" (" on every call
	return !strings.HasPrefix(rest, h) || !strings.HasPrefix(rest[len(h):], " (")
}

// notesOf returns the notes of the store vals, oldest first.
func (st *stores) notesOf(vals *values.SessionValues) ([]Note, Stats) {
	if vals == nil {
		return nil, Stats{}
	}
	l, ok := st.notes.Load(vals)
	if !ok {
		return nil, Stats{}
	}
	nl := l.(*noteLog)
	nl.mu.Lock()
	defer nl.mu.Unlock()
	return append(slices.Clone(nl.ring[nl.next:]), nl.ring[:nl.next]...), nl.stats
}

// sessions returns the live upstream sessions, oldest first.
func (st *stores) sessions() []SessionInfo {
	var out []SessionInfo
	st.live.all.Range(func(_, v any) bool {
		s := v.(*session)
		if s.ctx.Err() != nil {
			return true // ending
		}
		info := SessionInfo{ID: s.ss.ID(), Started: s.started, Values: s.vals.Load()}
		if st.shared != nil {
			info.Values = st.shared
		}
		_, info.Stats = st.notesOf(info.Values)
		out = append(out, info)
		return true
	})
	slices.SortFunc(out, func(a, b SessionInfo) int {
		if c := a.Started.Compare(b.Started); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// totals returns the Stats overall.
func (st *stores) totals() Stats {
	return Stats{Results: st.total.results.Load(), Returned: st.total.returned.Load(), Shown: st.total.shown.Load()}
}

// Sessions returns the live upstream sessions of p, oldest first. It is
// safe for concurrent use; what it returns is a snapshot.
func (p *Proxy) Sessions() []SessionInfo { return p.stores.sessions() }

// Sessions returns the live upstream sessions of g, as [Proxy.Sessions]
// does.
func (g *Gateway) Sessions() []SessionInfo { return g.stores.sessions() }

// Notes returns what p noted of the results stored in vals, a store of
// one of its sessions, oldest first: at most [MaxNotes], the most recent.
func (p *Proxy) Notes(vals *values.SessionValues) []Note {
	n, _ := p.stores.notesOf(vals)
	return n
}

// Notes returns what g noted of the results stored in vals, as
// [Proxy.Notes] does.
func (g *Gateway) Notes(vals *values.SessionValues) []Note {
	n, _ := g.stores.notesOf(vals)
	return n
}

// Totals returns the Stats of every result p stored since it started,
// in sessions that ended too.
func (p *Proxy) Totals() Stats { return p.stores.totals() }

// Totals returns the Stats of every result g stored, as [Proxy.Totals]
// does.
func (g *Gateway) Totals() Stats { return g.stores.totals() }
