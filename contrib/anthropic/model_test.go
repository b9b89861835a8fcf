package anthropic_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// A scriptedModel serves POST /v1/messages from an httptest.Server in place
// of the Anthropic API: it records every request the SDK sends and answers
// request n (from 1) with turn(n, request). turn plays the model: it reads
// what the runner sent (the tool results) and returns the next assistant
// message. No request reaches a real model.
type scriptedModel struct {
	turn func(n int, req wireRequest) reply

	mu       sync.Mutex
	requests []wireRequest
	failures []string // requests the server could not take
}

// reply is one assistant message: its content blocks and why it stopped.
type reply struct {
	content []any
	stop    string
}

// call is a tool_use block of a reply.
type call struct {
	name  string
	input string // JSON
}

// useTools is a turn that calls tools, in parallel as the runner runs them;
// the tool_use ids are toolu_<turn>_<index>.
func useTools(calls ...call) func(n int) reply {
	return func(n int) reply {
		r := reply{stop: "tool_use"}
		for i, c := range calls {
			r.content = append(r.content, map[string]any{
				"type": "tool_use", "id": useID(n, i), "name": c.name, "input": json.RawMessage(c.input),
			})
		}
		return r
	}
}

func useID(turn, i int) string { return fmt.Sprintf("toolu_%d_%d", turn, i) }

// answer is a final turn that says text.
func answer(text string) reply {
	return reply{stop: "end_turn", content: []any{map[string]any{"type": "text", "text": text}}}
}

// wireRequest is the part of a Messages API request the tests read.
type wireRequest struct {
	Model    string        `json:"model"`
	Messages []wireMessage `json:"messages"`
	Tools    []wireTool    `json:"tools"`
}

type wireMessage struct {
	Role    string      `json:"role"`
	Content []wireBlock `json:"content"`
}

type wireTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// wireBlock is a content block: text, tool_use, tool_result or image.
type wireBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	IsError   bool            `json:"is_error"`
	Content   []wireBlock     `json:"content"`
}

// text returns the text of a tool_result's text blocks, joined.
func (b wireBlock) text() string {
	s := ""
	for _, c := range b.Content {
		if c.Type == "text" {
			s += c.Text
		}
	}
	return s
}

// results returns the tool_result blocks of the request's last user message
// (on a message thread, the only message the runner sends after the first
// turn), by tool_use id.
func (r wireRequest) results() map[string]wireBlock {
	out := map[string]wireBlock{}
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role != "user" {
			continue
		}
		for _, b := range r.Messages[i].Content {
			if b.Type == "tool_result" {
				out[b.ToolUseID] = b
			}
		}
		break
	}
	return out
}

func (m *scriptedModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		m.fail(w, "unexpected request %s %s", r.Method, r.URL.Path)
		return
	}
	var req wireRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		m.fail(w, "request body: %v", err)
		return
	}
	m.mu.Lock()
	m.requests = append(m.requests, req)
	n := len(m.requests)
	m.mu.Unlock()

	rep := m.turn(n, req)
	body, err := json.Marshal(map[string]any{
		"id": fmt.Sprintf("msg_%d", n), "type": "message", "role": "assistant", "model": req.Model,
		"content": rep.content, "stop_reason": rep.stop, "stop_sequence": nil,
		"usage": map[string]int{"input_tokens": 1, "output_tokens": 1},
	})
	if err != nil {
		m.fail(w, "reply %d: %v", n, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

func (m *scriptedModel) fail(w http.ResponseWriter, format string, args ...any) {
	m.mu.Lock()
	m.failures = append(m.failures, fmt.Sprintf(format, args...))
	m.mu.Unlock()
	http.Error(w, "not scripted", http.StatusBadRequest)
}

// sent returns the requests received so far.
func (m *scriptedModel) sent() []wireRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]wireRequest(nil), m.requests...)
}

// start serves m and returns a client of the SDK that sends every request
// to it, without retries.
func (m *scriptedModel) start(tb testing.TB) sdk.Client {
	srv := httptest.NewServer(m)
	tb.Cleanup(func() {
		srv.Close()
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, f := range m.failures {
			tb.Error(f)
		}
	})
	return sdk.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("test"), option.WithMaxRetries(0))
}

// runnerParams are the parameters of every run in the tests.
func runnerParams() sdk.BetaToolRunnerParams {
	return sdk.BetaToolRunnerParams{BetaMessageNewParams: sdk.BetaMessageNewParams{
		Model:     "scripted",
		MaxTokens: 1024,
		Messages:  []sdk.BetaMessageParam{sdk.NewBetaUserMessage(sdk.NewBetaTextBlock("go"))},
	}}
}

// textResult is a tool result of one text block.
func textResult(s string) sdk.BetaToolResultBlockParamContentUnion {
	return sdk.BetaToolResultBlockParamContentUnion{OfText: &sdk.BetaTextBlockParam{Text: s}}
}
