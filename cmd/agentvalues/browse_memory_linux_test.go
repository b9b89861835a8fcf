package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentvalues/values/mcpproxy"
	"github.com/agentvalues/values/mcpproxy/browse"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestBrowseMemory browses values of 100 MiB and 40 MiB that a client
// stored through the proxy: pages of rows at the start, middle and end,
// a sort, children deep in the array, a page at 50 MiB, the whole value
// downloaded, and a query past the input bound. The proxy's peak memory
// grows by far less than one copy of the value: the browser pages it.
func TestBrowseMemory(t *testing.T) {
	const token = "browse-memory-token"
	l := startListenerEnv(t, []string{tokenEnv + "=" + token}, "proxy", "--listen", "0", "--", os.Args[0], blobServerArg)
	base := strings.TrimSuffix(l.url, "/mcp")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	httpClient := &http.Client{Transport: bearer{token, http.DefaultTransport}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: l.url, HTTPClient: httpClient}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for i, size := range []int{100 << 20, 40 << 20} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "blob", Arguments: json.RawMessage(fmt.Sprintf(`{"kind":"json","size":%d}`, size))})
		if err != nil || res.IsError || res.Meta[mcpproxy.MetaHandle] != fmt.Sprintf("r%d", i+1) {
			t.Fatalf("blob %d: %v %.300s", size, err, textOf(res))
		}
	}
	get := func(path string) []byte {
		t.Helper()
		resp, err := httpClient.Get(base + "/values/api/" + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %v %.300s", path, resp.StatusCode, err, body)
		}
		return body
	}
	var rows struct {
		Rows []struct {
			I    int
			JSON json.RawMessage
		}
		Total    int
		Sorted   bool
		SortNote string
	}
	decode := func(body []byte, v any) {
		t.Helper()
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("%v: %.300s", err, body)
		}
	}
	sid := cs.ID()
	before := l.peak(t)

	step := func(what string) { t.Logf("after %s: +%d MiB", what, (l.peak(t)-before)>>20) }
	get("value?session=" + sid + "&ref=r1")
	step("value")
	decode(get("rows?session="+sid+"&ref=r1&from=0&n=500"), &rows)
	total := rows.Total
	if total < browse.MaxSortRows || len(rows.Rows) != 500 {
		t.Fatalf("r1 has %d rows (%d on the first page); want more than MaxSortRows", total, len(rows.Rows))
	}
	for _, from := range []int{total / 2, total - 10} {
		decode(get(fmt.Sprintf("rows?session=%s&ref=r1&from=%d&n=500", sid, from)), &rows)
		if len(rows.Rows) == 0 || rows.Rows[0].I != from || !strings.Contains(string(rows.Rows[0].JSON), fmt.Sprintf(`"id":%d,`, 100000+from)) {
			t.Errorf("row %d of r1: %d rows, first %+.200v", from, len(rows.Rows), rows.Rows)
		}
	}
	step("rows")
	decode(get("rows?session="+sid+"&ref=r1&from=0&n=50&sort=balance"), &rows)
	if rows.Sorted || rows.SortNote == "" {
		t.Errorf("r1 of %d rows was sorted on the server", total)
	}
	decode(get("rows?session="+sid+"&ref=r2&from=1000&n=500&sort=balance&desc=1"), &rows)
	var prev float64 = 1e18
	for _, r := range rows.Rows {
		var v struct{ Balance float64 }
		json.Unmarshal(r.JSON, &v)
		if v.Balance > prev {
			t.Fatalf("r2 sorted by balance, descending: %v after %v", v.Balance, prev)
		}
		prev = v.Balance
	}
	if !rows.Sorted || len(rows.Rows) != 500 {
		t.Errorf("r2 sorted: %v, %d rows", rows.Sorted, len(rows.Rows))
	}
	step("sort")
	get(fmt.Sprintf("children?session=%s&ref=r1&from=%d", sid, total-300))
	get("page?session=" + sid + "&ref=r1&offset=" + fmt.Sprint(50<<20))
	step("children, page")
	resp, err := httpClient.Get(base + "/values/api/download?session=" + sid + "&ref=r1")
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || n < 99<<20 || n > 100<<20 {
		t.Errorf("download of r1: %d bytes, %v", n, err)
	}
	step("download")
	resp, err = httpClient.Get(base + "/values/api/query?session=" + sid + "&ref=r1&jq=length")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "too large") {
		t.Errorf("a query of r1 (past the 64 MiB input bound): %d %.300s", resp.StatusCode, body)
	}

	grew := l.peak(t) - before
	t.Logf("browsing r1 (100 MiB, %d rows) and r2 (40 MiB): the proxy's peak grew by %d MiB", total, grew>>20)
	if grew > 40<<20 {
		t.Errorf("browsing grew the proxy's peak by %d MiB; a copy of r1 would be 100 MiB, the browser should page it", grew>>20)
	}
}
