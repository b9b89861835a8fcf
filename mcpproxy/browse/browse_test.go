package browse_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/agentvalues/values/mcpproxy"
	"github.com/agentvalues/values/mcpproxy/browse"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const token = "unit-token-7f"

// pngBytes is the start of a PNG: binary, not UTF-8.
var pngBytes = append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), bytes.Repeat([]byte{0xff, 0x00, 0xfe}, 40000)...)

// fixture is a proxy over an in-process server, a client that stored
// values through it, and the browser over the proxy.
type fixture struct {
	cs      *mcp.ClientSession
	proxy   *mcpproxy.Proxy
	srv     *httptest.Server
	session string
}

// rowsJSON is the rows tool's result for n: objects with a number, a
// string (with escapes and non-ASCII), a sometimes missing or null field.
func rowsJSON(n int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		name := fmt.Sprintf(`n\"%03d \u00e9`, (i*37)%n)
		switch i % 5 {
		case 0:
			fmt.Fprintf(&b, `{"id":%d,"name":"%s"}`, (i*7)%n, name)
		case 1:
			fmt.Fprintf(&b, `{"id":%d,"name":"%s","x":null}`, (i*7)%n, name)
		default:
			fmt.Fprintf(&b, `{"id":%d,"name":"%s","x":%d}`, (i*7)%n, name, i%13)
		}
	}
	b.WriteByte(']')
	return b.String()
}

func newFixture(t *testing.T, opts *browse.Options) *fixture {
	t.Helper()
	ctx := context.Background()
	s := mcp.NewServer(&mcp.Implementation{Name: "unit", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "rows", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ N int }
			json.Unmarshal(req.Params.Arguments, &in)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: rowsJSON(in.N)}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "doc", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			doc, _ := json.Marshal(map[string]any{"a.b": strings.Repeat("x", 40000), "small": 1, "": []int{1, 2}, "list": make([]int, 300)})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(doc)}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "csv", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var b strings.Builder
			b.WriteString("id,name,note\n")
			for i := range 3000 {
				fmt.Fprintf(&b, "%d,item %d,\"a, <b>quoted</b> \"\"note\"\"\"\n", i, i)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}}, nil
		})
	s.AddResource(&mcp.Resource{URI: "file:///img.png", Name: "img", MIMEType: "image/png"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "file:///img.png", MIMEType: "image/png", Blob: pngBytes}}}, nil
		})
	down, up := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, down, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	p, err := mcpproxy.Connect(ctx, up, &mcpproxy.Options{PerSession: true, Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	pt, ct := mcp.NewInMemoryTransports()
	if _, err := p.Server().Connect(ctx, pt, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	mux := http.NewServeMux()
	h := browse.Handler(p, opts)
	mux.Handle("/values", h)
	mux.Handle("/values/", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &fixture{cs: cs, proxy: p, srv: srv}
}

func (f *fixture) call(t *testing.T, name, args string) string {
	t.Helper()
	res, err := f.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
	if err != nil || res.IsError {
		t.Fatalf("%s: %v %v", name, err, res)
	}
	h, _ := res.Meta[mcpproxy.MetaHandle].(string)
	return h
}

// get fetches path with the bearer token (and extra headers, name and
// value pairs) and returns the status and body.
func (f *fixture) get(t *testing.T, path string, headers ...string) (int, http.Header, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", f.srv.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, body
}

func (f *fixture) api(t *testing.T, path string, v any) {
	t.Helper()
	status, _, body := f.get(t, "/values/api/"+path)
	if status != http.StatusOK {
		t.Fatalf("%s: %d %s", path, status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("%s: %v: %s", path, err, body)
	}
}

func TestAuth(t *testing.T) {
	f := newFixture(t, &browse.Options{Token: token})
	for _, tc := range []struct {
		name    string
		path    string
		headers []string
		want    int
	}{
		{"bearer", "/values/api/sessions", nil, 200},
		{"none", "/values/api/sessions", []string{"Authorization", ""}, 401},
		{"page without", "/values", []string{"Authorization", ""}, 401},
		{"wrong bearer", "/values", []string{"Authorization", "Bearer x"}, 401},
		{"basic", "/values", []string{"Authorization", "Basic " + token}, 401},
		{"wrong token login", "/values?token=x", []string{"Authorization", ""}, 401},
		{"token elsewhere", "/values/api/sessions?token=" + token, []string{"Authorization", ""}, 401},
		{"cookie of the token", "/values", []string{"Authorization", "", "Cookie", browse.CookieName + "=" + token}, 401},
	} {
		if status, h, _ := f.get(t, tc.path, tc.headers...); status != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, status, tc.want)
		} else if h.Get("Content-Security-Policy") == "" || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: security headers missing: %v", tc.name, h)
		}
	}
	// Logging in: a redirect that sets the cookie, which then opens the
	// page and the API.
	status, h, _ := f.get(t, "/values?token="+token, "Authorization", "")
	cookies := (&http.Response{Header: h}).Cookies()
	if status != http.StatusSeeOther || h.Get("Location") != "/values" || len(cookies) != 1 {
		t.Fatalf("login: %d %v", status, h)
	}
	c := cookies[0]
	if c.Name != browse.CookieName || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/values" || strings.Contains(c.Value, token) {
		t.Errorf("cookie %+v", c)
	}
	for _, path := range []string{"/values", "/values/api/sessions", "/values/static/app.js"} {
		if status, _, _ := f.get(t, path, "Authorization", "", "Cookie", c.Name+"="+c.Value); status != 200 {
			t.Errorf("%s with the cookie: %d", path, status)
		}
	}
	req, _ := http.NewRequest("POST", f.srv.URL+"/values/api/sessions", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %v %v", resp, err)
	}
}

// TestNoTokenHost: without a token, a request must name the listener in
// its Host, so that a page of another site cannot reach it by a DNS name.
func TestNoTokenHost(t *testing.T) {
	f := newFixture(t, nil)
	port := f.srv.URL[strings.LastIndexByte(f.srv.URL, ':'):]
	for host, want := range map[string]int{
		"127.0.0.1" + port:        200,
		"localhost" + port:        200,
		"evil.example" + port:     403,
		"127.0.0.1:1":             403,
		"attacker.localhost.test": 403,
	} {
		req, _ := http.NewRequest("GET", f.srv.URL+"/values/api/sessions", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, resp.StatusCode, want)
		}
	}
}

type rowsReply struct {
	Rows []struct {
		I    int
		JSON json.RawMessage
		Size int
	}
	Total    int
	Sorted   bool
	SortNote string
}

// TestRows pages and sorts a table, and checks every page of every order
// against the rows sorted here.
func TestRows(t *testing.T) {
	f := newFixture(t, &browse.Options{Token: token})
	const n = 3000
	h := f.call(t, "rows", fmt.Sprintf(`{"n":%d}`, n))
	var all []map[string]any
	json.Unmarshal([]byte(rowsJSON(n)), &all)
	type row struct {
		i int
		v map[string]any
	}
	for _, col := range []string{"", "id", "name", "x"} {
		for _, desc := range []bool{false, true} {
			want := make([]row, n)
			for i, v := range all {
				want[i] = row{i, v}
			}
			if col != "" {
				slices.SortStableFunc(want, func(a, b row) int {
					x, okx := a.v[col]
					y, oky := b.v[col]
					switch {
					case (!okx || x == nil) && (!oky || y == nil):
						if okx != oky { // null before missing
							if okx {
								return -1
							}
							return 1
						}
						return 0
					case !okx || x == nil:
						return 1
					case !oky || y == nil:
						return -1
					}
					c := 0
					switch x := x.(type) {
					case float64:
						c = int(x - y.(float64))
					case string:
						c = strings.Compare(x, y.(string))
					}
					if desc {
						c = -c
					}
					return c
				})
			}
			var got []int
			for from := 0; from < n; from += 700 {
				var r rowsReply
				d := "0"
				if desc {
					d = "1"
				}
				f.api(t, fmt.Sprintf("rows?session=%s&ref=%s&from=%d&n=700&sort=%s&desc=%s", f.session, h, from, col, d), &r)
				if r.Total != n || r.Sorted != (col != "") || len(r.Rows) != min(browse.MaxRows, n-from) {
					t.Fatalf("sort %q from %d: total %d, sorted %v, %d rows", col, from, r.Total, r.Sorted, len(r.Rows))
				}
				for _, x := range r.Rows[:min(700, len(r.Rows))] {
					got = append(got, x.I)
					var v map[string]any
					if err := json.Unmarshal(x.JSON, &v); err != nil || !cmp.Equal(v, all[x.I]) {
						t.Fatalf("row %d: %s, want %v", x.I, x.JSON, all[x.I])
					}
				}
				from -= 700 - len(r.Rows) // pages of MaxRows
			}
			var wantI []int
			for _, w := range want {
				wantI = append(wantI, w.i)
			}
			if diff := cmp.Diff(wantI, got); diff != "" {
				t.Errorf("order by %q (desc %v), -want +got:\n%s", col, desc, diff)
			}
		}
	}
	var r rowsReply
	f.api(t, fmt.Sprintf("rows?session=&ref=%s&from=%d&n=10", h, n+5), &r)
	if len(r.Rows) != 0 {
		t.Errorf("past the end: %d rows", len(r.Rows))
	}
}

// TestSortBound: a table of more than MaxSortRows rows is not sorted on
// the server, and the answer says so.
func TestSortBound(t *testing.T) {
	f := newFixture(t, &browse.Options{Token: token})
	h := f.call(t, "rows", fmt.Sprintf(`{"n":%d}`, browse.MaxSortRows+1))
	var r rowsReply
	f.api(t, "rows?session=&ref="+h+"&from=0&n=5&sort=id", &r)
	if r.Sorted || !strings.Contains(r.SortNote, "only the rows shown are sorted") || len(r.Rows) != 5 || r.Rows[0].I != 0 {
		t.Errorf("a table past MaxSortRows: sorted %v, note %q, rows %d", r.Sorted, r.SortNote, len(r.Rows))
	}
}

func TestDownloadQueryChildren(t *testing.T) {
	f := newFixture(t, &browse.Options{Token: token})
	rows := f.call(t, "rows", `{"n":8000}`)
	doc := f.call(t, "doc", `{}`)
	res, err := f.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "file:///img.png"})
	if err != nil {
		t.Fatal(err)
	}
	img, _ := res.Contents[0].Meta[mcpproxy.MetaHandle].(string)

	// Downloads: the bytes as stored, streamed page by page.
	for _, tc := range []struct {
		ref  string
		want []byte
	}{{img, pngBytes}, {rows, []byte(rowsJSON(8000))}} {
		status, h, body := f.get(t, "/values/api/download?session=&ref="+tc.ref)
		if status != 200 || !bytes.Equal(body, tc.want) || !strings.HasPrefix(h.Get("Content-Disposition"), "attachment;") || h.Get("Content-Type") != "application/octet-stream" {
			t.Errorf("download %s: %d, %d bytes (want %d), %v", tc.ref, status, len(body), len(tc.want), h)
		}
	}
	var v struct {
		View        string
		ContentType string
		Shown       string
		ShownHow    string
	}
	f.api(t, "value?session=&ref="+img, &v)
	if v.View != "binary" || v.ContentType != "image/png" || v.ShownHow != "preview" || !strings.HasPrefix(v.Shown, img+" = ") {
		t.Errorf("the image: %+v", v)
	}

	// Queries: as query_value, storing nothing, cut at QueryShown.
	before := f.proxy.Sessions()[0].Values.Len()
	var q struct {
		Result string
		Values int
		Size   int
		Cut    bool
	}
	f.api(t, "query?session=&ref="+rows+"&jq="+`map(.id)%20|%20max`, &q)
	if q.Result != "7999" || q.Values != 1 || q.Cut {
		t.Errorf("query: %+v", q)
	}
	f.api(t, "query?session=&ref="+rows+"&jq=.", &q)
	if !q.Cut || len(q.Result) > browse.QueryShown || q.Size <= browse.QueryShown {
		t.Errorf("a large query result: cut %v, %d bytes shown of %d", q.Cut, len(q.Result), q.Size)
	}
	status, _, body := f.get(t, "/values/api/query?session=&ref="+rows+"&jq=error(%22no%22)")
	if status != 400 || !strings.Contains(string(body), "no") {
		t.Errorf("a failing query: %d %s", status, body)
	}
	if after := f.proxy.Sessions()[0].Values.Len(); after != before {
		t.Errorf("queries stored values: %d, then %d", before, after)
	}

	// A delimited text: a table, page by page of whole lines.
	csvH := f.call(t, "csv", `{}`)
	var cv struct{ View, Delim string }
	f.api(t, "value?session=&ref="+csvH, &cv)
	if cv.View != "text" || cv.Delim != "csv" {
		t.Errorf("a CSV text: view %q, delim %q", cv.View, cv.Delim)
	}
	var tr struct {
		Rows [][]string
		Next int
		More bool
	}
	next, rowsSeen := 0, 0
	for {
		f.api(t, fmt.Sprintf("textrows?session=&ref=%s&offset=%d&delim=csv", csvH, next), &tr)
		for _, r := range tr.Rows {
			want := []string{"id", "name", "note"}
			if rowsSeen > 0 {
				want = []string{fmt.Sprint(rowsSeen - 1), fmt.Sprintf("item %d", rowsSeen-1), `a, <b>quoted</b> "note"`}
			}
			if !cmp.Equal(r, want) {
				t.Fatalf("CSV row %d: %q, want %q", rowsSeen, r, want)
			}
			rowsSeen++
		}
		if !tr.More {
			break
		}
		next = tr.Next
	}
	if rowsSeen != 3001 {
		t.Errorf("the CSV read as %d rows, want 3001", rowsSeen)
	}

	// Children: small ones whole, a large one by the reference that opens
	// it, which escapes its key; the empty key, which no reference names,
	// without one.
	var c struct {
		Children []struct {
			Key  *string
			Kind string
			Size int
			JSON json.RawMessage
			Ref  string
		}
		More bool
	}
	f.api(t, "children?session=&ref="+doc, &c)
	byKey := map[string]int{}
	for i, ch := range c.Children {
		byKey[*ch.Key] = i
	}
	if big := c.Children[byKey["a.b"]]; big.JSON != nil || big.Ref != "$"+doc+`.a\.b` || big.Kind != "text" {
		t.Errorf("the large child: %+v", big)
	}
	if small := c.Children[byKey["small"]]; string(small.JSON) != "1" {
		t.Errorf("a small child: %+v", small)
	}
	var p struct{ Content string }
	f.api(t, "page?session=&ref="+strings.ReplaceAll(c.Children[byKey["a.b"]].Ref, `\`, `%5C`)+"&offset=0", &p)
	if len(p.Content) < 1000 || strings.Trim(p.Content, "x") != "" {
		t.Errorf("opening the large child: %.40q", p.Content)
	}
	f.api(t, "children?session=&ref=$"+doc+".list&from=0", &c)
	if len(c.Children) != browse.MaxChildren || !c.More {
		t.Errorf("children of a list of 300: %d, more %v", len(c.Children), c.More)
	}
	status, _, _ = f.get(t, "/values/api/children?session=nosuch&ref="+doc)
	if status != 404 {
		t.Errorf("an unknown session: %d", status)
	}
}
