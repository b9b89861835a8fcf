package eino_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/contrib/eino"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"
	"github.com/google/go-cmp/cmp"
)

// recorder keeps what a tool received, from any goroutine.
type recorder struct {
	mu  sync.Mutex
	got []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, s)
}

func (r *recorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// testTools returns list_users (100 rows of the page asked for; before each
// call, enter runs, when not nil), send_mail (records whom it mailed) and
// count_rows (takes the rows themselves), all made by Eino's InferTool.
func testTools(t *testing.T, mailed *recorder, enter func() error) []tool.BaseTool {
	t.Helper()
	list, err := utils.InferTool("list_users", "Lists 100 users of a page.", func(ctx context.Context, in listUsersInput) (listUsersOutput, error) {
		if enter != nil {
			if err := enter(); err != nil {
				return listUsersOutput{}, err
			}
		}
		return usersOf(in.Page), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	send, err := utils.InferTool("send_mail", "Sends a mail.", func(ctx context.Context, in sendMailInput) (string, error) {
		mailed.add(in.To)
		return "sent to " + in.To, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	type countInput struct {
		Rows []user `json:"rows"`
	}
	count, err := utils.InferTool("count_rows", "Counts rows.", func(ctx context.Context, in countInput) (string, error) {
		if len(in.Rows) == 0 {
			return "no rows", nil
		}
		return fmt.Sprintf("%d rows, last %s", len(in.Rows), in.Rows[len(in.Rows)-1].Email), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return []tool.BaseTool{list, send, count}
}

// newAgent configures tools with av and builds a ReAct agent over m.
func newAgent(t *testing.T, av *eino.Adapter, m *scriptedModel, tools []tool.BaseTool) *react.Agent {
	t.Helper()
	ctx := context.Background()
	conf := compose.ToolsNodeConfig{Tools: tools}
	if err := av.Configure(ctx, &conf); err != nil {
		t.Fatal(err)
	}
	agent, err := react.NewAgent(ctx, &react.AgentConfig{ToolCallingModel: m, ToolsConfig: conf, MaxStep: 100})
	if err != nil {
		t.Fatal(err)
	}
	return agent
}

// shown matches the line a read_value page ends with when more follows.
var shown = regexp.MustCompile(`\[shown: bytes (\d+)-(\d+) of (\d+); next page: read_value (\{.*\})\]$`)

// TestAgentLoop drives Eino's ReAct agent through the whole story: a large
// result reaches the model as a preview, references reach the tools as the
// values they name, bad ones come back to the model as tool messages naming
// them, read_value pages the value back byte for byte, and a query_value
// result is itself a value to pass on.
func TestAgentLoop(t *testing.T) {
	mailed := new(recorder)
	full := usersJSON(1)
	var (
		stage int
		paged strings.Builder
		pages int
		next  = 8 // the id number of the next read_value call
	)
	m := &scriptedModel{}
	m.script = func(turn int, in []*schema.Message) (*schema.Message, error) {
		msg := func(id string) string {
			s, err := toolMessage(in, id)
			if err != nil {
				t.Error(err)
			}
			return s
		}
		stage++
		switch stage {
		case 1:
			return calls(1, "list_users", `{"page":1}`), nil
		case 2:
			got := msg("c1")
			if !strings.HasPrefix(got, "r1 = json(") || !strings.Contains(got, `read_value {"ref":"r1"}`) {
				t.Errorf("turn 2: the model got, for a %d-byte result:\n%s\nwant a preview of r1 with its hint", len(full), got)
			}
			if strings.Contains(got, "p1-user57@") || len(got) > len(full)/2 {
				t.Errorf("turn 2: the model got %d bytes holding row 57, not a preview:\n%s", len(got), got)
			}
			return calls(2, "send_mail", `{"to":"$r1.rows.57.email"}`, "count_rows", `{"rows":"$r1.rows"}`), nil
		case 3:
			if got := firstLine(msg("c2")); got != "sent to p1-user57@example.com" {
				t.Errorf("turn 3: send_mail answered %q", got)
			}
			if got := firstLine(msg("c3")); got != "100 rows, last p1-user99@example.com" {
				t.Errorf("turn 3: count_rows answered %q", got)
			}
			return calls(4, "send_mail", `{"to":"$r9"}`, "send_mail", `{"to":"$r1.rows.57"}`, "send_mail", `{"to":"$r1.rows.100.email"}`), nil
		case 4:
			for id, want := range map[string]string{
				"c4": `"$r9"`,
				"c5": `/to: want string, got object (from $r1.rows.57)`,
				"c6": `$r1.rows.100.email`,
			} {
				got := msg(id)
				if !strings.HasPrefix(got, "send_mail was not called: ") || !strings.Contains(got, want) {
					t.Errorf("turn 4: the tool message for %s is\n%s\nwant send_mail was not called: … %s …", id, got, want)
				}
			}
			return calls(7, "read_value", `{"ref":"r1","limit":1000}`), nil
		case 5:
			// Follow read_value's hint to the last page, as a model would.
			page := msg(fmt.Sprintf("c%d", next-1))
			pages++
			if sm := shown.FindStringSubmatch(page); sm != nil {
				from, _ := strconv.Atoi(sm[1])
				to, _ := strconv.Atoi(sm[2])
				if len(page) > 1000 {
					t.Errorf("page %d is %d bytes, over its limit of 1000", pages, len(page))
				}
				paged.WriteString(page[:to-from+1])
				stage-- // stay here
				next++
				var args map[string]any
				if err := json.Unmarshal([]byte(sm[4]), &args); err != nil {
					t.Fatalf("page %d: next-page hint %q: %v", pages, sm[4], err)
				}
				args["limit"] = 1000
				b, _ := json.Marshal(args)
				return calls(next-1, "read_value", string(b)), nil
			}
			paged.WriteString(page)
			if diff := cmp.Diff(full, paged.String()); diff != "" {
				t.Errorf("read_value pages do not reassemble list_users's result (-want +got):\n%s", diff)
			}
			if pages < 4 {
				t.Errorf("read %d pages of 1000 bytes of a %d-byte value", pages, len(full))
			}
			return calls(next, "query_value", `{"ref":"r1","jq":"[.rows[] | select(.id % 10 == 0) | .email]"}`), nil
		case 6:
			got := msg(fmt.Sprintf("c%d", next))
			if !strings.Contains(got, `"p1-user90@example.com"]`) || !strings.Contains(got, "r4") {
				t.Errorf("query_value answered\n%s\nwant the ten emails, stored as r4", got)
			}
			return calls(next+1, "send_mail", `{"to":"$r4.-1"}`), nil
		case 7:
			if got := firstLine(msg(fmt.Sprintf("c%d", next+1))); got != "sent to p1-user90@example.com" {
				t.Errorf("turn %d: send_mail answered %q", turn, got)
			}
			return schema.AssistantMessage("done", nil), nil
		}
		return nil, fmt.Errorf("unscripted turn %d", turn)
	}

	av := eino.New(values.New())
	agent := newAgent(t, av, m, testTools(t, mailed, nil))
	out, err := agent.Generate(context.Background(), []*schema.Message{schema.UserMessage("mail user 57")})
	if err != nil {
		t.Fatal(err)
	}
	if out.Content != "done" {
		t.Errorf("the agent answered %q, want done", out.Content)
	}
	if diff := cmp.Diff([]string{"p1-user57@example.com", "p1-user90@example.com"}, mailed.all()); diff != "" {
		t.Errorf("send_mail received (-want +got):\n%s", diff)
	}
	if names := m.toolNames(); !slices.Contains(names, "read_value") || !slices.Contains(names, "query_value") {
		t.Errorf("the model was offered %v, want read_value and query_value among them", names)
	}
}

// handleOf matches the handle a preview or a whole result names.
var handleOf = regexp.MustCompile(`^(r\d+) = |\[stored as (r\d+)`)

// TestParallelCalls drives the ReAct agent with model messages of many calls,
// which Eino's tools node runs at once (list_users proves it: each call waits
// for the others), under -race.
func TestParallelCalls(t *testing.T) {
	const n = 4
	var arrived sync.WaitGroup
	arrived.Add(n)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	enter := func() error {
		arrived.Done()
		select {
		case <-all:
			return nil
		case <-time.After(20 * time.Second):
			return errors.New("the list_users calls did not run at the same time")
		}
	}

	mailed := new(recorder)
	handles := make(map[int]string) // page → handle
	m := &scriptedModel{}
	m.script = func(turn int, in []*schema.Message) (*schema.Message, error) {
		switch turn {
		case 1:
			var args []string
			for p := 1; p <= n; p++ {
				args = append(args, "list_users", fmt.Sprintf(`{"page":%d}`, p))
			}
			return calls(1, args...), nil
		case 2:
			var args []string
			for p := 1; p <= n; p++ {
				got, err := toolMessage(in, fmt.Sprintf("c%d", p))
				if err != nil {
					return nil, err
				}
				h := handleOf.FindStringSubmatch(got)
				if h == nil || strings.Contains(got, fmt.Sprintf("p%d-user50@", p)) {
					t.Errorf("page %d: the model got\n%s\nwant a preview", p, got)
					continue
				}
				handles[p] = h[1]
				args = append(args,
					"send_mail", fmt.Sprintf(`{"to":"$%s.rows.%d.email"}`, h[1], 10*p),
					"read_value", fmt.Sprintf(`{"ref":"%s","limit":300}`, h[1]))
			}
			args = append(args, "send_mail", `{"to":"$r99.x"}`, "count_rows", `{"rows":"$r1.rows"}`)
			return calls(n+1, args...), nil
		case 3:
			for i := range n {
				p := i + 1
				mail, _ := toolMessage(in, fmt.Sprintf("c%d", n+1+2*i))
				if want := fmt.Sprintf("sent to p%d-user%d@example.com", p, 10*p); firstLine(mail) != want {
					t.Errorf("page %d: send_mail answered %q, want %q", p, firstLine(mail), want)
				}
				page, _ := toolMessage(in, fmt.Sprintf("c%d", n+2+2*i))
				if want := fmt.Sprintf(`{"rows":[{"id":0,"email":"p%d-user0@`, p); !strings.HasPrefix(page, want) {
					t.Errorf("page %d: read_value answered\n%s\nwant it to start %s", p, page, want)
				}
			}
			bad, _ := toolMessage(in, fmt.Sprintf("c%d", 3*n+1))
			if !strings.HasPrefix(bad, "send_mail was not called: ") || !strings.Contains(bad, `$r99.x`) {
				t.Errorf("a bad reference came back as\n%s", bad)
			}
			count, _ := toolMessage(in, fmt.Sprintf("c%d", 3*n+2))
			if !strings.HasPrefix(count, "100 rows, last p") {
				t.Errorf("count_rows answered %q", count)
			}
			return schema.AssistantMessage("done", nil), nil
		}
		return nil, fmt.Errorf("unscripted turn %d", turn)
	}

	av := eino.New(values.New())
	agent := newAgent(t, av, m, testTools(t, mailed, enter))
	if _, err := agent.Generate(context.Background(), []*schema.Message{schema.UserMessage("mail one user of each page")}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range handles {
		got = append(got, h)
	}
	slices.Sort(got)
	if diff := cmp.Diff([]string{"r1", "r2", "r3", "r4"}, got); diff != "" {
		t.Errorf("the parallel results' handles (-want +got):\n%s", diff)
	}
	want := []string{"p1-user10@example.com", "p2-user20@example.com", "p3-user30@example.com", "p4-user40@example.com"}
	mails := mailed.all()
	slices.Sort(mails)
	if diff := cmp.Diff(want, mails); diff != "" {
		t.Errorf("send_mail received (-want +got):\n%s", diff)
	}
	if got := av.Values(context.Background()).Len(); got != n+n+1 {
		t.Errorf("the store holds %d values, want %d (4 lists, 4 mails, 1 count)", got, n+n+1)
	}
}

// TestStreamingTool stores the result of a tool that streams its output, in
// both of the agent's modes: Generate (the tools node invokes it) and Stream
// (the tools node streams it).
func TestStreamingTool(t *testing.T) {
	type tailInput struct {
		Lines int `json:"lines"`
	}
	type countInput struct {
		Text string `json:"text"`
	}
	var full strings.Builder
	for i := range 300 {
		fmt.Fprintf(&full, "12:00:%03d GET /items/%d 200\n", i, i)
	}
	tail, err := utils.InferStreamTool("tail_log", "Streams the log.", func(ctx context.Context, in tailInput) (*schema.StreamReader[string], error) {
		lines := strings.SplitAfter(full.String(), "\n")
		return schema.StreamReaderFromArray(lines[:in.Lines]), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	count, err := utils.InferTool("count_lines", "Counts lines.", func(ctx context.Context, in countInput) (string, error) {
		return fmt.Sprintf("%d lines, %d bytes", strings.Count(in.Text, "\n"), len(in.Text)), nil
	})
	if err != nil {
		t.Fatal(err)
	}

	for _, mode := range []string{"generate", "stream"} {
		t.Run(mode, func(t *testing.T) {
			m := &scriptedModel{}
			m.script = func(turn int, in []*schema.Message) (*schema.Message, error) {
				switch turn {
				case 1:
					return calls(1, "tail_log", `{"lines":300}`), nil
				case 2:
					got, err := toolMessage(in, "c1")
					if err != nil {
						return nil, err
					}
					if !strings.HasPrefix(got, "r1 = text(") || strings.Contains(got, "/items/150 ") {
						t.Errorf("the model got, for a streamed %d-byte log:\n%s\nwant a preview of r1", full.Len(), got)
					}
					return calls(2, "count_lines", `{"text":"$r1"}`), nil
				case 3:
					got, err := toolMessage(in, "c2")
					if err != nil {
						return nil, err
					}
					if want := fmt.Sprintf("300 lines, %d bytes", full.Len()); firstLine(got) != want {
						t.Errorf("count_lines answered %q, want %q", firstLine(got), want)
					}
					return schema.AssistantMessage("done", nil), nil
				}
				return nil, fmt.Errorf("unscripted turn %d", turn)
			}
			agent := newAgent(t, eino.New(nil), m, []tool.BaseTool{tail, count})
			ctx := context.Background()
			in := []*schema.Message{schema.UserMessage("count the log's lines")}
			var answer string
			if mode == "generate" {
				out, err := agent.Generate(ctx, in)
				if err != nil {
					t.Fatal(err)
				}
				answer = out.Content
			} else {
				sr, err := agent.Stream(ctx, in)
				if err != nil {
					t.Fatal(err)
				}
				var chunks []*schema.Message
				for {
					c, err := sr.Recv()
					if err != nil {
						break
					}
					chunks = append(chunks, c)
				}
				sr.Close()
				out, err := schema.ConcatMessages(chunks)
				if err != nil {
					t.Fatal(err)
				}
				answer = out.Content
			}
			if answer != "done" || m.turns() != 3 {
				t.Errorf("the agent answered %q after %d turns, want done after 3", answer, m.turns())
			}
		})
	}
}

// TestArgumentsHandlerErrorStopsTheRun is why ResolveArguments never returns
// an error: in Eino an error of a ToolArgumentsHandler stops the whole run,
// and the model never sees it. If Eino ever hands it to the model instead,
// this fails, and the marker can go.
func TestArgumentsHandlerErrorStopsTheRun(t *testing.T) {
	m := &scriptedModel{}
	m.script = func(turn int, in []*schema.Message) (*schema.Message, error) {
		if turn == 1 {
			return calls(1, "send_mail", `{"to":"$r9"}`), nil
		}
		return schema.AssistantMessage("done", nil), nil
	}
	conf := compose.ToolsNodeConfig{
		Tools: testTools(t, new(recorder), nil),
		ToolArgumentsHandler: func(ctx context.Context, name, arguments string) (string, error) {
			return "", errors.New(`"$r9" is not a stored value`)
		},
	}
	ctx := context.Background()
	agent, err := react.NewAgent(ctx, &react.AgentConfig{ToolCallingModel: m, ToolsConfig: conf})
	if err != nil {
		t.Fatal(err)
	}
	_, err = agent.Generate(ctx, []*schema.Message{schema.UserMessage("go")})
	if err == nil || !strings.Contains(err.Error(), "$r9") || m.turns() != 1 {
		t.Errorf("an arguments handler's error: run error %v after %d model turns; want the run stopped after 1", err, m.turns())
	}
}

// TestRunStores builds one agent and runs it twice, each run with its own
// store (WithValues): both runs number their results from r1.
func TestRunStores(t *testing.T) {
	m := &scriptedModel{}
	m.script = func(turn int, in []*schema.Message) (*schema.Message, error) {
		if turn%2 == 1 {
			return calls(turn, "list_users", `{"page":1}`), nil
		}
		got, err := toolMessage(in, fmt.Sprintf("c%d", turn-1))
		if err != nil {
			return nil, err
		}
		return schema.AssistantMessage(firstLine(got)[:4], nil), nil
	}
	av := eino.New(nil)
	agent := newAgent(t, av, m, testTools(t, new(recorder), nil))
	for run := range 2 {
		vals := values.New()
		ctx := eino.WithValues(context.Background(), vals)
		out, err := agent.Generate(ctx, []*schema.Message{schema.UserMessage("list")})
		if err != nil {
			t.Fatal(err)
		}
		if out.Content != "r1 =" || vals.Len() != 1 {
			t.Errorf("run %d: the model saw %q and the run's store holds %d values; want r1 and 1", run, out.Content, vals.Len())
		}
	}
	if got := av.Values(context.Background()).Len(); got != 0 {
		t.Errorf("the adapter's own store holds %d values, want none", got)
	}
}

// TestEnhancedTool runs a multimodal tool in Eino's tools node: its
// arguments are resolved, a bad reference is refused as for any tool, and
// its result passes through unstored.
func TestEnhancedTool(t *testing.T) {
	type lookInput struct {
		Path string `json:"path"`
	}
	look, err := utils.InferEnhancedTool("look", "Looks at a file.", func(ctx context.Context, in lookInput) (*schema.ToolResult, error) {
		return &schema.ToolResult{Parts: []schema.ToolOutputPart{{Type: schema.ToolPartTypeText, Text: "looked at " + in.Path}}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	vals := values.New()
	if _, err := vals.Put(map[string]any{"path": "a.png"}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conf := compose.ToolsNodeConfig{Tools: []tool.BaseTool{look}}
	if err := eino.New(vals).Configure(ctx, &conf); err != nil {
		t.Fatal(err)
	}
	tn, err := compose.NewToolNode(ctx, &conf)
	if err != nil {
		t.Fatal(err)
	}
	out, err := tn.Invoke(ctx, calls(1, "look", `{"path":"$r1.path"}`, "look", `{"path":"$r1.nope"}`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, msg := range out {
		for _, part := range msg.UserInputMultiContent {
			got = append(got, firstLine(part.Text))
		}
	}
	want := []string{"looked at a.png", `look was not called: values: arguments do not match the tool's input schema (1 violation)`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the tools node answered (-want +got):\n%s", diff)
	}
	if vals.Len() != 1 {
		t.Errorf("the store holds %d values, want 1: an enhanced tool's result is not stored", vals.Len())
	}
}

// TestConfigure checks what Configure refuses and that a handler already
// configured runs after resolution, and never for a refused call.
func TestConfigure(t *testing.T) {
	ctx := context.Background()
	av := eino.New(nil)
	dup := compose.ToolsNodeConfig{Tools: av.Tools()[:1]}
	if err := av.Configure(ctx, &dup); err == nil || len(dup.Tools) != 1 || dup.ToolArgumentsHandler != nil {
		t.Errorf("Configure over a tool named read_value: %v, %d tools; want an error and nothing changed", err, len(dup.Tools))
	}

	if _, err := av.Values(ctx).Put(map[string]any{"to": "ann@example.com"}); err != nil {
		t.Fatal(err)
	}
	var seen []string
	conf := compose.ToolsNodeConfig{
		Tools: testTools(t, new(recorder), nil),
		ToolArgumentsHandler: func(ctx context.Context, name, arguments string) (string, error) {
			seen = append(seen, arguments)
			return arguments, nil
		},
	}
	if err := av.Configure(ctx, &conf); err != nil {
		t.Fatal(err)
	}
	for _, args := range []string{`{"to":"$r1.to"}`, `{"to":"$r2"}`} {
		if _, err := conf.ToolArgumentsHandler(ctx, "send_mail", args); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{`{"to":"ann@example.com"}`}, seen); diff != "" {
		t.Errorf("the handler configured before saw (-want +got):\n%s", diff)
	}
	if len(conf.Tools) != 5 || len(conf.ToolCallMiddlewares) != 1 {
		t.Errorf("Configure left %d tools and %d middlewares, want 5 and 1", len(conf.Tools), len(conf.ToolCallMiddlewares))
	}
}
