package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentvalues/values/internal/testkit"
	"github.com/agentvalues/values/mcpproxy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// conformanceClientScenarios are the suite's client scenarios but those of
// OAuth (auth/*), which the gateway does not do downstream, and what the
// client does in each: the tool it calls (none when empty) and what the
// tool's result, as the suite's server writes it, says (there, the
// elicitation's content as the agent's go-sdk client sends it: the
// schema's defaults, keys sorted).
var conformanceClientScenarios = map[string]struct{ tool, answer string }{
	"initialize":                          {},
	"tools_call":                          {"add_numbers", "The sum of 5 and 3 is 8"},
	"elicitation-sep1034-client-defaults": {"test_client_elicitation_defaults", `Elicitation completed: {\"age\":30,\"name\":\"John Doe\",\"score\":95.5,\"status\":\"active\",\"verified\":true}`},
	"sse-retry":                           {"test_reconnection", "Reconnection test completed successfully"},
}

// conformanceClientKnown is what the suite's client scenarios find with
// the gateway as the client that they do not find with the go-sdk's client
// alone, each with its cause. TestConformanceClient fails on a scenario
// that fails through the gateway and is not listed here, and on one listed
// that now passes.
var conformanceClientKnown = map[string]map[string]string{}

// conformanceTimingCheck is the one check of the suite that measures time:
// sse-retry's, that the client reconnects 450-700 ms after a stream's end
// when the server asked for 500 ms (up to 1000 ms, a warning, which fails
// here as a failure does). A loaded machine can delay the
// reconnect past that, so a scenario that fails only there is run again,
// up to conformanceTimingTries times in all; one that ignores the retry
// field fails every time.
const (
	conformanceTimingCheck = "client-sse-retry-timing"
	conformanceTimingTries = 3
)

// conformanceAgentArg makes the test binary (with runMainEnv set) the
// command the suite runs as the client of a client scenario: an MCP agent,
// the go-sdk's client, that starts `agentvalues gateway` (the test binary
// again) with one server, the suite's URL (its last argument), over
// Streamable HTTP, and drives it over stdio as the scenario
// (MCP_CONFORMANCE_SCENARIO) needs: it lists the tools and calls the
// scenario's, accepts an elicitation leaving every field to the schema's
// default (the go-sdk's client fills them in, as a client showing a form
// with the defaults would), and exits 1 with a line on stderr when
// something fails.
const conformanceAgentArg = "test-conformance-agent"

func init() { testHelpers[conformanceAgentArg] = conformanceAgent }

// conformanceAgentProtocolEnv, set in the agent's environment, is the
// protocol version it offers the gateway; empty, the go-sdk's latest.
const conformanceAgentProtocolEnv = "AGENTVALUES_TEST_AGENT_PROTOCOL"

func conformanceAgent(args []string) int {
	if err := runConformanceAgent(args); err != nil {
		fmt.Fprintln(os.Stderr, "conformance agent:", err)
		return 1
	}
	return 0
}

func runConformanceAgent(args []string) error {
	if len(args) == 0 {
		return errors.New("no server URL")
	}
	url := args[len(args)-1]
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	sc, ok := conformanceClientScenarios[scenario]
	tool := sc.tool
	if !ok {
		return fmt.Errorf("unknown scenario %q", scenario)
	}
	dir, err := os.MkdirTemp("", "agentvalues-conformance-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	config := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(config, []byte(`{"mcpServers":{"suite":{"type":"http","url":`+quote(url)+`}}}`), 0o600); err != nil {
		return err
	}
	// The suite gives a client 30 s; this says what failed before then.
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	cmd := exec.Command(os.Args[0], "gateway", "--config", config)
	cmd.Env = testkit.ChildEnv(runMainEnv + "=1")
	cmd.Stderr = os.Stderr // the suite keeps it beside the scenario's checks
	var elicited atomic.Int32
	client := mcp.NewClient(&mcp.Implementation{Name: "agentvalues-conformance-agent", Version: "1.0.0"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			elicited.Add(1)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		},
	})
	cs, err := client.Connect(ctx, &mcpproxy.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: os.Getenv(conformanceAgentProtocolEnv)})
	if err != nil {
		return fmt.Errorf("starting the gateway: %w", err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	if tool == "" {
		return nil
	}
	if !slices.ContainsFunc(tools.Tools, func(t *mcp.Tool) bool { return t.Name == tool }) {
		var names []string
		for _, t := range tools.Tools {
			names = append(names, t.Name)
		}
		return fmt.Errorf("the gateway offers no tool %s: %v", tool, names)
	}
	arguments := map[string]any{}
	if tool == "add_numbers" {
		arguments = map[string]any{"a": 5, "b": 3}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: arguments})
	if err != nil {
		return fmt.Errorf("calling %s: %w", tool, err)
	}
	text, _ := json.Marshal(res.Content)
	if res.IsError {
		return fmt.Errorf("calling %s: an error result: %s", tool, text)
	}
	if !strings.Contains(string(text), sc.answer) {
		return fmt.Errorf("calling %s: the result %s does not say %q", tool, text, sc.answer)
	}
	if scenario == "elicitation-sep1034-client-defaults" && elicited.Load() != 1 {
		return fmt.Errorf("calling %s: the agent was asked %d times to elicit, want 1", tool, elicited.Load())
	}
	fmt.Fprintf(os.Stderr, "conformance agent: %s answered %s\n", tool, text)
	return nil
}

// TestConformanceClient runs the official MCP conformance suite's client
// scenarios (but OAuth's) with the gateway as the client: the command the
// suite runs is an agent that reaches the suite's server only through
// `agentvalues gateway` (see conformanceAgentArg). The same scenarios run
// with the go-sdk's conformance everything-client alone; every scenario
// that passes there must pass through the gateway, but for those
// conformanceClientKnown lists. A scenario passes when none of its checks
// fails or warns (sse-retry warns when the client reconnects without
// Last-Event-ID) and the client exits 0. The agent runs twice: at
// protocol 2025-11-25, what clients mostly speak, and at the go-sdk's
// latest.
func TestConformanceClient(t *testing.T) {
	t.Parallel()
	node, prefix := conformanceSuite(t)
	sdkClient := buildConformancePeer(t, "everything-client")
	if strings.ContainsAny(os.Args[0]+sdkClient, " \t'\"\\$") {
		t.Fatalf("the suite splits its --command at spaces and hands it to a shell: %q, %q", os.Args[0], sdkClient)
	}

	targets := []struct{ name, desc, command, protocol string }{
		{"direct", "the go-sdk's client alone", sdkClient, ""},
		{"gateway", "through the gateway, the agent at 2025-11-25", os.Args[0] + " " + conformanceAgentArg, "2025-11-25"},
		{"gateway-latest", "through the gateway, the agent at the go-sdk's latest", os.Args[0] + " " + conformanceAgentArg, ""},
	}
	results := map[string]map[string]string{} // target: scenario: failure ("" when it passed)
	for _, target := range targets {
		results[target.name] = map[string]string{}
		for _, scenario := range slices.Sorted(maps.Keys(conformanceClientScenarios)) {
			var failure string
			for try := 1; ; try++ {
				var timingOnly bool
				failure, timingOnly = runConformanceClient(t, node, prefix, target.command, target.protocol, scenario)
				if !timingOnly || try == conformanceTimingTries {
					break
				}
				t.Logf("%s: %s failed only on time, try %d: %s", target.desc, scenario, try, failure)
			}
			results[target.name][scenario] = failure
			outcome := "passes"
			if failure != "" {
				outcome = "fails: " + failure
			}
			t.Logf("%s: %s %s", target.desc, scenario, outcome)
		}
	}

	for _, target := range targets[1:] {
		var passed, total int
		for _, scenario := range slices.Sorted(maps.Keys(conformanceClientScenarios)) {
			if results["direct"][scenario] != "" {
				t.Logf("%s fails with the go-sdk's client alone: %s", scenario, results["direct"][scenario])
				continue
			}
			total++
			failure := results[target.name][scenario]
			known := conformanceClientKnown[target.name][scenario]
			switch {
			case failure == "" && known != "":
				t.Errorf("%s: %s passes now; take it off conformanceClientKnown (%q)", target.desc, scenario, known)
			case failure != "" && known == "":
				t.Errorf("%s: %s fails: %s", target.desc, scenario, failure)
			}
			if failure == "" {
				passed++
			}
		}
		t.Logf("%s: %d of the %d scenarios that pass with the go-sdk's client alone", target.desc, passed, total)
	}
}

// runConformanceClient runs the suite's client scenario with command as
// the client and returns its first failed check or warning, or, when
// every check passed, what else failed (the client's exit status); "" when
// nothing did. timingOnly reports that the only checks that failed are
// conformanceTimingCheck.
func runConformanceClient(t *testing.T, node, prefix, command, protocol, scenario string) (failure string, timingOnly bool) {
	t.Helper()
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cli := filepath.Join(prefix, conformanceCLI, "dist", "index.js")
	cmd := exec.CommandContext(ctx, node, cli, "client", "--command", command, "--scenario", scenario, "-o", out)
	cmd.Env = testkit.ChildEnv(runMainEnv+"=1", conformanceAgentProtocolEnv+"="+protocol, "PATH="+filepath.Dir(node)+string(os.PathListSeparator)+os.Getenv("PATH"))
	log, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the conformance suite's %s with %s: %v\n%s", scenario, command, ctx.Err(), log)
	}
	dirs, gerr := filepath.Glob(filepath.Join(out, scenario+"-*"))
	if gerr != nil || len(dirs) != 1 {
		t.Fatalf("the conformance suite's %s with %s wrote %d results (%v):\n%s", scenario, command, len(dirs), gerr, log)
	}
	data, rerr := os.ReadFile(filepath.Join(dirs[0], "checks.json"))
	var checks []struct{ ID, Status, ErrorMessage string }
	if rerr == nil {
		rerr = json.Unmarshal(data, &checks)
	}
	if rerr != nil {
		t.Fatalf("%s: %v", dirs[0], rerr)
	}
	timingOnly = true
	for _, c := range checks {
		if c.Status != "FAILURE" && c.Status != "WARNING" {
			continue
		}
		if failure == "" {
			failure = c.ID + ": " + c.ErrorMessage
		}
		timingOnly = timingOnly && c.ID == conformanceTimingCheck
	}
	if failure == "" {
		timingOnly = false
		if err != nil { // the client failed, or timed out, with every check passed
			stderr, _ := os.ReadFile(filepath.Join(dirs[0], "stderr.txt"))
			failure = fmt.Sprintf("the suite: %v; the client's stderr:\n%s", err, stderr)
		}
	}
	return failure, timingOnly
}
