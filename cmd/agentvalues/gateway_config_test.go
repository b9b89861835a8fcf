package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentvalues/values/internal/testkit"
	"github.com/agentvalues/values/mcpproxy"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// testEnv is the environment the expansion tests look variables up in.
var testEnv = map[string]string{"HOME": "/home/u", "TOKEN": "t0k", "EMPTY": "", "BRACE": "${HOME}"}

func lookupTestEnv(name string) (string, bool) {
	v, ok := testEnv[name]
	return v, ok
}

func TestExpandVars(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in, want string
		missing        []string
	}{
		{"none", "plain $HOME text", "plain $HOME text", nil},
		{"set", "${HOME}/bin", "/home/u/bin", nil},
		{"twice", "Bearer ${TOKEN}:${TOKEN}", "Bearer t0k:t0k", nil},
		{"default unused", "${HOME:-/tmp}", "/home/u", nil},
		{"default", "${NOPE:-/tmp/x}/y", "/tmp/x/y", nil},
		{"empty default", "a${NOPE:-}b", "ab", nil},
		{"set to empty keeps it", "a${EMPTY:-default}b", "ab", nil},
		{"default with colon", "${NOPE:-http://h:1}", "http://h:1", nil},
		{"unset", "x ${NOPE} y ${HOME} ${ALSO}", "x ${NOPE} y /home/u ${ALSO}", []string{"NOPE", "ALSO"}},
		{"not expanded again", "${BRACE}", "${HOME}", nil},
		{"nested default is literal", "${NOPE:-${HOME}}", "${HOME}", nil},
		{"empty braces", "a${}b", "a${}b", nil},
		{"unterminated", "a${HOME", "a${HOME", nil},
		{"unterminated after one", "${HOME}${TOKEN", "/home/u${TOKEN", nil},
		{"dollar alone", "$ and $$ and ${", "$ and $$ and ${", nil},
		{"non-ASCII around", "ü${TOKEN}é", "üt0ké", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, missing := expandVars(tc.in, lookupTestEnv)
			if got != tc.want || !slices.Equal(missing, tc.missing) {
				t.Errorf("expandVars(%q) = %q, missing %q; want %q, %q", tc.in, got, missing, tc.want, tc.missing)
			}
		})
	}
}

func TestServerNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		in, want []string
	}{
		{"valid names stay", []string{"files", "a.b-c_d", "X9"}, []string{"files", "a.b-c_d", "X9"}},
		{"space", []string{"My Server"}, []string{"My_Server"}},
		{"runs of others", []string{"files (old)", "a  /  b", "my__srv", "srv_"}, []string{"files_old", "a_b", "my_srv", "srv"}},
		{"leading", []string{" -._lead", "_x", ".y"}, []string{"lead", "x", "y"}},
		{"non-ASCII", []string{"Dateisystem für Dokumente", "数据库"}, []string{"Dateisystem_f_r_Dokumente", "server"}},
		{"nothing usable", []string{"!!!", "__"}, []string{"server", "server_2"}},
		{"a valid name keeps its name", []string{"My Server", "My_Server"}, []string{"My_Server_2", "My_Server"}},
		{"suffix taken", []string{"a b", "a c", "a_b", "a_b_2"}, []string{"a_b_3", "a_c", "a_b", "a_b_2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := serverNames(tc.in)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("serverNames(%q) (-want +got):\n%s", tc.in, diff)
			}
			for _, n := range got {
				if err := mcpproxy.ValidServerName(n); err != nil {
					t.Errorf("%q: %v", n, err)
				}
			}
		})
	}
}

// TestReadGatewayConfig reads a config whose entries the gateway cannot
// all use: the others are returned, expanded, and each one left out has one
// line on stderr naming it and saying why.
func TestReadGatewayConfig(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "mcp.json")
	config := `{"mcpServers": {
		"My Server": {"command": "${HOME}/bin/srv", "args": ["--token=${TOKEN}", "${NOPE:-def}", "$HOME"], "env": {"KEY": "${TOKEN}", "${HOME}": "x"}, "cwd": "${HOME}"},
		"remote": {"type": "http", "url": "https://${NOPE:-example.com}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
		"legacy": {"type": "SSE", "url": "http://127.0.0.1:1/sse"},
		"ws": {"type": "ws", "url": "ws://127.0.0.1:1"},
		"no command": {"type": "stdio", "args": ["x"]},
		"relative url": {"url": "localhost:8080/mcp"},
		"ftp": {"type": "http", "url": "ftp://example.com/mcp"},
		"bad url": {"url": "http://[::1/mcp"},
		"unset": {"command": "${MISSING}/srv", "headers": {"A": "${ALSO_MISSING}"}},
		"args not a list": {"command": "x", "args": "--flag"},
		"not an object": "npx server",
		"off": {"command": "${MISSING}", "disabled": true}
	}}`
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	got, err := readGatewayConfig(path, lookupTestEnv, &log)
	if err != nil {
		t.Fatal(err)
	}
	want := []gatewayServer{
		{name: "My_Server", config: "My Server", kind: "stdio", serverConfig: serverConfig{
			Command: "/home/u/bin/srv", Args: []string{"--token=t0k", "def", "$HOME"},
			Env: map[string]string{"KEY": "t0k", "${HOME}": "x"}, Cwd: "${HOME}"}},
		{name: "legacy", config: "legacy", kind: "sse", serverConfig: serverConfig{Type: "SSE", URL: "http://127.0.0.1:1/sse"}},
		{name: "remote", config: "remote", kind: "http", serverConfig: serverConfig{Type: "http", URL: "https://example.com/mcp",
			Headers: map[string]string{"Authorization": "Bearer t0k"}}},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(gatewayServer{})); diff != "" {
		t.Errorf("servers (-want +got):\n%s", diff)
	}
	lines := strings.Split(strings.TrimSuffix(log.String(), "\n"), "\n")
	for _, w := range []string{
		`agentvalues: gateway: server "My Server" is offered as My_Server (its tools as My_Server__TOOL)`,
		`agentvalues: gateway: server "ws" left out: unknown "type" "ws": want "stdio", "http" or "sse"`,
		`agentvalues: gateway: server "no command" left out: a stdio server needs "command"`,
		`agentvalues: gateway: server "relative url" left out: "url" "localhost:8080/mcp": want an http:// or https:// URL`,
		`agentvalues: gateway: server "ftp" left out: "url" "ftp://example.com/mcp": want an http:// or https:// URL`,
		`agentvalues: gateway: server "bad url" left out: "url": parse "http://[::1/mcp": missing ']' in host`,
		`agentvalues: gateway: server "unset" left out: ${ALSO_MISSING}, ${MISSING} not set in the gateway's environment, with no default (give one as ${ALSO_MISSING:-default})`,
		`agentvalues: gateway: server "args not a list" left out: not a server entry: json: cannot unmarshal string into Go struct field serverConfig.args of type []string`,
		`agentvalues: gateway: server "not an object" left out: not a server entry: want an object`,
	} {
		if !slices.Contains(lines, w) {
			t.Errorf("no line %q", w)
		}
	}
	if len(lines) != 9 {
		t.Errorf("%d lines, want 9:\n%s", len(lines), log.String())
	}
}

// envServerArg makes the test binary (with runMainEnv set) a go-sdk MCP
// server on stdio with one tool, env, whose result is the server's
// arguments and the value of its SEEN variable.
const envServerArg = "test-env-server"

func init() {
	testHelpers[envServerArg] = func(args []string) int {
		s := mcp.NewServer(&mcp.Implementation{Name: "env", Version: "1"}, nil)
		s.AddTool(&mcp.Tool{Name: "env", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				out, _ := json.Marshal(map[string]any{"args": args, "seen": os.Getenv("SEEN")})
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(out)}}}, nil
			})
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "env server:", err)
			return 1
		}
		return 0
	}
}

// TestGatewayConfigEntries runs the gateway command over a config as a
// client's file may hold it: a server named with spaces, a server reached
// over SSE (the go-sdk's SSE handler, behind a bearer token), ${VAR} and
// ${VAR:-default} in command, args, env, url and headers, and entries the
// gateway cannot use. The usable servers' tools are offered and called;
// each entry left out has its line on stderr.
func TestGatewayConfigEntries(t *testing.T) {
	t.Parallel()
	sse := mcp.NewServer(&mcp.Implementation{Name: "legacy", Version: "1"}, nil)
	sse.AddTool(&mcp.Tool{Name: "hello", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello over SSE"}}}, nil
		})
	handler := mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return sse }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sse-token" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close) // after the gateway, closed by a cleanup registered later

	path := filepath.Join(t.TempDir(), "mcp.json")
	config := `{"mcpServers": {
		"My Server": {"command": "${AV_TEST_BIN}", "args": ["` + envServerArg + `", "${AV_TEST_UNSET:-fallback}", "[${AV_TEST_EMPTY:-not used}]"],
			"env": {"` + runMainEnv + `": "1", "SEEN": "${AV_TEST_SECRET}"}},
		"legacy sse": {"type": "sse", "url": "${AV_TEST_SSE_URL}", "headers": {"Authorization": "Bearer ${AV_TEST_TOKEN}"}},
		"websocket": {"type": "ws", "url": "ws://127.0.0.1:1/"},
		"no command": {"args": ["x"]},
		"unset": {"command": "${AV_TEST_UNSET}"},
		"relative": {"url": "localhost:1/mcp"}
	}}`
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "gateway", "-prefix-names", "--config", path) // the names of servers, as prefixes
	cmd.Env = testkit.ChildEnv(runMainEnv+"=1", "AV_TEST_BIN="+os.Args[0], "AV_TEST_SECRET=s3cret", "AV_TEST_EMPTY=",
		"AV_TEST_SSE_URL="+srv.URL, "AV_TEST_TOKEN=sse-token")
	stderr := &syncWriter{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cs, err := e2eClient(nil).Connect(ctx, &mcpproxy.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting to the gateway: %v\nstderr:\n%s", err, stderr.String())
	}
	t.Cleanup(func() { cs.Close() })

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	for _, want := range []string{"My_Server__env", "legacy_sse__hello"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools %q lack %s\nstderr:\n%s", names, want, stderr.String())
		}
	}
	call := func(name string) string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		if err != nil {
			t.Fatalf("%s: %v\nstderr:\n%s", name, err, stderr.String())
		}
		if res.IsError {
			t.Fatalf("%s: %s\nstderr:\n%s", name, textOf(res), stderr.String())
		}
		return textOf(res)
	}
	if got, want := call("My_Server__env"), `{"args":["fallback","[]"],"seen":"s3cret"}`; !strings.HasPrefix(got, want) {
		t.Errorf("My_Server__env: %q, want %q", got, want)
	}
	if got := call("legacy_sse__hello"); !strings.HasPrefix(got, "hello over SSE") {
		t.Errorf("legacy_sse__hello: %q", got)
	}
	for _, want := range []string{
		`agentvalues: gateway: server "My Server" is offered as My_Server (its tools as My_Server__TOOL)`,
		`agentvalues: gateway: server "legacy sse" is offered as legacy_sse (its tools as legacy_sse__TOOL)`,
		`agentvalues: gateway: server "websocket" left out: unknown "type" "ws"`,
		`agentvalues: gateway: server "no command" left out: it has neither "command" nor "url"`,
		`agentvalues: gateway: server "unset" left out: ${AV_TEST_UNSET} not set`,
		`agentvalues: gateway: server "relative" left out: "url" "localhost:1/mcp": want an http:// or https:// URL`,
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}

// FuzzExpandVars checks expandVars against a second reading of the rule:
// with no variable set, every "${NAME}" stays as written and is named as
// missing, every "${NAME:-D}" becomes D, and the rest is left alone; with
// every variable set to a fixed value free of "${", the result holds no
// more "${" than the input's "${}" and unterminated "${" leave.
func FuzzExpandVars(f *testing.F) {
	for _, s := range []string{"", "plain", "${A}", "${A:-b}c", "${A:-${B}}", "${}", "a${", "${A}${B", "$A", "${:-x}", "ü${Ä}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		none := func(string) (string, bool) { return "", false }
		got, missing := expandVars(s, none)
		var want strings.Builder
		var wantMissing []string
		rest := s
		for {
			i := strings.Index(rest, "${")
			j := -1
			if i >= 0 {
				j = strings.IndexByte(rest[i:], '}')
			}
			if i < 0 || j < 0 {
				want.WriteString(rest)
				break
			}
			want.WriteString(rest[:i])
			inner := rest[i+2 : i+j]
			rest = rest[i+j+1:]
			switch name, def, ok := strings.Cut(inner, ":-"); {
			case inner == "":
				want.WriteString("${}")
			case ok:
				want.WriteString(def)
			default:
				want.WriteString("${" + inner + "}")
				wantMissing = append(wantMissing, name)
			}
		}
		if got != want.String() || !slices.Equal(missing, wantMissing) {
			t.Fatalf("expandVars(%q) = %q, %q; want %q, %q", s, got, missing, want.String(), wantMissing)
		}

		all := func(string) (string, bool) { return "v", true }
		got, missing = expandVars(s, all)
		if missing != nil {
			t.Fatalf("expandVars(%q) with every variable set: missing %q", s, missing)
		}
		if strings.Count(got, "${") > strings.Count(s, "${") || !strings.Contains(s, "${") && got != s {
			t.Fatalf("expandVars(%q) with every variable set = %q", s, got)
		}
	})
}

// FuzzServerNames checks that serverNames gives every name one that
// ValidServerName accepts, no two the same, and keeps a valid name.
func FuzzServerNames(f *testing.F) {
	f.Add("My Server", "My_Server", "")
	f.Add("a b", "a_b_2", "a__b")
	f.Add("!!!", "", "数据库")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		in := []string{a, b, c}
		got := serverNames(in)
		seen := map[string]bool{}
		for i, n := range got {
			if err := mcpproxy.ValidServerName(n); err != nil {
				t.Fatalf("serverNames(%q)[%d] = %q: %v", in, i, n, err)
			}
			if mcpproxy.ValidServerName(in[i]) == nil && n != in[i] && !slices.Contains(in[:i], in[i]) {
				t.Fatalf("serverNames(%q) renamed the valid %q to %q", in, in[i], n)
			}
			if seen[n] && !slices.Contains(in[:i], in[i]) {
				t.Fatalf("serverNames(%q) = %q: %q twice", in, got, n)
			}
			seen[n] = true
		}
	})
}
