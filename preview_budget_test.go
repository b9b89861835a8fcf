package values

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// The budget of a preview goes where it answers questions: wide items
// are shown two, whole enough to tell them apart; the dominant field gives
// back what it does not use; keys left out are named; small nested
// objects show their values.

// issue returns an item shaped as a GitHub issue: 30 keys, the
// identifying ones (number, title) past the eighth.
func issue(n int) map[string]any {
	m := map[string]any{}
	keys := []string{"url", "repository_url", "labels_url", "comments_url", "events_url", "html_url", "node_id", "state", "number", "title", "user", "labels", "locked", "assignee", "assignees", "milestone", "comments", "created_at", "updated_at", "closed_at", "author_association", "active_lock_reason", "body", "reactions", "timeline_url", "performed_via_github_app", "state_reason", "draft", "pull_request", "closed_by"}
	for i, k := range keys {
		m[k] = fmt.Sprintf("https://api.example.com/repos/acme/widgets/issues/%d/%s", n, k)
		if i == 7 {
			m[k] = []string{"open", "closed"}[n%2]
		}
	}
	m["number"] = n
	m["title"] = fmt.Sprintf("Widget %d breaks when resized", n)
	m["user"] = map[string]any{"login": "octo", "id": 1}
	m["comments"] = n % 7
	return m
}

// orderedJSON encodes m with its keys in the order given, as an API
// sends them (encoding/json would sort them).
func orderedJSON(m map[string]any, keys []string) string {
	var b strings.Builder
	b.WriteString("{")
	for i, k := range keys {
		if i > 0 {
			b.WriteString(",")
		}
		kb, _ := json.Marshal(k)
		vb, _ := json.Marshal(m[k])
		b.Write(kb)
		b.WriteString(":")
		b.Write(vb)
	}
	b.WriteString("}")
	return b.String()
}

func TestWideItemsIdentified(t *testing.T) {
	keys := []string{"url", "repository_url", "labels_url", "comments_url", "events_url", "html_url", "node_id", "state", "number", "title", "user", "labels", "locked", "assignee", "assignees", "milestone", "comments", "created_at", "updated_at", "closed_at", "author_association", "active_lock_reason", "body", "reactions", "timeline_url", "performed_via_github_app", "state_reason", "draft", "pull_request", "closed_by"}
	var items []string
	for n := 1; n <= 40; n++ {
		items = append(items, orderedJSON(issue(n), keys))
	}
	p := preview(t, json.RawMessage("["+strings.Join(items, ",")+"]"))
	for _, want := range []string{
		`[0]={number: 1, title: "Widget 1 breaks when resized", url: "https://api.example.com/repos/acme/widgets/issues/1/url", html_url: `,
		`[-1]={number: 40, title: "Widget 40 breaks when resized", url: `,
		`state: "closed"|"open"`, "comments: number 0..6",
		`user: {id: 1, login: "octo"}`, // encoding/json sorts the keys of a map
	} {
		if !strings.Contains(p, want) {
			t.Errorf("%s is not in the preview:\n%s", want, p)
		}
	}
	if len(p) > DefaultMaxPreview {
		t.Errorf("preview of %d bytes", len(p))
	}
}

// A dominant field that renders short gives the rest of the budget back:
// no other field is dropped while the bound has room.
func TestDominantGivesBack(t *testing.T) {
	m := map[string]any{"rows": make([]int, 20000)}
	for i := range 20 {
		m[fmt.Sprintf("field_%02d", i)] = strings.Repeat(fmt.Sprint(i%10), 60)
	}
	p := preview(t, m)
	if strings.Contains(p, "more key") {
		t.Errorf("keys dropped with room left (%d of %d bytes):\n%s", len(p), DefaultMaxPreview, p)
	}
	for i := range 20 {
		if k := fmt.Sprintf("field_%02d: ", i); !strings.Contains(p, k) {
			t.Errorf("%s is not in the preview:\n%s", k, p)
		}
	}
}

// Keys that do not fit with their values are named while their names fit.
func TestDroppedKeysNamed(t *testing.T) {
	m := map[string]any{}
	for i := range 24 {
		m[fmt.Sprintf("key_%02d", i)] = strings.Repeat("v", 110)
	}
	p := preview(t, m)
	i := strings.Index(p, " more keys [")
	if i < 0 {
		t.Fatalf("no keys named as dropped:\n%s", p)
	}
	for k := range 24 {
		if name := fmt.Sprintf("key_%02d", k); !strings.Contains(p, name) {
			t.Errorf("%s is not named:\n%s", name, p)
		}
	}
}

// An object of 90 keys, as a repository of a forge's API: its first fields
// with their values, and every key named.
func TestWideObjectNamesEveryKey(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"id":123456,"name":"widgets","full_name":"acme/widgets","private":false,"owner":{"login":"acme","id":9},`)
	for i := range 85 {
		fmt.Fprintf(&b, `"%s_%d":"https://api.example.com/repos/acme/widgets/%d",`, []string{"forks_url", "keys_url", "hooks_url", "tags_url", "blobs_url"}[i%5], i, i)
	}
	b.WriteString(`"default_branch":"main"}`)
	var m map[string]any
	if err := json.Unmarshal([]byte(b.String()), &m); err != nil {
		t.Fatal(err)
	}
	p := preview(t, json.RawMessage(b.String()))
	for _, want := range []string{"json(keys=91,", "id: 123456", `full_name: "acme/widgets"`, `owner: {login: "acme", id: 9}`, "default_branch"} {
		if !strings.Contains(p, want) {
			t.Errorf("%s is not in the preview:\n%s", want, p)
		}
	}
	for k := range m {
		if !strings.Contains(p, k) {
			t.Errorf("key %s is not named:\n%s", k, p)
		}
	}
}
