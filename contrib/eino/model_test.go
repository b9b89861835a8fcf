package eino_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"
)

// scriptedModel is an Eino model.ToolCallingChatModel whose every answer
// comes from script, called with the turn's number (from 1) and the messages
// Eino handed the model. It records those messages and the tools bound to it.
type scriptedModel struct {
	script func(turn int, in []*schema.Message) (*schema.Message, error)

	mu     sync.Mutex
	inputs [][]*schema.Message
	tools  []*schema.ToolInfo
}

var _ model.ToolCallingChatModel = (*scriptedModel)(nil)

func (m *scriptedModel) Generate(_ context.Context, in []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inputs = append(m.inputs, in)
	return m.script(len(m.inputs), in)
}

func (m *scriptedModel) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	msg, err := m.Generate(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{msg}), nil
}

func (m *scriptedModel) WithTools(tools []*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tools = tools
	return m, nil
}

func (m *scriptedModel) turns() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.inputs)
}

func (m *scriptedModel) toolNames() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var names []string
	for _, t := range m.tools {
		names = append(names, t.Name)
	}
	return names
}

// calls is an assistant message calling tools: name, then arguments, for
// each call, with ids c1, c2, … numbered from first.
func calls(first int, nameArgs ...string) *schema.Message {
	var tc []schema.ToolCall
	for i := 0; i+1 < len(nameArgs); i += 2 {
		tc = append(tc, schema.ToolCall{
			ID:       fmt.Sprintf("c%d", first+i/2),
			Type:     "function",
			Function: schema.FunctionCall{Name: nameArgs[i], Arguments: nameArgs[i+1]},
		})
	}
	return schema.AssistantMessage("", tc)
}

// toolMessage returns the content of the tool message for the call id among
// the messages the model was handed.
func toolMessage(in []*schema.Message, id string) (string, error) {
	for _, m := range in {
		if m.Role == schema.Tool && m.ToolCallID == id {
			return m.Content, nil
		}
	}
	return "", fmt.Errorf("the model was handed no tool message for %s", id)
}

// user is one row of the listUsers result.
type user struct {
	ID    int    `json:"id"`
	Email string `json:"email"`
}

type listUsersInput struct {
	Page int `json:"page,omitempty"`
}

type listUsersOutput struct {
	Rows []user `json:"rows"`
}

// usersOf is what list_users returns for page: 100 rows, their emails
// carrying the page so that results of parallel calls differ.
func usersOf(page int) listUsersOutput {
	out := listUsersOutput{Rows: make([]user, 100)}
	for i := range out.Rows {
		out.Rows[i] = user{ID: i, Email: fmt.Sprintf("p%d-user%d@example.com", page, i)}
	}
	return out
}

// usersJSON is the JSON Eino's InferTool makes of usersOf(page).
func usersJSON(page int) string {
	b, _ := json.Marshal(usersOf(page))
	return string(b)
}

// sendMailInput is the arguments of send_mail.
type sendMailInput struct {
	To string `json:"to"`
}

// firstLine is the first line of s.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
