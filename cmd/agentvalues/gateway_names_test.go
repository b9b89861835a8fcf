package main

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestGatewayPrefixNames runs the gateway command over two blob servers
// (the same tools) and an attack server (tools of its own): by default the
// names both blob servers offer are SERVER__NAME, logged, and the others
// bare; "prefix": true in an entry prefixes that server's names (so the
// other blob server keeps them bare); -prefix-names prefixes every name.
func TestGatewayPrefixNames(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name       string
		flag       bool
		prefixTwo  bool
		want       []string
		collisions bool
	}{
		{name: "default", collisions: true,
			want: []string{"bad_utf8", "blocks", "forge", "one__blob", "one__ping", "stray", "two__blob", "two__ping"}},
		{name: "entry", prefixTwo: true,
			want: []string{"bad_utf8", "blob", "blocks", "forge", "ping", "stray", "two__blob", "two__ping"}},
		{name: "flag", flag: true,
			want: []string{"evil__bad_utf8", "evil__blocks", "evil__forge", "evil__stray", "one__blob", "one__ping", "two__blob", "two__ping"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "mcp.json")
			data, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
				"one":  map[string]any{"command": os.Args[0], "args": []string{blobServerArg}},
				"two":  map[string]any{"command": os.Args[0], "args": []string{blobServerArg}, "prefix": c.prefixTwo},
				"evil": map[string]any{"command": os.Args[0], "args": []string{attackServerArg}},
			}})
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"gateway", "--config", path}
			if c.flag {
				args = append(args, "-prefix-names")
			}
			cs, stderr := connectCommand(t, args...)
			want := append(slices.Clone(c.want), "query_value", "read_value")
			slices.Sort(want)
			waitTools(t, cs, want...)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			tools, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, tool := range tools.Tools {
				got[tool.Name] = true
			}
			if diff := cmp.Diff(want, slices.Sorted(maps.Keys(got))); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
			collision := `the servers "one" and "two" each offer a tool named "ping": it is offered as one__ping, two__ping`
			if c.collisions {
				waitStderr(t, stderr, collision) // the child's stderr comes through a pipe
			} else if strings.Contains(stderr.String(), "each offer") {
				t.Errorf("a collision logged with prefixes asked for:\n%s", stderr.String())
			}
		})
	}
}
