package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentvalues/values/internal/testkit"
	"github.com/google/go-cmp/cmp"
)

// TestGatewayChain: the chain of configs of the gateways above one is
// read from gatewayEnv, and a gateway refuses to start when its own config
// is in it (by path, or as the same file by another path), or when it is
// maxGatewayDepth long, naming the chain either way.
func TestGatewayChain(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  string
		want []string
	}{
		{"", nil},
		{"/a/mcp.json", []string{"/a/mcp.json"}}, // as an earlier version sets it
		{`["/a/mcp.json","/b/mcp[1].json"]`, []string{"/a/mcp.json", "/b/mcp[1].json"}},
		{`[not json`, []string{"[not json"}},
	} {
		if diff := cmp.Diff(tc.want, gatewayChain(tc.env)); diff != "" {
			t.Errorf("gatewayChain(%q) (-want +got):\n%s", tc.env, diff)
		}
	}

	dir := t.TempDir()
	path := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(`{"mcpServers":{}}`), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b, c := path("a.json"), path("b.json"), path("c.json")
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(a, link); err != nil {
		t.Fatal(err)
	}
	var deep []string
	for i := range maxGatewayDepth {
		deep = append(deep, path(string(rune('d'+i))+".json"))
	}
	for _, tc := range []struct {
		name  string
		chain []string
		own   string
		err   error
		says  string
	}{
		{"none above", nil, a, nil, ""},
		{"another above", []string{b}, a, nil, ""},
		{"itself", []string{a}, a, errGatewayLoop, a + " lists the gateway itself; remove that entry"},
		{"two", []string{a, b}, a, errGatewayLoop, a + " → " + b + " → " + a + ", each config listing a gateway over the next"},
		{"three", []string{c, a, b, c}, a, errGatewayLoop, a + " → " + b + " → " + c + " → " + a},
		{"by another path", []string{link, b}, a, errGatewayLoop, link + " → " + b + " → " + a},
		{"one less than the most", deep[1:], a, nil, ""},
		{"the most", deep, a, errGatewayDepth, "started under 8 gateways, the most that may run one under another: " + strings.Join(deep, " → ") + " → " + a},
	} {
		err := checkGatewayChain(tc.chain, tc.own)
		if !errors.Is(err, tc.err) || err != nil && !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v; want %v saying %q", tc.name, err, tc.err, tc.says)
		}
	}
}

// writeGatewayConfig writes an mcpServers config at path: a blob server,
// and a gateway over each of the configs named by gateways (a server
// entry named after the file, without its extension).
func writeGatewayConfig(t *testing.T, path string, gateways ...string) {
	t.Helper()
	servers := map[string]any{
		"blobs": map[string]any{"command": os.Args[0], "args": []string{blobServerArg}},
	}
	for _, g := range gateways {
		// "prefix": each gateway's tools are NAME__TOOL one level up,
		// whether or not they collide (one per level would, read_value's).
		servers[strings.TrimSuffix(filepath.Base(g), ".json")] = map[string]any{"command": os.Args[0], "args": []string{"gateway", "--config", g}, "prefix": true}
	}
	data, err := json.Marshal(map[string]any{"mcpServers": servers})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitStderr waits until the command's standard error holds each of want,
// woken by each write, failing after a minute (a bound on a hang, not a
// timing).
func waitStderr(t *testing.T, stderr *syncWriter, want ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, w := range want {
		if !stderr.waitFor(ctx, w) {
			t.Fatalf("stderr never said %q:\n%s", w, stderr.String())
		}
	}
}

// TestGatewayLoop runs the gateway command over configs that each list a
// gateway over the next, the last over the first (two and three of them):
// the gateways start down the chain until the one over the first config
// again, which refuses at once, naming the loop; the gateway above it
// leaves that server out, saying so, and serves the rest; the outermost
// gateway offers the tools of every config once, none nested twice.
func TestGatewayLoop(t *testing.T) {
	t.Parallel()
	for _, names := range [][]string{{"a", "b"}, {"a", "b", "c"}} {
		t.Run(strings.Join(names, ","), func(t *testing.T) {
			dir := t.TempDir()
			var paths []string
			for _, n := range names {
				paths = append(paths, filepath.Join(dir, n+".json"))
			}
			for i, p := range paths {
				writeGatewayConfig(t, p, paths[(i+1)%len(paths)])
			}
			cs, stderr := connectCommand(t, "gateway", "--config", paths[0])
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			// Each gateway down the chain: its blob server's tool, and its
			// own read_value and query_value, under the prefixes of the
			// gateways above it (b__c__blob).
			want := []string{"blob", "ping", "query_value", "read_value"}
			for i := 1; i < len(names); i++ {
				p := strings.Join(names[1:i+1], "__") + "__"
				want = append(want, p+"blob", p+"ping", p+"query_value", p+"read_value")
			}
			slices.Sort(want)
			// Each gateway offers its servers' tools as each is ready,
			// the ones below included: wait until all have arrived.
			waitTools(t, cs, want...)
			tools, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, tool := range tools.Tools {
				got = append(got, tool.Name)
			}
			slices.Sort(got)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("tools offered (-want +got):\n%s\nstderr:\n%s", diff, stderr.String())
			}
			loop := strings.Join(append(paths, paths[0]), " → ")
			waitStderr(t, stderr,
				"agentvalues: gateway: a loop of gateways: "+loop+", each config listing a gateway over the next; remove one of those entries",
				`leaving out the server "a" until it starts`)
		})
	}
}

// TestGatewayTooDeep: a gateway started under maxGatewayDepth gateways
// (over configs it cannot tell from its own, as a config written anew for
// each start would be) exits at once with an error naming them.
func TestGatewayTooDeep(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	own := filepath.Join(dir, "own.json")
	writeGatewayConfig(t, own)
	var chain []string
	for i := range maxGatewayDepth {
		p := filepath.Join(dir, "level"+string(rune('0'+i))+".json")
		writeGatewayConfig(t, p)
		chain = append(chain, p)
	}
	env, _ := json.Marshal(chain)
	cmd := exec.Command(os.Args[0], "gateway", "--config", own)
	cmd.Env = testkit.ChildEnv(runMainEnv+"=1", gatewayEnv+"="+string(env))
	out, err := cmd.CombinedOutput()
	if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v; want status 1\n%s", err, out)
	}
	want := "agentvalues: gateway: gateways nested too deep: started under 8 gateways, the most that may run one under another: " + strings.Join(chain, " → ") + " → " + own
	if !strings.Contains(string(out), want) {
		t.Errorf("the gateway said:\n%s\nwant %q", out, want)
	}
}
