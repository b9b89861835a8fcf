package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentvalues/values/internal/testkit"
	"github.com/agentvalues/values/mcpproxy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An npmServer is a third-party MCP server of the end-to-end tests, pinned.
type npmServer struct {
	pkg, version string
	bin          string // its executable under node_modules/.bin
	env          string // a variable that may name that executable instead
}

var (
	fsServer     = npmServer{"@modelcontextprotocol/server-filesystem", "2026.8.31", "mcp-server-filesystem", "AGENTVALUES_MCP_FILESYSTEM"}
	memoryServer = npmServer{"@modelcontextprotocol/server-memory", "2026.8.31", "mcp-server-memory", "AGENTVALUES_MCP_MEMORY"}
	// everythingServer is run in its Streamable HTTP mode: the remote server
	// of the gateway's tests.
	everythingServer = npmServer{"@modelcontextprotocol/server-everything", "2026.8.31", "mcp-server-everything", "AGENTVALUES_MCP_EVERYTHING"}
)

// npmPrefix is where .ci/run installs the servers with
//
//	npm install --no-audit --no-fund --prefix "$HOME/.cache/agentvalues/npm" \
//		@modelcontextprotocol/server-filesystem@2026.8.31 @modelcontextprotocol/server-memory@2026.8.31 \
//		@modelcontextprotocol/server-everything@2026.8.31
func npmPrefix() string {
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "agentvalues", "npm")
}

// command returns the command that runs the server: its env variable's
// executable, else the copy installed under npmPrefix (its version
// checked), else npx. Without any, the test is skipped on a developer
// machine and fails when CI is set.
func (s npmServer) command(t *testing.T) []string {
	t.Helper()
	if p := os.Getenv(s.env); p != "" {
		return []string{p}
	}
	prefix := npmPrefix()
	bin := filepath.Join(prefix, "node_modules", ".bin", s.bin)
	if _, err := os.Stat(bin); err == nil {
		var pkg struct{ Version string }
		data, err := os.ReadFile(filepath.Join(prefix, "node_modules", s.pkg, "package.json"))
		if err == nil && json.Unmarshal(data, &pkg) == nil && pkg.Version == s.version {
			return []string{bin}
		}
		t.Logf("%s holds %s %q, not %s; trying npx", prefix, s.pkg, pkg.Version, s.version)
	}
	if npx, err := exec.LookPath("npx"); err == nil {
		return []string{npx, "-y", s.pkg + "@" + s.version}
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("CI is set but %s@%s is not installed (set %s, install it under %s, or provide npx)",
			s.pkg, s.version, s.env, prefix)
	}
	t.Skipf("%s@%s not available: no %s, no install under %s, no npx", s.pkg, s.version, s.env, prefix)
	return nil
}

// connectCommand runs this test binary as the agentvalues command with
// args and connects an MCP client to it over its standard input and
// output; the session is closed when the test ends. The command's standard
// error is collected.
func connectCommand(t *testing.T, args ...string) (*mcp.ClientSession, *syncWriter) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = testkit.ChildEnv(runMainEnv + "=1")
	stderr := &syncWriter{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cs, err := e2eClient(nil).Connect(ctx, &mcpproxy.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting to agentvalues %s: %v\nstderr:\n%s", args[0], err, stderr.String())
	}
	t.Cleanup(func() { cs.Close() })
	return cs, stderr
}

// TestProxyFilesystemServer wraps the real @modelcontextprotocol/server-
// filesystem in the real agentvalues proxy command, lists a large tree,
// and passes a path out of that listing by reference to read_text_file.
func TestProxyFilesystemServer(t *testing.T) {
	t.Parallel()
	server := fsServer.command(t)

	// A tree with 1,200 files, and one file at the top whose content the
	// test checks.
	dir := t.TempDir()
	for d := range 30 {
		sub := filepath.Join(dir, fmt.Sprintf("dir%02d", d))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		for f := range 40 {
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("file%02d.txt", f)), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	const secret = "the content of target.txt\n"
	if err := os.WriteFile(filepath.Join(dir, "target.txt"), []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	const goSource = "package tool\n"
	if err := os.WriteFile(filepath.Join(dir, "dir07", "tool.go"), []byte(goSource), 0o644); err != nil {
		t.Fatal(err)
	}

	// The proxy is this test binary running as the agentvalues command.
	cs, stderr := connectCommand(t, append([]string{"proxy", "--"}, append(server, dir)...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*mcp.Tool{}
	for _, tool := range tools.Tools {
		byName[tool.Name] = tool
	}
	for _, name := range []string{"directory_tree", "read_text_file", "read_value", "query_value"} {
		if byName[name] == nil {
			t.Fatalf("proxy does not offer %s; it offers %v", name, tools.Tools)
		}
	}
	if tool := byName["read_text_file"]; tool.OutputSchema != nil || !strings.Contains(tool.Description, `"$r1"`) {
		t.Errorf("read_text_file mirrored with outputSchema %v, description %q", tool.OutputSchema, tool.Description)
	}

	call := func(name, args string) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
		if err != nil {
			t.Fatalf("%s %s: %v\nstderr:\n%s", name, args, err, stderr.String())
		}
		return res
	}
	textOf := func(res *mcp.CallToolResult) string {
		var parts []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				parts = append(parts, tc.Text)
			}
		}
		return strings.Join(parts, "\n")
	}

	// 1. The large tree comes back as a preview of r1, a JSON array.
	tree := call("directory_tree", fmt.Sprintf(`{"path":%q}`, dir))
	if tree.IsError || tree.Meta[mcpproxy.MetaHandle] != "r1" || !strings.HasPrefix(textOf(tree), "r1 = array(len=31") {
		t.Fatalf("directory_tree: want a preview of r1, an array of 31 entries; got meta %v, %q", tree.Meta, textOf(tree))
	}
	if tree.StructuredContent != nil {
		t.Error("previewed result kept structuredContent")
	}

	// 2. Find target.txt in r1 the way a model would: page it with
	// read_value.
	listing := readValueAll(t, call, textOf, "r1")
	var entries []struct {
		Name string `json:"name"`
		Type string `json:"type"`
	}
	if err := json.Unmarshal([]byte(listing), &entries); err != nil {
		t.Fatalf("r1 paged back is not the tree JSON: %v", err)
	}
	index := -1
	for i, e := range entries {
		if e.Name == "target.txt" {
			index = i
		}
	}
	if index < 0 {
		t.Fatalf("target.txt not in the tree: %v", entries)
	}

	// 3. Pass the path out of r1 by reference into read_text_file.
	ref := fmt.Sprintf("$r1.%d.name", index)
	read := call("read_text_file", fmt.Sprintf(`{"path":%q}`, ref))
	if read.IsError || !strings.HasPrefix(textOf(read), secret) || read.Meta[mcpproxy.MetaHandle] != "r2" {
		t.Fatalf("read_text_file %s: meta %v, %q", ref, read.Meta, textOf(read))
	}

	// 4. Ask the tree for its .go files with query_value, without reading
	// it, and pass the new handle's first path into read_text_file.
	q := call("query_value", fmt.Sprintf(`{"ref":"r1","jq":%q}`,
		fmt.Sprintf(`[.[] | select(.type == "directory") | .name as $d | .children[] | select(.name | endswith(".go")) | %q + "/" + $d + "/" + .name]`, dir)))
	h, _ := q.Meta[mcpproxy.MetaHandle].(string)
	if q.IsError || h != "r3" || !strings.Contains(textOf(q), filepath.Join(dir, "dir07", "tool.go")) {
		t.Fatalf("query_value: meta %v, %q", q.Meta, textOf(q))
	}
	src := call("read_text_file", fmt.Sprintf(`{"path":"$%s.0"}`, h))
	if src.IsError || !strings.HasPrefix(textOf(src), goSource) {
		t.Fatalf("read_text_file $%s.0: %q", h, textOf(src))
	}

	// 5. A reference that does not resolve never reaches the server.
	bad := call("read_text_file", `{"path":"$r1.9999.name"}`)
	if !bad.IsError || !strings.Contains(textOf(bad), "$r1.9999.name") {
		t.Errorf("bad reference: want an isError result naming it, got %q", textOf(bad))
	}
}

// readValueAll pages through ref with read_value and returns its bytes.
func readValueAll(t *testing.T, call func(string, string) *mcp.CallToolResult, textOf func(*mcp.CallToolResult) string, ref string) string {
	t.Helper()
	all, _, err := testkit.ReadPages(1000, func(offset int) (testkit.Page, error) {
		res := call("read_value", fmt.Sprintf(`{"ref":%q,"offset":%d}`, ref, offset))
		page := textOf(res)
		if res.IsError {
			t.Fatalf("read_value: %s", page)
		}
		return testkit.ParsePage(offset, page), nil
	})
	if err != nil {
		t.Fatalf("read_value %s: %v", ref, err)
	}
	return all
}
