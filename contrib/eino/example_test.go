package eino_test

import (
	"context"
	"fmt"
	"strings"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/contrib/eino"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"
)

var ctx = context.Background()

// listUsers returns 100 users; sendMail mails one.
var (
	listUsers, _ = utils.InferTool("list_users", "Lists users.", func(ctx context.Context, in listUsersInput) (listUsersOutput, error) {
		return usersOf(1), nil
	})
	sendMail, _ = utils.InferTool("send_mail", "Sends a mail.", func(ctx context.Context, in sendMailInput) (string, error) {
		return "sent to " + in.To, nil
	})
)

// chatModel stands in for a real model: it lists the users, mails user 57
// by reference (and tries a handle that does not exist), then answers with
// every tool message it was handed.
var chatModel = &scriptedModel{script: func(turn int, in []*schema.Message) (*schema.Message, error) {
	switch turn {
	case 1:
		return calls(1, "list_users", `{}`), nil
	case 2:
		return calls(2, "send_mail", `{"to":"$r1.rows.57.email"}`, "send_mail", `{"to":"$r7.email"}`), nil
	}
	var seen []string
	for _, m := range in {
		if m.Role == schema.Tool {
			seen = append(seen, m.ToolCallID+": "+m.Content)
		}
	}
	return schema.AssistantMessage(strings.Join(seen, "\n"), nil), nil
}}

func Example() {
	av := eino.New(values.New()) // one store of values per agent run
	conf := compose.ToolsNodeConfig{Tools: []tool.BaseTool{listUsers, sendMail}}
	_ = av.Configure(ctx, &conf) // adds read_value, query_value, the arguments handler and the middleware
	agent, _ := react.NewAgent(ctx, &react.AgentConfig{ToolCallingModel: chatModel, ToolsConfig: conf})
	fmt.Println(agent.Generate(ctx, []*schema.Message{schema.UserMessage("mail user 57")}))
	// Output:
	// assistant: c1: r1 = json(keys=1, bytes=4.1 KiB, rows: array(len=100, bytes=4.1 KiB, items={id: number 0..99, email: text}, [:3]=[{id: 0, email: "p1-user0@example.com"}, {id: 1, email: "p1-user1@example.com"}, {id: 2, email: "p1-user2@example.com"}], [-2:]=[{id: 98, email: "p1-user98@example.com"}, {id: 99, email: "p1-user99@example.com"}]))
	// [r1 holds the full value for this run: pass "$r1" as a tool argument to use all of it, "$r1.<field>" for a part; read_value {"ref":"r1"} pages its bytes]
	// c2: sent to p1-user57@example.com
	// [stored as r2 (text, 29 B, 1 line): pass "$r2" as a tool argument to reuse it]
	// c3: send_mail was not called: values: arguments do not match the tool's input schema (1 violation)
	// /to: "$r7.email" is not a stored value; stored: r1 <nil>
}
