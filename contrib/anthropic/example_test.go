package anthropic_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"

	values "github.com/agentvalues/values"
	avanthropic "github.com/agentvalues/values/contrib/anthropic"
	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/toolrunner"
)

// The five lines of Example are the README's usage snippet. What they use is
// set up here: two tools built with the SDK's toolrunner package, and a client
// of a scripted model that lists 100 users, passes the 58th user's email to
// send_mail by reference, and ends by quoting the first line of each tool
// result it received.
var (
	listUsers = must(toolrunner.NewBetaToolFromJSONSchema("list_users", "Lists the users.",
		func(_ context.Context, in listUsersInput) (sdk.BetaToolResultBlockParamContentUnion, error) {
			return textResult(usersJSON(in.Count)), nil
		}))
	sendMail = must(toolrunner.NewBetaToolFromJSONSchema("send_mail", "Sends a mail.",
		func(_ context.Context, in sendMailInput) (sdk.BetaToolResultBlockParamContentUnion, error) {
			return textResult("mail sent to " + in.To), nil
		}))
	client = exampleClient()
	params = runnerParams()
)

func Example() {
	vals := values.New() // one store per run
	tools := avanthropic.Tools(vals, listUsers, sendMail)
	runner := client.Beta.Messages.NewToolRunner(tools, params)
	msg, err := runner.RunToCompletion(context.Background())
	fmt.Println(msg.Content[0].Text, err)
	// Output:
	// list_users: r1 = json(keys=1, bytes=3.8 KiB, users: array(len=100, bytes=3.8 KiB, items={id: number 0..99, email: text}, [:3]=[{id: 0, email: "user0@example.com"}, {id: 1, email: "user1@example.com"}, {id: 2, email: "user2@example.com"}], [-2:]=[{id: 98, email: "user98@example.com"}, {id: 99, email: "user99@example.com"}]))
	// send_mail: mail sent to user57@example.com <nil>
}

// exampleClient returns a client of the scripted model of Example. Its
// server runs as long as the test binary.
func exampleClient() sdk.Client {
	var seen []string // the first line of each tool result of the run, in order
	model := &scriptedModel{turn: func(n int, req wireRequest) reply {
		res := req.results()
		if len(res) == 0 { // a new run
			seen = nil
			return useTools(call{"list_users", `{"count":100}`})(n)
		}
		for _, r := range res {
			seen = append(seen, []string{"list_users", "send_mail"}[min(len(seen), 1)]+": "+strings.SplitN(r.text(), "\n", 2)[0])
		}
		if len(seen) == 1 {
			return useTools(call{"send_mail", `{"to":"$r1.users.57.email"}`})(n)
		}
		return answer(strings.Join(seen, "\n"))
	}}
	srv := httptest.NewServer(model)
	return sdk.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("example"), option.WithMaxRetries(0))
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
