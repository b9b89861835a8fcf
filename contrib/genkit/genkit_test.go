package genkit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	values "github.com/agentvalues/values"
	avgenkit "github.com/agentvalues/values/contrib/genkit"
	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
	"github.com/google/go-cmp/cmp"
)

// The tools of the tests: list_rows returns a large result, count_rows
// takes an array (so a "$r1.rows" string fails Genkit's own schema check
// unless it is resolved first), send_mail takes a string.

type row struct {
	ID    int    `json:"id"`
	Email string `json:"email"`
}

type listIn struct {
	N int `json:"n"`
}

type listOut struct {
	Rows []row `json:"rows"`
}

type countIn struct {
	Rows []row `json:"rows"`
}

type mailIn struct {
	To string `json:"to"`
}

func rows(n int) []row {
	out := make([]row, n)
	for i := range out {
		out[i] = row{ID: i, Email: fmt.Sprintf("user%d@example.com", i)}
	}
	return out
}

// recorder records what the tools receive; tool calls run in parallel.
type recorder struct {
	mu     sync.Mutex
	counts [][]row
	mails  []string
}

func (r *recorder) tools() []ai.Tool {
	return []ai.Tool{
		ai.NewTool("list_rows", "Lists n rows of the user table.",
			func(_ *ai.ToolContext, in listIn) (listOut, error) {
				return listOut{Rows: rows(in.N)}, nil
			}),
		ai.NewTool("count_rows", "Counts the rows it is given.",
			func(_ *ai.ToolContext, in countIn) (string, error) {
				r.mu.Lock()
				defer r.mu.Unlock()
				r.counts = append(r.counts, in.Rows)
				return fmt.Sprintf("%d rows", len(in.Rows)), nil
			}),
		ai.NewTool("send_mail", "Sends a mail.",
			func(_ *ai.ToolContext, in mailIn) (string, error) {
				r.mu.Lock()
				defer r.mu.Unlock()
				r.mails = append(r.mails, in.To)
				return "sent to " + in.To, nil
			}),
	}
}

func (r *recorder) received() ([][]row, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]row(nil), r.counts...), append([]string(nil), r.mails...)
}

// scriptedModel registers in g a model whose turn n (the number of tool
// messages in the request) is script(t, n, req): the model sees only what
// Genkit hands it. Each request is recorded.
type scriptedModel struct {
	ai.Model
	mu   sync.Mutex
	reqs []*ai.ModelRequest
}

func defineScripted(g *genkit.Genkit, name string, script func(n int, req *ai.ModelRequest) []*ai.Part) *scriptedModel {
	m := &scriptedModel{}
	m.Model = genkit.DefineModel(g, name, &ai.ModelOptions{Supports: &ai.ModelSupports{Tools: true, Multiturn: true}},
		func(ctx context.Context, req *ai.ModelRequest, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
			m.mu.Lock()
			m.reqs = append(m.reqs, req)
			m.mu.Unlock()
			n := 0
			for _, msg := range req.Messages {
				if msg.Role == ai.RoleTool {
					n++
				}
			}
			parts := script(n, req)
			if parts == nil {
				return nil, fmt.Errorf("scripted model: no turn %d", n)
			}
			return &ai.ModelResponse{Message: ai.NewModelMessage(parts...), FinishReason: ai.FinishReasonStop}, nil
		})
	return m
}

func call(ref, name, input string) *ai.Part {
	var in any
	if err := json.Unmarshal([]byte(input), &in); err != nil {
		panic(err)
	}
	return ai.NewToolRequestPart(&ai.ToolRequest{Name: name, Ref: ref, Input: in})
}

// outputs returns the tool outputs of the request's last message, by ref,
// failing the test for an output that is not a string.
func outputs(t *testing.T, req *ai.ModelRequest) map[string]string {
	t.Helper()
	last := req.Messages[len(req.Messages)-1]
	if last.Role != ai.RoleTool {
		t.Errorf("last message is %s, want tool", last.Role)
		return nil
	}
	out := map[string]string{}
	for _, p := range last.Content {
		if !p.IsToolResponse() {
			continue
		}
		s, ok := p.ToolResponse.Output.(string)
		if !ok {
			t.Errorf("output of %s (%s) is %T, want string", p.ToolResponse.Name, p.ToolResponse.Ref, p.ToolResponse.Output)
		}
		out[p.ToolResponse.Ref] = s
	}
	return out
}

// TestGenerateLoop drives genkit.Generate through every move: a large
// result reaches the model as a preview, references reach the tools as real
// values, bad references come back to the model, read_value pages a value
// and query_value computes over one.
func TestGenerateLoop(t *testing.T) {
	ctx := context.Background()
	g := genkit.Init(ctx)
	rec := &recorder{}
	var (
		mu     sync.Mutex
		failed []string // failures seen by the model, reported after Generate
		paged  strings.Builder
		pages  int
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		failed = append(failed, fmt.Sprintf(format, args...))
	}
	const readTurn = 3
	var lastRead = -1 // the turn that got the last page
	model := defineScripted(g, "test/loop", func(n int, req *ai.ModelRequest) []*ai.Part {
		var out map[string]string
		if n > 0 {
			out = outputs(t, req)
		}
		switch {
		case n == 0:
			// The model is shown count_rows's schema with a reference
			// admitted where an array of rows is asked for.
			for _, td := range req.Tools {
				if td.Name != "count_rows" {
					continue
				}
				raw, _ := json.Marshal(td.InputSchema)
				if s, err := values.CompileSchema(raw); err != nil {
					fail("count_rows is shown a schema that does not compile: %v", err)
				} else if err := s.Validate([]byte(`{"rows":"$r1.rows"}`)); err != nil {
					fail("count_rows is shown a schema that refuses a reference: %v\n%s", err, raw)
				}
			}
			return []*ai.Part{call("t1", "list_rows", `{"n":100}`)}
		case n == 1:
			// The model is shown a bounded preview of the 100 rows, with the handle.
			p := out["t1"]
			if !strings.HasPrefix(p, "r1 = json(") || !strings.Contains(p, "len=100") || !strings.Contains(p, `"$r1`) || !strings.Contains(p, "read_value") {
				fail("turn 1 output is not a preview of r1 naming read_value:\n%s", p)
			}
			if strings.Contains(p, "user57@example.com") || len(p) > values.DefaultMaxPreview+512 {
				fail("turn 1 output holds the middle rows or is too long (%d bytes):\n%s", len(p), p)
			}
			return []*ai.Part{
				call("t2a", "count_rows", `{"rows":"$r1.rows"}`),
				call("t2b", "send_mail", `{"to":"$r1.rows.57.email"}`),
			}
		case n == 2:
			if !strings.HasPrefix(out["t2a"], "100 rows") || !strings.HasPrefix(out["t2b"], "sent to user57@example.com") {
				fail("turn 2 outputs: %q", out)
			}
			return []*ai.Part{
				call("t3a", "send_mail", `{"to":"$r9.email"}`),
				call("t3b", "send_mail", `{"to":"$r1.rows.57"}`),
				call("t3c", "count_rows", `{"rows":"$r1..rows"}`),
			}
		case n == readTurn:
			for ref, want := range map[string][]string{
				"t3a": {"send_mail was not called: ", "$r9"},
				"t3b": {"send_mail was not called: ", "$r1.rows.57", "/to"},
				"t3c": {"count_rows was not called: ", "$r1..rows"},
			} {
				for _, w := range want {
					if !strings.Contains(out[ref], w) {
						fail("output of %s does not contain %q:\n%s", ref, w, out[ref])
					}
				}
			}
			return []*ai.Part{call(fmt.Sprintf("read%d", n), "read_value", `{"ref":"r1","limit":1024}`)}
		case lastRead < 0:
			// Page on with the call each page ends with, as a model would.
			page := out[fmt.Sprintf("read%d", n-1)]
			pages++
			if len(page) > 1024 {
				fail("page %d is %d bytes, over the limit 1024", pages, len(page))
			}
			content, next, ok := strings.Cut(page, "[shown: bytes ")
			if !ok {
				paged.WriteString(page)
				lastRead = n
				return []*ai.Part{call("tq", "query_value", `{"ref":"r1","jq":"[.rows[] | select(.id % 10 == 0) | .email]"}`)}
			}
			paged.WriteString(strings.TrimSuffix(content, "\n"))
			_, args, _ := strings.Cut(next, "next page: read_value ")
			var in map[string]any
			if err := json.Unmarshal([]byte(strings.TrimSuffix(args, "]")), &in); err != nil {
				fail("page %d does not end with a read_value call: %v\n%s", pages, err, page)
				return []*ai.Part{ai.NewTextPart("lost")}
			}
			in["limit"] = 1024
			b, _ := json.Marshal(in)
			return []*ai.Part{call(fmt.Sprintf("read%d", n), "read_value", string(b))}
		case n == lastRead+1:
			q := out["tq"]
			// Small: shown whole, with the new handle.
			if !strings.HasPrefix(q, `["user0@example.com","user10@example.com",`) || !strings.Contains(q, `"user90@example.com"]`) || !strings.Contains(q, `"$r4"`) {
				fail("query_value output:\n%s", q)
			}
			return []*ai.Part{ai.NewTextPart("done")}
		}
		return nil
	})

	vals := values.New()
	resp, err := genkit.Generate(ctx, g,
		ai.WithModel(model),
		ai.WithPrompt("Mail user 57, then read the table."),
		ai.WithMaxTurns(40),
		ai.WithTools(avgenkit.Tools(g, vals, rec.tools()...)...),
	)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	for _, f := range failed {
		t.Error(f)
	}
	if resp.Text() != "done" {
		t.Errorf("final text %q, want done", resp.Text())
	}

	// The tools received the real values, and nothing for the bad references.
	counts, mails := rec.received()
	if diff := cmp.Diff([][]row{rows(100)}, counts); diff != "" {
		t.Errorf("count_rows received (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"user57@example.com"}, mails); diff != "" {
		t.Errorf("send_mail received (-want +got):\n%s", diff)
	}

	// The pages reassemble the stored value.
	if pages < 3 {
		t.Errorf("read_value took %d pages of 1024 bytes, want at least 3", pages)
	}
	var got listOut
	if err := json.Unmarshal([]byte(paged.String()), &got); err != nil {
		t.Errorf("the pages do not reassemble JSON: %v\n%s", err, paged.String())
	} else if diff := cmp.Diff(listOut{Rows: rows(100)}, got); diff != "" {
		t.Errorf("paged value (-want +got):\n%s", diff)
	}

	// The history keeps the model's calls as written: the reference, not the value.
	last := model.last()
	var inputs []string
	for _, msg := range last.Messages {
		for _, p := range msg.Content {
			if p.IsToolRequest() && p.ToolRequest.Name == "count_rows" {
				b, _ := json.Marshal(p.ToolRequest.Input)
				inputs = append(inputs, string(b))
			}
		}
	}
	if diff := cmp.Diff([]string{`{"rows":"$r1.rows"}`, `{"rows":"$r1..rows"}`}, inputs); diff != "" {
		t.Errorf("count_rows calls in the history (-want +got):\n%s", diff)
	}
}

func (m *scriptedModel) last() *ai.ModelRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reqs[len(m.reqs)-1]
}

// TestParallelCalls has Genkit run three large results and a reference in
// parallel, in one turn: each result gets a handle of its own, its preview
// its own length, and the next turn's references name the right values.
func TestParallelCalls(t *testing.T) {
	ctx := context.Background()
	g := genkit.Init(ctx)
	rec := &recorder{}
	var (
		mu      sync.Mutex
		failed  []string
		handles = map[string]string{} // ref of the call -> handle of its result
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		failed = append(failed, fmt.Sprintf(format, args...))
	}
	sizes := map[string]int{"a": 100, "b": 120, "c": 140}
	model := defineScripted(g, "test/parallel", func(n int, req *ai.ModelRequest) []*ai.Part {
		switch n {
		case 0:
			return []*ai.Part{call("first", "list_rows", `{"n":3}`)}
		case 1:
			var parts []*ai.Part
			for ref, size := range sizes {
				parts = append(parts, call(ref, "list_rows", fmt.Sprintf(`{"n":%d}`, size)))
			}
			return append(parts, call("mail", "send_mail", `{"to":"$r1.rows.-1.email"}`))
		case 2:
			out := outputs(t, req)
			if !strings.HasPrefix(out["mail"], "sent to user2@example.com") {
				fail("mail output: %q", out["mail"])
			}
			for ref, size := range sizes {
				h, _, ok := strings.Cut(out[ref], " = ")
				if !ok || !strings.Contains(out[ref], fmt.Sprintf("array(len=%d,", size)) {
					fail("output of %s is not a preview of %d rows:\n%s", ref, size, out[ref])
					continue
				}
				handles[ref] = h
			}
			var parts []*ai.Part
			for ref := range sizes {
				parts = append(parts, call("mail-"+ref, "send_mail", fmt.Sprintf(`{"to":"$%s.rows.-1.email"}`, handles[ref])))
			}
			return parts
		case 3:
			return []*ai.Part{ai.NewTextPart("done")}
		}
		return nil
	})
	vals := values.New()
	if _, err := genkit.Generate(ctx, g, ai.WithModel(model), ai.WithPrompt("go"),
		ai.WithTools(avgenkit.Tools(g, vals, rec.tools()...)...)); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	for _, f := range failed {
		t.Error(f)
	}
	seen := map[string]bool{}
	for ref, h := range handles {
		if seen[h] {
			t.Errorf("handle %s given to two results", h)
		}
		seen[h] = true
		if h == "r1" {
			t.Errorf("result %s got r1, the handle of the first turn's result", ref)
		}
	}
	_, mails := rec.received()
	got := map[string]int{}
	for _, m := range mails {
		got[m]++
	}
	want := map[string]int{"user2@example.com": 1, "user99@example.com": 1, "user119@example.com": 1, "user139@example.com": 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("send_mail received (-want +got):\n%s", diff)
	}
}

// TestConcurrentRuns runs Generate twice at once, on one Genkit instance and
// the same tools, each run with a store of its own: each run's "$r1" is its
// own result.
func TestConcurrentRuns(t *testing.T) {
	ctx := context.Background()
	g := genkit.Init(ctx)
	rec := &recorder{}
	tools := rec.tools()
	model := defineScripted(g, "test/runs", func(n int, req *ai.ModelRequest) []*ai.Part {
		size := len(req.Messages[0].Text()) * 10 // the prompt says how many rows
		switch n {
		case 0:
			return []*ai.Part{call("list", "list_rows", fmt.Sprintf(`{"n":%d}`, size))}
		case 1:
			return []*ai.Part{call("mail", "send_mail", `{"to":"$r1.rows.-1.email"}`)}
		case 2:
			return []*ai.Part{ai.NewTextPart(outputs(t, req)["mail"])}
		}
		return nil
	})
	prompts := []string{"xxxxxxxxxx", "xxxxxxxxxxxxxxxxxxxx"} // 100 and 200 rows
	texts := make([]string, len(prompts))
	var wg sync.WaitGroup
	for i, prompt := range prompts {
		wg.Go(func() {
			resp, err := genkit.Generate(ctx, g, ai.WithModel(model), ai.WithPrompt(prompt),
				ai.WithTools(avgenkit.Tools(g, values.New(), tools...)...))
			if err != nil {
				t.Errorf("Generate %d: %v", i, err)
				return
			}
			texts[i] = resp.Text()
		})
	}
	wg.Wait()
	for i, want := range []string{"sent to user99@example.com", "sent to user199@example.com"} {
		if !strings.HasPrefix(texts[i], want) {
			t.Errorf("run %d ended with %q, want %q…", i, texts[i], want)
		}
	}
}

// TestRegisteredToolPanics: a tool registered in g under the name would run
// instead of its wrapper, so Tools refuses it.
func TestRegisteredToolPanics(t *testing.T) {
	g := genkit.Init(context.Background())
	genkit.DefineTool(g, "send_mail", "Sends a mail.", func(_ *ai.ToolContext, in mailIn) (string, error) { return "", nil })
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(fmt.Sprint(r), `"send_mail" is registered`) {
			t.Errorf("Tools with a registered tool: recovered %v, want a panic naming send_mail", r)
		}
	}()
	avgenkit.Tools(g, values.New(), (&recorder{}).tools()...)
}

// TestToolErrorEndsRun: an error of the tool itself is Genkit's to handle,
// as without the adapter: it ends the run.
func TestToolErrorEndsRun(t *testing.T) {
	ctx := context.Background()
	g := genkit.Init(ctx)
	broken := ai.NewTool("broken", "Fails.", func(_ *ai.ToolContext, in mailIn) (string, error) {
		return "", fmt.Errorf("disk on fire")
	})
	model := defineScripted(g, "test/broken", func(n int, req *ai.ModelRequest) []*ai.Part {
		if n == 0 {
			return []*ai.Part{call("b", "broken", `{"to":"x"}`)}
		}
		return []*ai.Part{ai.NewTextPart("went on")}
	})
	_, err := genkit.Generate(ctx, g, ai.WithModel(model), ai.WithPrompt("go"),
		ai.WithTools(avgenkit.Tools(g, values.New(), broken)...))
	if err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("Generate with a failing tool: %v, want the tool's error", err)
	}
}

// TestInterrupt: a wrapped tool's interrupt reaches Genkit as an interrupt,
// and the interrupted call is kept as the model wrote it.
func TestInterrupt(t *testing.T) {
	ctx := context.Background()
	g := genkit.Init(ctx)
	confirm := ai.NewTool("confirm", "Asks the user.", func(tc *ai.ToolContext, in mailIn) (string, error) {
		return "", tc.Interrupt(&ai.InterruptOptions{Metadata: map[string]any{"to": in.To}})
	})
	model := defineScripted(g, "test/interrupt", func(n int, req *ai.ModelRequest) []*ai.Part {
		if n == 0 {
			return []*ai.Part{call("c", "confirm", `{"to":"$$r1"}`)}
		}
		return nil
	})
	resp, err := genkit.Generate(ctx, g, ai.WithModel(model), ai.WithPrompt("go"),
		ai.WithTools(avgenkit.Tools(g, values.New(), confirm)...))
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	ints := resp.Interrupts()
	if resp.FinishReason != "interrupted" || len(ints) != 1 {
		t.Fatalf("finish reason %q, %d interrupts; want interrupted, 1", resp.FinishReason, len(ints))
	}
	if diff := cmp.Diff(map[string]any{"to": "$r1"}, ints[0].Metadata["interrupt"]); diff != "" {
		t.Errorf("interrupt metadata (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"to": "$$r1"}, ints[0].ToolRequest.Input); diff != "" {
		t.Errorf("interrupted call (-want +got):\n%s", diff)
	}
}
