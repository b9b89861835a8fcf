package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentvalues/values/mcpproxy"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The value browser (/values), driven in headless Chromium: the gateway
// serves it beside /mcp, over a downstream server of this binary's own
// whose values a real client stored through real calls.

// browseServerArg makes the test binary an MCP server whose tools return
// what the browser shows: rows {n}, a JSON array of n objects; hostile,
// a text holding markup and script; hostile_json, an object whose keys
// and values do; log {lines}, a text of numbered lines; csv {lines}, a
// CSV text of a header and that many rows.
const browseServerArg = "test-browse-server"

func init() { testHelpers[browseServerArg] = browseServer }

// hostileText is what a stored value holding markup looks like: were it
// ever parsed as HTML, it would set window.pwned or open a dialog.
const hostileText = `<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2; alert(1)">` +
	"\n</pre></td><script>window.pwned = 3</script>\n<svg onload=\"alert(2)\"></svg>"

// rowID is the id of row i of a rows result of n rows: a permutation of
// 0…n-1, so that a sort by id moves rows.
func rowID(i, n int) int { return (i*7919 + 13) % n }

func browseServer([]string) int {
	s := mcp.NewServer(&mcp.Implementation{Name: "browsedata", Version: "1"}, nil)
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	s.AddTool(&mcp.Tool{Name: "rows", InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ N int }
			json.Unmarshal(req.Params.Arguments, &in)
			var b strings.Builder
			b.WriteByte('[')
			for i := range in.N {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `{"id":%d,"name":"item-%06d","size":%d,"tag":"%s"}`, rowID(i, in.N), i, (i*31)%1000, []string{"a", "b", "<b>c</b>"}[i%3])
			}
			b.WriteByte(']')
			return text(b.String()), nil
		})
	s.AddTool(&mcp.Tool{Name: "hostile", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text(hostileText), nil
		})
	s.AddTool(&mcp.Tool{Name: "hostile_json", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			v, _ := json.Marshal(map[string]any{"<script>window.pwned=4</script>": hostileText, "nested": map[string]any{"html": "<img src=x onerror=alert(3)>", "n": 1}})
			return text(string(v)), nil
		})
	s.AddTool(&mcp.Tool{Name: "log", InputSchema: json.RawMessage(`{"type":"object","properties":{"lines":{"type":"integer"}}}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ Lines int }
			json.Unmarshal(req.Params.Arguments, &in)
			var b strings.Builder
			for i := 1; i <= in.Lines; i++ {
				fmt.Fprintf(&b, "%s line %d: GET /api/items/%d 200 <ok>\n", time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC).Add(time.Duration(i)*time.Second).Format(time.RFC3339), i, i)
			}
			return text(b.String()), nil
		})
	s.AddTool(&mcp.Tool{Name: "csv", InputSchema: json.RawMessage(`{"type":"object","properties":{"lines":{"type":"integer"}}}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ Lines int }
			json.Unmarshal(req.Params.Arguments, &in)
			var b strings.Builder
			b.WriteString("id,name,size\n")
			for i := 1; i <= in.Lines; i++ {
				fmt.Fprintf(&b, "%d,item-%05d,%d\n", i, i, (i*7919)%1000)
			}
			return text(b.String()), nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "browseserver:", err)
	}
	return 0
}

// bearer adds the bearer token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(req)
}

// artifactsDir is where the browser tests write their screenshots:
// $AGENTVALUES_ARTIFACTS/browse when set (kept after the run), else a
// directory under t.TempDir() (removed with it).
func artifactsDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "screenshots")
	if a := os.Getenv("AGENTVALUES_ARTIFACTS"); a != "" {
		dir = filepath.Join(a, "browse")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", dir)
	return dir
}

// newBrowser starts headless Chromium for the test. Chromium must be
// installed (Debian's chromium package; .ci/run installs it).
func newBrowser(t *testing.T) (context.Context, *atomic.Int32) {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if path, err = exec.LookPath("chromium-browser"); err != nil {
			t.Fatalf("the browser tests need Chromium (apt-get install chromium): %v", err)
		}
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // CI runs as root
		chromedp.WindowSize(1600, 1000),
		chromedp.Flag("disable-gpu", true),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(cancelCtx)
	ctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	t.Cleanup(cancel)
	var dialogs atomic.Int32
	err = chromedp.Listen(ctx, func(ev any) { // starts the browser
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			dialogs.Add(1)
			go chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}
	})
	if err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	return ctx, &dialogs
}

// TestBrowse stores values through the gateway with a real client, then
// opens /values in Chromium: the session's handles are listed; a 100k-row
// array opens as a table that pages and sorts on the server; the text the
// model got is shown as the client got it; values holding markup are
// shown as text and run nothing; jq runs over a value and stores nothing;
// without the token the page is 401.
func TestBrowse(t *testing.T) {
	t.Parallel()
	const token = "browse-test-token-3b9f"
	path := filepath.Join(t.TempDir(), "mcp.json")
	config := fmt.Sprintf(`{"mcpServers":{"data":{"command":%q,"args":[%q],"env":{%q:"1"}}}}`, os.Args[0], browseServerArg, runMainEnv)
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	l := startListenerEnv(t, []string{tokenEnv + "=" + token}, "gateway", "--config", path, "--listen", "0", "--start-wait", "1m")
	base := strings.TrimSuffix(l.url, "/mcp")

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	httpClient := &http.Client{Transport: bearer{token, http.DefaultTransport}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: l.url, HTTPClient: httpClient}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(name, args string) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
		if err != nil || res.IsError {
			t.Fatalf("%s %s: %v %.300s", name, args, err, textOf(res))
		}
		return res
	}
	waitTools(t, cs, "rows", "hostile", "hostile_json", "log", "csv")
	const n = 100_000
	rows := call("rows", fmt.Sprintf(`{"n":%d}`, n))
	hostile := call("hostile", `{}`)
	hostileJSON := call("hostile_json", `{}`)
	logRes := call("log", `{"lines":3000}`)
	query := call("query_value", `{"ref":"r1","jq":"map(.size) | add"}`)
	csvRes := call("csv", `{"lines":8000}`)
	handles := map[string]string{}
	for name, res := range map[string]*mcp.CallToolResult{"rows": rows, "hostile": hostile, "hostile_json": hostileJSON, "log": logRes, "query": query, "csv": csvRes} {
		handles[name], _ = res.Meta[mcpproxy.MetaHandle].(string)
	}
	if handles["rows"] != "r1" || handles["query"] != "r5" || handles["csv"] != "r6" {
		t.Fatalf("handles %v, want rows r1 … query r5, csv r6", handles)
	}

	// Without the token: 401, the page and its API alike; with a wrong
	// token or cookie too.
	for _, tc := range []struct {
		name, path string
		header     [2]string
	}{
		{"page", "/values", [2]string{}},
		{"api", "/values/api/sessions", [2]string{}},
		{"static", "/values/static/app.js", [2]string{}},
		{"wrong token", "/values?token=nope", [2]string{}},
		{"wrong bearer", "/values/api/sessions", [2]string{"Authorization", "Bearer nope"}},
		{"wrong cookie", "/values/api/sessions", [2]string{"Cookie", "agentvalues_browse=" + strings.Repeat("0", 64)}},
		{"token as cookie", "/values/api/sessions", [2]string{"Cookie", "agentvalues_browse=" + token}},
	} {
		req, _ := http.NewRequest("GET", base+tc.path, nil)
		if tc.header[0] != "" {
			req.Header.Set(tc.header[0], tc.header[1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || strings.Contains(string(body), "r1") {
			t.Errorf("%s: GET %s without the token: %d %.200s, want 401", tc.name, tc.path, resp.StatusCode, body)
		}
	}
	// With it, as a bearer token: the API answers, with the headers that
	// keep stored content data.
	apiGet := func(path string, v any) http.Header {
		t.Helper()
		resp, err := httpClient.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(resp.Body)
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
		}
		if v != nil {
			if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
				t.Fatal(err)
			}
		}
		return resp.Header
	}
	var sessions struct {
		Sessions []struct {
			ID      string
			Handles int
			Stats   struct{ Results, Returned, Shown int64 }
		}
		Totals struct{ Results, Returned, Shown int64 }
	}
	h := apiGet("/values/api/sessions", &sessions)
	if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") || h.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("headers: CSP %q, nosniff %q", csp, h.Get("X-Content-Type-Options"))
	}
	if len(sessions.Sessions) != 1 || sessions.Sessions[0].ID != cs.ID() || sessions.Sessions[0].Handles != 6 {
		t.Fatalf("sessions %+v, want the client's (%s) with 6 values", sessions.Sessions, cs.ID())
	}
	if st := sessions.Sessions[0].Stats; st.Results != 6 || st.Returned < 4_000_000 || st.Shown > 20_000 || sessions.Totals != st {
		t.Errorf("stats %+v, totals %+v: want 6 results, megabytes returned, kilobytes shown", st, sessions.Totals)
	}
	dl := apiGet("/values/api/download?session="+cs.ID()+"&ref=r2", nil)
	if !strings.HasPrefix(dl.Get("Content-Disposition"), "attachment") || dl.Get("Content-Type") != "application/octet-stream" {
		t.Errorf("download headers: %v", dl)
	}

	shots := artifactsDir(t)
	bctx, dialogs := newBrowser(t)
	shot := func(name string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			buf, err := chromedp.FullScreenshot(90)(ctx, tg)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(shots, name+".png"), buf, 0o644)
		})
	}
	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	eval := func(js string) string {
		t.Helper()
		s, err := chromedp.Run(bctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("evaluate %s: %v", js, err)
		}
		return s
	}

	// Logging in: /values?token= sets the cookie and leaves the token out
	// of the address.
	run("log in", chromedp.Navigate(base+"/values?token="+token), chromedp.WaitVisible(`body[data-ready="1"]`))
	loc, err := chromedp.Run(bctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if loc != base+"/values" {
		t.Errorf("after logging in the page is at %s, want %s/values", loc, base)
	}
	// The session is listed; opened, its handles are.
	sel := fmt.Sprintf(`#session-list tr[data-session=%q]`, cs.ID())
	run("open the session", chromedp.WaitVisible(sel), chromedp.Click(sel), chromedp.WaitVisible(`#handle-list tr[data-handle="r6"]`), shot("sessions"))
	if got := eval(`[...document.querySelectorAll("#handle-list tbody tr")].map(tr => tr.dataset.handle + " " + tr.cells[1].textContent).join(", ")`); got != "r1 rows, r2 hostile, r3 hostile_json, r4 log, r5 query_value, r6 csv" {
		t.Errorf("handles listed: %s", got)
	}

	// The 100k-row array: a table, paged and sorted on the server.
	waitInfo := func(want string) chromedp.Action[chromedp.Void] {
		return chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.getElementById("page-info") && document.getElementById("page-info").textContent.startsWith(%q)`, want), chromedp.WithPollingTimeout(time.Minute))
	}
	run("open r1", chromedp.Click(`#handle-list tr[data-handle="r1"]`), chromedp.WaitVisible(`#view table.rows tbody tr`), waitInfo("rows 1–50 of 100000"))
	if got := eval(`document.getElementById("shown").textContent`); got != textOf(rows) {
		t.Errorf("the preview shown:\n%s\nthe client got:\n%s", got, textOf(rows))
	}
	firstRow := func() string {
		return eval(`(() => { const tr = document.querySelector("#view table.rows tbody tr"); return tr.dataset.row + ":" + [...tr.cells].slice(1).map(c => c.textContent).join("|") })()`)
	}
	row := func(i int) string {
		return fmt.Sprintf("%d:%d|item-%06d|%d|%s", i, rowID(i, n), i, (i*31)%1000, []string{"a", "b", "<b>c</b>"}[i%3])
	}
	if got := firstRow(); got != row(0) {
		t.Errorf("first row %s, want %s", got, row(0))
	}
	run("next page", chromedp.Click(`#next-page`), waitInfo("rows 51–100 of 100000"))
	if got := firstRow(); got != row(50) {
		t.Errorf("first row of page 2: %s, want %s", got, row(50))
	}
	// Sorted by id, the row with id 0 comes first: it is far down the array.
	at := map[int]int{}
	for i := range n {
		if id := rowID(i, n); id <= 1 || id >= n-1 {
			at[id] = i
		}
	}
	run("sort by id", chromedp.Click(`#view th[data-col="id"]`), waitInfo("rows 1–50 of 100000 · sorted by id"))
	if got := firstRow(); got != row(at[0]) {
		t.Errorf("sorted by id, the first row is %s, want %s", got, row(at[0]))
	}
	run("page the sorted table", chromedp.Click(`#next-page`), waitInfo("rows 51–100 of 100000 · sorted by id"))
	if got := eval(`document.querySelector("#view table.rows tbody tr").cells[1].textContent`); got != "50" {
		t.Errorf("sorted by id, row 51 has id %s, want 50", got)
	}
	run("sort descending", chromedp.Click(`#view th[data-col="id"]`), waitInfo("rows 1–50 of 100000 · sorted by id (descending)"), shot("table"))
	if got := firstRow(); got != row(at[n-1]) {
		t.Errorf("sorted by id descending, the first row is %s, want %s", got, row(at[n-1]))
	}

	// Values holding markup are shown as text, and run nothing.
	run("open r2", chromedp.Click(`#handle-list tr[data-handle="r2"]`), chromedp.WaitVisible(`#view table.text`))
	if got := eval(`[...document.querySelectorAll("#view table.text td:not(.ln)")].map(td => td.textContent).join("\n")`); got != hostileText {
		t.Errorf("r2 shown as:\n%s\nwant its text:\n%s", got, hostileText)
	}
	if got := eval(`document.getElementById("shown").textContent`); got != textOf(hostile) {
		t.Errorf("what the model saw of r2:\n%s\nthe client got:\n%s", got, textOf(hostile))
	}
	run("open r3", chromedp.Click(`#handle-list tr[data-handle="r3"]`), chromedp.WaitVisible(`#view ul.tree li`), shot("tree"))
	if got := eval(`document.querySelector("#view ul.tree").textContent`); !strings.Contains(got, "<script>window.pwned=4</script>") || !strings.Contains(got, "<img src=x onerror=alert(3)>") {
		t.Errorf("the tree of r3 does not show its markup as text: %s", got)
	}
	// jq over r3: the answer as text, and nothing stored.
	run("query", chromedp.SendKeys(`#jq`, `.nested.html`), chromedp.Click(`#query-form button[type="submit"]`),
		chromedp.Poll[chromedp.Void](`!document.getElementById("query-result").hidden || document.getElementById("query-info").classList.contains("error")`, chromedp.WithPollingTimeout(time.Minute)),
		shot("query"))
	if info := eval(`document.getElementById("query-info").textContent`); !strings.HasPrefix(info, "1 value") {
		t.Errorf("the query says: %s", info)
	}
	if got := eval(`document.getElementById("query-result").textContent`); got != `"<img src=x onerror=alert(3)>"` {
		t.Errorf("query result %s", got)
	}
	if got := eval(`String(typeof window.pwned) + " " + document.querySelectorAll("#view script, #view img, #view svg, #shown *, #query-result *").length`); got != "undefined 0" {
		t.Errorf("stored markup ran or was parsed: window.pwned and elements: %s", got)
	}
	if d := dialogs.Load(); d != 0 {
		t.Errorf("%d dialogs opened", d)
	}

	// A long text: numbered lines, paged.
	run("open r4", chromedp.Click(`#handle-list tr[data-handle="r4"]`), chromedp.WaitVisible(`#view table.text td.ln`), shot("text"))
	first := eval(`[...document.querySelectorAll("#view table.text tr")].slice(0, 2).map(tr => tr.cells[0].textContent + " " + tr.cells[1].textContent).join("\n")`)
	if !strings.HasPrefix(first, "1 2026-12-05T03:00:01Z line 1: ") || !strings.Contains(first, "\n2 2026-12-05T03:00:02Z line 2: ") {
		t.Errorf("the first lines of r4: %s", first)
	}
	lastOnPage := eval(`(() => { const rows = document.querySelectorAll("#view table.text tr"); const tr = rows[rows.length - 1]; return tr.cells[0].textContent + " " + tr.cells[1].textContent })()`)
	info := eval(`document.getElementById("page-info").textContent`) // "bytes 0–N of M"
	_, rest, _ := strings.Cut(info, "–")
	end, _, _ := strings.Cut(rest, " ")
	run("next page of r4", chromedp.Click(`#next-page`), waitInfo("bytes "+end+"–"))
	num, text, _ := strings.Cut(lastOnPage, " ")
	k, _ := strconv.Atoi(num)
	if want := fmt.Sprintf(" line %d: ", k); !strings.Contains(text, want) {
		t.Errorf("line %s of r4 reads %q", num, text)
	}
	if got := eval(`document.querySelector("#view table.text tr").cells[0].textContent`); got != strconv.Itoa(k+1) {
		t.Errorf("the second page starts at line %s, want %d", got, k+1)
	}

	// A CSV text: a table of its rows under its header, a page at a
	// time, sorted by a click on a column; "As text" shows its lines.
	cells := func(row string) string {
		return eval(`[...document.querySelectorAll("#view table.csv ` + row + `")].slice(0, 2).map(tr => [...tr.cells].map(c => c.textContent).join(" ")).join("\n")`)
	}
	run("open r6", chromedp.Click(`#handle-list tr[data-handle="r6"]`), chromedp.WaitVisible(`#view table.csv`), shot("csv"))
	if got := cells("thead tr"); got != "id name size" {
		t.Errorf("the header of r6: %q", got)
	}
	if got := cells("tbody tr"); got != "1 item-00001 919\n2 item-00002 838" {
		t.Errorf("the first rows of r6: %q", got)
	}
	run("sort r6 by size", chromedp.Click(`#view table.csv th:nth-child(3)`), chromedp.Click(`#view table.csv th:nth-child(3)`))
	if got := eval(`document.querySelector("#view table.csv tbody tr").cells[2].textContent`); got != "999" {
		t.Errorf("sorted by size, descending, the first row's size is %s, want 999", got)
	}
	info = eval(`document.getElementById("page-info").textContent`)
	_, rest, _ = strings.Cut(info, "–")
	end, _, _ = strings.Cut(rest, " ")
	run("next page of r6", chromedp.Click(`#next-page`), waitInfo("bytes "+end+"–"))
	if got := eval(`document.querySelector("#view table.csv tbody tr").cells[1].textContent`); !strings.HasPrefix(got, "item-") || got == "item-00001" {
		t.Errorf("the second page of r6 starts with %q", got)
	}
	run("r6 as text", chromedp.Click(`#view .pager button:nth-child(4)`), chromedp.WaitVisible(`#view table.text td.ln`))
	if got := eval(`document.querySelector("#view table.text tr").cells[1].textContent`); got != "id,name,size" {
		t.Errorf("r6 as text begins %q", got)
	}

	// Nothing the browser did stored a value.
	apiGet("/values/api/sessions", &sessions)
	if sessions.Sessions[0].Handles != 6 {
		t.Errorf("after browsing the session has %d values, want 6", sessions.Sessions[0].Handles)
	}
}
