package browse

import (
	"context"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/internal/jsontext"
	"github.com/agentvalues/values/internal/mcpresult"
	"github.com/agentvalues/values/mcpproxy"
)

// Bounds of what one answer of the browser holds.
const (
	// PageBytes is the size of a page of text or JSON: the read_value
	// default, so a page costs what a read_value call does.
	PageBytes = values.DefaultReadLimit
	// MaxHandles bounds the handles listed by one answer; the page asks
	// for the next ones as it is scrolled ("more").
	MaxHandles = 500
	// MaxChildren bounds the children of an array or object one answer
	// lists, for the tree; "more" asks for the next ones.
	MaxChildren = 200
	// InlineChild is the largest child whose JSON an answer carries whole;
	// a larger one is listed with its size and opened on demand.
	InlineChild = 16 << 10
	// QueryShown bounds the bytes of a query's result shown; past it the
	// result is cut, and the page says how large it was.
	QueryShown = 256 << 10
	// maxTableProbe is the number of items looked at to decide whether an
	// array is a table and to find its columns.
	maxTableProbe = 50
	// maxColumns bounds the columns of a table: the keys of its first rows.
	maxColumns = 64
)

// api serves the JSON endpoint named by path.
func (h *handler) api(w http.ResponseWriter, req *http.Request, path string) {
	q := req.URL.Query()
	if path == "sessions" {
		h.sessions(w)
		return
	}
	vals, notes, ok := h.session(q.Get("session"))
	if !ok {
		apiError(w, http.StatusNotFound, "no live session has this id: it may have ended")
		return
	}
	switch path {
	case "handles":
		h.handles(w, vals, notes, intParam(q, "from", 0))
	case "value":
		h.value(w, vals, notes, q.Get("ref"))
	case "page":
		h.page(w, vals, q.Get("ref"), intParam(q, "offset", 0))
	case "children":
		h.children(w, vals, q.Get("ref"), intParam(q, "from", 0))
	case "rows":
		h.rows(w, req.Context(), vals, q.Get("ref"), intParam(q, "from", 0), intParam(q, "n", 50), q.Get("sort"), q.Get("desc") == "1")
	case "textrows":
		h.textRows(w, vals, q.Get("ref"), intParam(q, "offset", 0), q.Get("delim"))
	case "query":
		h.query(w, req.Context(), vals, q.Get("ref"), q.Get("jq"))
	case "download":
		h.download(w, vals, q.Get("ref"))
	default:
		apiError(w, http.StatusNotFound, "no such endpoint")
	}
}

func intParam(q map[string][]string, name string, def int) int {
	v := ""
	if s := q[name]; len(s) > 0 {
		v = s[0]
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return def
	}
	return n
}

// writeJSON answers v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.Encode(v) // HTML-escaped, as is encoding/json's default
}

// apiError answers an error the page shows as it is.
func apiError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// statusOf is the HTTP status of a store error.
func statusOf(err error) int {
	switch {
	case errors.Is(err, values.ErrUnknownHandle), errors.Is(err, values.ErrNoPath):
		return http.StatusNotFound
	case errors.Is(err, values.ErrUnavailable):
		return http.StatusServiceUnavailable
	}
	return http.StatusBadRequest
}

// session finds the live session whose id is id, its store and notes.
func (h *handler) session(id string) (*values.SessionValues, []mcpproxy.Note, bool) {
	for _, s := range h.src.Sessions() {
		if s.ID == id {
			if s.Values == nil {
				return values.New(), nil, true // nothing stored yet
			}
			return s.Values, h.src.Notes(s.Values), true
		}
	}
	return nil, nil, false
}

type statsJSON struct {
	Results  int64 `json:"results"`
	Returned int64 `json:"returned"`
	Shown    int64 `json:"shown"`
}

func statsOf(s mcpproxy.Stats) statsJSON {
	return statsJSON{Results: s.Results, Returned: s.Returned, Shown: s.Shown}
}

func (h *handler) sessions(w http.ResponseWriter) {
	type sessionJSON struct {
		ID      string    `json:"id"`
		Started time.Time `json:"started"`
		Handles int       `json:"handles"`
		Stats   statsJSON `json:"stats"`
	}
	list := []sessionJSON{}
	for _, s := range h.src.Sessions() {
		n := 0
		if s.Values != nil {
			n = s.Values.Len()
		}
		list = append(list, sessionJSON{ID: s.ID, Started: s.Started, Handles: n, Stats: statsOf(s.Stats)})
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": list, "totals": statsOf(h.src.Totals())})
}

// noteOf returns the note of the handle h, or of the result whose content
// blocks h holds, and whether h is that content handle.
func noteOf(notes []mcpproxy.Note, h string) (n mcpproxy.Note, content, ok bool) {
	for i := len(notes) - 1; i >= 0; i-- {
		switch h {
		case notes[i].Handle:
			return notes[i], false, true
		case notes[i].ContentHandle:
			return notes[i], true, true
		}
	}
	return mcpproxy.Note{}, false, false
}

type handleJSON struct {
	Handle    string    `json:"handle"`
	Kind      string    `json:"kind"`
	Size      int       `json:"size"`
	Len       int       `json:"len"`
	Tool      string    `json:"tool,omitempty"`
	Server    string    `json:"server,omitempty"`
	Time      time.Time `json:"time,omitzero"`
	Previewed bool      `json:"previewed"`
	Noted     bool      `json:"noted"`
}

func describe(vals *values.SessionValues, notes []mcpproxy.Note, h string) (handleJSON, values.Value, bool) {
	v, ok := vals.Get(h)
	if !ok {
		return handleJSON{}, v, false
	}
	d := handleJSON{Handle: h, Kind: v.Kind().String(), Size: v.Size(), Len: v.Len()}
	if n, _, ok := noteOf(notes, h); ok {
		d.Tool, d.Server, d.Time, d.Previewed, d.Noted = n.Tool, n.Server, n.Time, n.Previewed, true
	}
	return d, v, true
}

func (h *handler) handles(w http.ResponseWriter, vals *values.SessionValues, notes []mcpproxy.Note, from int) {
	all := vals.Handles()
	from = max(0, min(from, len(all)))
	end := min(len(all), from+MaxHandles)
	list := make([]handleJSON, 0, end-from)
	for _, hd := range all[from:end] {
		if d, _, ok := describe(vals, notes, hd); ok {
			list = append(list, d)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"handles": list, "total": len(all), "next": end})
}

// baseHandle returns the handle a ref starts with ("$r3.rows" → "r3").
func baseHandle(ref string) string {
	ref = strings.TrimPrefix(ref, "$")
	h, _, _ := strings.Cut(ref, ".")
	return h
}

// value describes the value under a handle: what it is, the text the
// model got for it, and the view the page opens it in.
func (h *handler) value(w http.ResponseWriter, vals *values.SessionValues, notes []mcpproxy.Note, ref string) {
	hd := baseHandle(ref)
	d, v, ok := describe(vals, notes, hd)
	if !ok {
		apiError(w, http.StatusNotFound, fmt.Sprintf("%q is not a stored value of this session", hd))
		return
	}
	out := map[string]any{"value": d, "lines": v.Lines(), "contentType": v.ContentType()}
	// What the model got: rendered again from the stored value, by the
	// rule that rendered it then (previews are a function of the value).
	n, content, noted := noteOf(notes, hd)
	switch {
	case !noted:
		obs, _ := vals.Transcript(hd)
		out["shown"], out["shownHow"] = obs.Text, "unknown"
	case n.Tool == "query_value":
		obs, _ := vals.Transcript(hd)
		out["shown"], out["shownHow"] = obs.Text, "query"
	case n.Previewed:
		out["shown"], out["shownHow"] = mcpresult.Preview(vals, n.Handle, n.ContentHandle), "preview"
	default:
		// Shown whole: the result's text (the value, as stored from its
		// text blocks joined by newlines), then the line naming its handle.
		line := mcpresult.HandleLine(vals, n.Handle, n.ContentHandle)
		if p, err := vals.Read(n.Handle, 0, values.MaxReadLimit); err == nil && !p.More && p.Encoding == "" {
			line = p.Content + "\n" + line
		}
		out["shown"], out["shownHow"] = line, "whole"
	}
	out["contentOf"] = ""
	if content {
		out["contentOf"] = n.Handle
	}
	out["view"], out["columns"], out["delim"] = viewOf(vals, hd, v)
	writeJSON(w, http.StatusOK, out)
}

// viewOf decides how the page shows v: "table" (an array of objects, with
// its columns), "tree" (other arrays and objects, and scalars), "text"
// (with "csv" or "tsv" when its first page reads as a delimited table) or
// "binary".
func viewOf(vals *values.SessionValues, h string, v values.Value) (view string, columns []string, delim string) {
	switch v.Kind() {
	case values.KindBinary:
		return "binary", nil, ""
	case values.KindText:
		return "text", nil, textTable(vals, h)
	case values.KindArray:
		if cols, ok := tableColumns(vals, h); ok {
			return "table", cols, ""
		}
	}
	return "tree", nil, ""
}

// tableColumns reports whether the array h is a table (its first items
// are objects) and returns its columns: the keys of its first items, in
// the order first seen.
func tableColumns(vals *values.SessionValues, h string) ([]string, bool) {
	var cols []string
	seen := map[string]bool{}
	objects, items := 0, 0
	vals.Items(h, 0, func(_ int, _, item []byte) bool {
		items++
		if item[0] == '{' {
			objects++
			jsontext.EachChild(item, func(key, _ []byte) bool {
				k := string(jsontext.AppendUnquoted(nil, key))
				if !seen[k] && len(cols) < maxColumns {
					seen[k] = true
					cols = append(cols, k)
				}
				return true
			})
		}
		return items < maxTableProbe
	})
	return cols, items > 0 && objects*2 > items && len(cols) > 0
}

// textTable returns "csv" or "tsv" when the first page of the text h reads
// as a table of that kind: at least two lines, each with the same number
// (at least two) of fields.
func textTable(vals *values.SessionValues, h string) string {
	p, err := vals.Read(h, 0, PageBytes)
	if err != nil {
		return ""
	}
	text := p.Content
	if p.More {
		if i := strings.LastIndexByte(text, '\n'); i > 0 {
			text = text[:i+1]
		}
	}
	for _, d := range []struct {
		name string
		sep  rune
	}{{"tsv", '\t'}, {"csv", ','}} {
		rows, err := readDelimited(text, d.sep, 20)
		if err != nil || len(rows) < 2 || len(rows[0]) < 2 {
			continue
		}
		same := true
		for _, r := range rows {
			same = same && len(r) == len(rows[0])
		}
		if same {
			return d.name
		}
	}
	return ""
}

// readDelimited reads up to max rows (all for max < 0) of a delimited text.
func readDelimited(text string, sep rune, max int) ([][]string, error) {
	r := csv.NewReader(strings.NewReader(text))
	r.Comma, r.FieldsPerRecord, r.LazyQuotes = sep, -1, true
	if sep == '\t' {
		r.LazyQuotes = true
	}
	var rows [][]string
	for max < 0 || len(rows) < max {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return rows, err
		}
		rows = append(rows, rec)
	}
	return rows, nil
}

type pageJSON struct {
	Content  string `json:"content"`
	Offset   int    `json:"offset"`
	Next     int    `json:"next"`
	Total    int    `json:"total"`
	More     bool   `json:"more"`
	Encoding string `json:"encoding,omitempty"`
}

// page answers a page of ref's text or JSON, as read_value reads it.
func (h *handler) page(w http.ResponseWriter, vals *values.SessionValues, ref string, offset int) {
	p, err := vals.Read(ref, max(offset, 0), PageBytes)
	if err != nil {
		apiError(w, statusOf(err), err.Error())
		return
	}
	writeJSON(w, http.StatusOK, pageJSON{Content: p.Content, Offset: p.Offset, Next: p.Next, Total: p.Total, More: p.More, Encoding: p.Encoding})
}

// textRows answers a page of a delimited text as rows of fields: the
// page's whole lines (a last line the page cuts is left to the next).
func (h *handler) textRows(w http.ResponseWriter, vals *values.SessionValues, ref string, offset int, delim string) {
	p, err := vals.Read(ref, max(offset, 0), PageBytes)
	if err != nil {
		apiError(w, statusOf(err), err.Error())
		return
	}
	text, next := p.Content, p.Next
	if p.More {
		if i := strings.LastIndexByte(text, '\n'); i > 0 {
			text, next = text[:i+1], p.Offset+i+1
		}
	}
	sep := ','
	if delim == "tsv" {
		sep = '\t'
	}
	rows, err := readDelimited(text, sep, -1)
	if err != nil && len(rows) == 0 {
		apiError(w, http.StatusBadRequest, "the text does not read as a delimited table here: "+err.Error())
		return
	}
	if rows == nil {
		rows = [][]string{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"rows": rows, "offset": p.Offset, "next": next, "total": p.Total, "more": next < p.Total})
}

type childJSON struct {
	Key  *string         `json:"key,omitempty"` // nil for an array item
	Kind string          `json:"kind"`
	Size int             `json:"size"`
	JSON json.RawMessage `json:"json,omitempty"` // whole, when at most InlineChild
	Ref  string          `json:"ref,omitempty"`  // to open it, when not whole; "" when no reference names it
}

// children answers a page of the children of the array or object ref
// names, for the tree.
func (h *handler) children(w http.ResponseWriter, vals *values.SessionValues, ref string, from int) {
	list := []childJSON{}
	more := false
	err := vals.Items(ref, max(from, 0), func(i int, key, item []byte) bool {
		if len(list) == MaxChildren {
			more = true
			return false
		}
		c := childJSON{Kind: kindOfJSON(item), Size: len(item)}
		seg := strconv.Itoa(i)
		if key != nil {
			k := string(jsontext.AppendUnquoted(nil, key))
			c.Key = &k
			seg = escapeSegment(k)
		}
		if len(item) <= InlineChild {
			c.JSON = json.RawMessage(item)
		} else if seg != "" {
			c.Ref = "$" + strings.TrimPrefix(ref, "$") + "." + seg
		}
		list = append(list, c)
		return true
	})
	if err != nil {
		apiError(w, statusOf(err), err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"children": list, "from": from, "next": from + len(list), "more": more})
}

// escapeSegment writes key as a segment of a reference path: '.' and '\'
// escaped; "" for a key no segment can name (the empty key).
func escapeSegment(key string) string {
	if key == "" {
		return ""
	}
	key = strings.ReplaceAll(key, `\`, `\\`)
	return strings.ReplaceAll(key, ".", `\.`)
}

// kindOfJSON names the kind of the JSON value d.
func kindOfJSON(d []byte) string {
	switch d[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "text"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	}
	return "number"
}

// query runs a jq program over ref as query_value does, storing nothing,
// and answers its result, cut at QueryShown.
func (h *handler) query(w http.ResponseWriter, ctx context.Context, vals *values.SessionValues, ref, expr string) {
	out, n, err := vals.QueryJSON(ctx, ref, expr)
	if err != nil {
		apiError(w, http.StatusBadRequest, err.Error())
		return
	}
	size := len(out)
	cut := false
	if len(out) > QueryShown {
		end := QueryShown
		for end > 0 && !utf8.RuneStart(out[end]) {
			end--
		}
		out, cut = out[:end], true
	}
	writeJSON(w, http.StatusOK, map[string]any{"result": string(out), "values": n, "size": size, "cut": cut})
}

// download streams the bytes of ref as an attachment: a binary value's
// bytes, a text's text, other values' JSON. A stored value is written as
// the store holds it (values.Value.WriteTo: no copy); a part of one, page
// by page, never the whole part at once.
func (h *handler) download(w http.ResponseWriter, vals *values.SessionValues, ref string) {
	first, err := vals.Read(ref, 0, values.MaxReadLimit)
	if err != nil {
		apiError(w, statusOf(err), err.Error())
		return
	}
	name := strings.NewReplacer("$", "", "\\", "_", "/", "_", "\"", "_").Replace(ref)
	if len(name) > 64 {
		name = name[:64]
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`.bin"`)
	if v, ok := vals.Get(strings.TrimPrefix(ref, "$")); ok {
		w.Header().Set("Content-Length", strconv.Itoa(v.Size()))
		v.WriteTo(w)
		return
	}
	pages := &pageReader{vals: vals, ref: ref, page: first}
	var r io.Reader = pages
	if first.Encoding == "base64" {
		r = base64.NewDecoder(base64.StdEncoding, pages)
	} else {
		w.Header().Set("Content-Length", strconv.Itoa(first.Total))
	}
	io.Copy(w, r)
}

// pageReader reads a value's paged text, a page at a time.
type pageReader struct {
	vals *values.SessionValues
	ref  string
	page values.Page
	at   int // in page.Content
}

func (r *pageReader) Read(b []byte) (int, error) {
	for r.at == len(r.page.Content) {
		if !r.page.More {
			return 0, io.EOF
		}
		p, err := r.vals.Read(r.ref, r.page.Next, values.MaxReadLimit)
		if err != nil {
			return 0, err
		}
		r.page, r.at = p, 0
	}
	n := copy(b, r.page.Content[r.at:])
	r.at += n
	return n, nil
}
