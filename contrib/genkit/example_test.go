package genkit_test

import (
	"context"
	"fmt"
	"strings"

	values "github.com/agentvalues/values"
	avgenkit "github.com/agentvalues/values/contrib/genkit"
	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
)

// What the example's snippet assumes: a Genkit instance, its model (here a
// scripted one, whose answer is what it was shown), and the tools, made
// with ai.NewTool so that the wrappers can stand in for them.
var (
	ctx                = context.Background()
	g                  = genkit.Init(ctx, genkit.WithDefaultModel("example/scripted"))
	_                  = defineExampleModel(g)
	listRows, sendMail = exampleTools()
)

// A run whose tools keep their results in vals: the model is shown a
// preview of the 1,000 rows and mails the last user by reference.
func Example() {
	vals := values.New() // one store per run
	resp, err := genkit.Generate(ctx, g, ai.WithPrompt("Mail the last user."),
		ai.WithTools(avgenkit.Tools(g, vals, listRows, sendMail)...))
	fmt.Println(resp.Text(), err)
	// Output:
	// list_rows gave: r1 = json(keys=1, bytes=40 KiB, rows: array(len=1000, bytes=40 KiB, items={email: text, id: number 0..999}, [:3]=[{email: "user0@example.com", id: 0}, {email: "user1@example.com", id: 1}, {email: "user2@example.com", id: 2}], [-2:]=[{email: "user998@example.com", id: 998}, {email: "user999@example.com", id: 999}]))
	// [r1 holds the full value for this run: pass "$r1" as a tool argument to use all of it, "$r1.<field>" for a part; read_value {"ref":"r1"} pages its bytes]
	// send_mail gave: sent to user999@example.com
	// [stored as r2 (text, 27 B, 1 line): pass "$r2" as a tool argument to reuse it] <nil>
}

func exampleTools() (ai.Tool, ai.Tool) {
	listRows := ai.NewTool("list_rows", "Lists n rows of the user table.",
		func(_ *ai.ToolContext, in listIn) (listOut, error) { return listOut{Rows: rows(in.N)}, nil })
	sendMail := ai.NewTool("send_mail", "Sends a mail.",
		func(_ *ai.ToolContext, in mailIn) (string, error) { return "sent to " + in.To, nil })
	return listRows, sendMail
}

// defineExampleModel defines the scripted model: it lists the rows, mails
// the last user by reference, then answers with every tool output it saw.
func defineExampleModel(g *genkit.Genkit) ai.Model {
	return genkit.DefineModel(g, "example/scripted", &ai.ModelOptions{Supports: &ai.ModelSupports{Tools: true, Multiturn: true}},
		func(ctx context.Context, req *ai.ModelRequest, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
			var seen []string
			for _, msg := range req.Messages {
				for _, p := range msg.Content {
					if p.IsToolResponse() {
						seen = append(seen, fmt.Sprintf("%s gave: %v", p.ToolResponse.Name, p.ToolResponse.Output))
					}
				}
			}
			var part *ai.Part
			switch len(seen) {
			case 0:
				part = ai.NewToolRequestPart(&ai.ToolRequest{Name: "list_rows", Input: map[string]any{"n": 1000}})
			case 1:
				part = ai.NewToolRequestPart(&ai.ToolRequest{Name: "send_mail", Input: map[string]any{"to": "$r1.rows.-1.email"}})
			default:
				part = ai.NewTextPart(strings.Join(seen, "\n"))
			}
			return &ai.ModelResponse{Message: ai.NewModelMessage(part), FinishReason: ai.FinishReasonStop}, nil
		})
}
