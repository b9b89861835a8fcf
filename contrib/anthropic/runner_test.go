package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	values "github.com/agentvalues/values"
	avanthropic "github.com/agentvalues/values/contrib/anthropic"
	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/toolrunner"
	"github.com/google/go-cmp/cmp"
)

type user struct {
	ID    int    `json:"id"`
	Email string `json:"email"`
}

type listUsersInput struct {
	Count int `json:"count" jsonschema:"required"`
}

type sendMailInput struct {
	To string `json:"to" jsonschema:"required"`
}

type countUsersInput struct {
	Users []user `json:"users" jsonschema:"required"`
}

// usersJSON is what list_users returns for count users: compact JSON.
func usersJSON(count int) string {
	us := make([]user, count)
	for i := range us {
		us[i] = user{ID: i, Email: fmt.Sprintf("user%d@example.com", i)}
	}
	b, _ := json.Marshal(map[string][]user{"users": us})
	return string(b)
}

// recorder keeps what the tools received; the runner calls them in parallel.
type recorder struct {
	mu     sync.Mutex
	mailTo []string
	counts []int
}

func (r *recorder) tools(t *testing.T) []sdk.BetaTool {
	listUsers, err := toolrunner.NewBetaToolFromJSONSchema("list_users", "Lists the users.",
		func(_ context.Context, in listUsersInput) (sdk.BetaToolResultBlockParamContentUnion, error) {
			return textResult(usersJSON(in.Count)), nil
		})
	if err != nil {
		t.Fatal(err)
	}
	sendMail, err := toolrunner.NewBetaToolFromJSONSchema("send_mail", "Sends a mail.",
		func(_ context.Context, in sendMailInput) (sdk.BetaToolResultBlockParamContentUnion, error) {
			r.mu.Lock()
			r.mailTo = append(r.mailTo, in.To)
			r.mu.Unlock()
			return textResult("mail sent to " + in.To), nil
		})
	if err != nil {
		t.Fatal(err)
	}
	countUsers, err := toolrunner.NewBetaToolFromJSONSchema("count_users", "Counts users.",
		func(_ context.Context, in countUsersInput) (sdk.BetaToolResultBlockParamContentUnion, error) {
			r.mu.Lock()
			r.counts = append(r.counts, len(in.Users))
			r.mu.Unlock()
			return textResult(fmt.Sprintf("%d users", len(in.Users))), nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return []sdk.BetaTool{listUsers, sendMail, countUsers}
}

var (
	storedAs = regexp.MustCompile(`\[stored as (r[0-9]+)`)
	shown    = regexp.MustCompile(`\[shown: bytes ([0-9]+)-([0-9]+) of [0-9]+; next page: read_value (\{.*\})\]$`)
)

// TestToolRunner drives the SDK's tool runner over a scripted model through
// every move: a large result reaches the model as a preview, a reference
// reaches the tool as the value, bad references come back as tool errors
// naming them, query_value answers with a new handle, and read_value pages
// the value back byte for byte.
func TestToolRunner(t *testing.T) {
	const count = 100
	full := usersJSON(count)
	rec := &recorder{}
	var (
		queried string   // the handle query_value answered with
		pages   []string // the read_value pages, continuation lines dropped
	)
	model := &scriptedModel{}
	model.turn = func(n int, req wireRequest) reply {
		res := req.results()
		result := func(i int) wireBlock {
			b, ok := res[useID(n-1, i)]
			if !ok {
				t.Errorf("request %d: no tool_result for %s; got %v", n, useID(n-1, i), res)
			}
			return b
		}
		switch n {
		case 1:
			var names []string
			for _, tl := range req.Tools {
				names = append(names, tl.Name)
				if tl.Name == "send_mail" && !strings.HasSuffix(tl.Description, avanthropic.ReferenceNote) {
					t.Errorf("send_mail is described as %q, want it to end with the reference note", tl.Description)
				}
				if tl.Name == "count_users" {
					// The schema the model is shown admits a reference where
					// an array of users is asked for.
					schema, err := values.CompileSchema(tl.InputSchema)
					if err != nil {
						t.Errorf("count_users is shown a schema that does not compile: %v\n%s", err, tl.InputSchema)
					} else if err := schema.Validate([]byte(`{"users":"$r1.users"}`)); err != nil {
						t.Errorf("count_users is shown a schema that refuses a reference: %v\n%s", err, tl.InputSchema)
					}
				}
			}
			if diff := cmp.Diff([]string{"list_users", "send_mail", "count_users", "read_value", "query_value"}, names); diff != "" {
				t.Errorf("tools offered (-want +got):\n%s", diff)
			}
			return useTools(call{"list_users", fmt.Sprintf(`{"count":%d}`, count)})(n)
		case 2:
			got := result(0)
			text := got.text()
			if got.IsError || !strings.HasPrefix(text, "r1 = json(") || !strings.Contains(text, `"$r1"`) {
				t.Errorf("the model got %q (is_error %v), want the preview of r1 and its hint", text, got.IsError)
			}
			if strings.Contains(text, "user57@example.com") || len(text) >= len(full) || len(text) > 3000 {
				t.Errorf("the model got %d bytes holding the middle of the result, want a bounded preview:\n%s", len(text), text)
			}
			return useTools(
				call{"send_mail", `{"to":"$r1.users.57.email"}`},
				call{"count_users", `{"users":"$r1.users"}`},
			)(n)
		case 3:
			for i, want := range []string{"mail sent to user57@example.com", fmt.Sprintf("%d users", count)} {
				if got := result(i); got.IsError || !strings.HasPrefix(got.text(), want+"\n[stored as r") {
					t.Errorf("result %d: the model got %q (is_error %v), want %q and its handle", i, got.text(), got.IsError, want)
				}
			}
			return useTools(
				call{"send_mail", `{"to":"$r9"}`},
				call{"send_mail", `{"to":"$r1.users.57"}`},
				call{"send_mail", `{"to":"$r1..users"}`},
				call{"count_users", `{"users":"$r1.users.500"}`},
			)(n)
		case 4:
			for i, ref := range []string{`"$r9"`, "$r1.users.57", "$r1..users", "$r1.users.500"} {
				got := result(i)
				t.Logf("the model got: %s", got.text())
				if !got.IsError || !strings.Contains(got.text(), "was not called") || !strings.Contains(got.text(), ref) {
					t.Errorf("result %d: the model got %q (is_error %v), want a tool error naming %s", i, got.text(), got.IsError, ref)
				}
			}
			if got := result(1).text(); !strings.Contains(got, "/to: want string, got object (from $r1.users.57)") {
				t.Errorf("the model got %q, want the schema violation and the reference behind it", got)
			}
			return useTools(call{"query_value", `{"ref":"r1","jq":".users[:5]"}`})(n)
		case 5:
			got := result(0)
			m := storedAs.FindStringSubmatch(got.text())
			if got.IsError || m == nil || !strings.HasPrefix(got.text(), `[{"email":"user0@example.com","id":0},`) {
				t.Errorf("query_value: the model got %q (is_error %v), want the 5 users whole and their handle", got.text(), got.IsError)
				return answer("stuck")
			}
			queried = m[1]
			return useTools(call{"count_users", `{"users":"$` + queried + `"}`})(n)
		case 6:
			if got := result(0); got.IsError || !strings.HasPrefix(got.text(), "5 users") {
				t.Errorf("the model got %q (is_error %v), want 5 users", got.text(), got.IsError)
			}
			return useTools(call{"read_value", `{"ref":"r1","limit":1024}`})(n)
		default: // page r1 as the continuation lines say
			got := result(0)
			text := got.text()
			if got.IsError || len(text) > 1024 {
				t.Errorf("read_value: the model got %d bytes %q (is_error %v), want a page of at most 1024", len(text), text, got.IsError)
				return answer("stuck")
			}
			m := shown.FindStringSubmatch(text)
			if m == nil { // the last page is its content alone
				pages = append(pages, text)
				return answer("done")
			}
			from, _ := strconv.Atoi(m[1])
			to, _ := strconv.Atoi(m[2])
			pages = append(pages, text[:to-from+1])
			if n > 20 {
				t.Errorf("read_value: still paging at request %d", n)
				return answer("stuck")
			}
			var next map[string]any // the call the page names, at the same limit
			if err := json.Unmarshal([]byte(m[3]), &next); err != nil {
				t.Errorf("read_value: the next page is %s: %v", m[3], err)
				return answer("stuck")
			}
			next["limit"] = 1024
			input, _ := json.Marshal(next)
			return useTools(call{"read_value", string(input)})(n)
		}
	}
	client := model.start(t)

	vals := values.New()
	runner := client.Beta.Messages.NewToolRunner(avanthropic.Tools(vals, rec.tools(t)...), runnerParams())
	msg, err := runner.RunToCompletion(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Text != "done" {
		t.Errorf("the run ended with %d blocks, the first %q; want done", len(msg.Content), msg.Content[0].Text)
	}

	// What the tools received: the real values, and never a failed call.
	if diff := cmp.Diff([]string{"user57@example.com"}, rec.mailTo); diff != "" {
		t.Errorf("send_mail received (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{count, 5}, rec.counts); diff != "" {
		t.Errorf("count_users received (-want +got):\n%s", diff)
	}
	if got := strings.Join(pages, ""); got != full {
		t.Errorf("read_value pages (%d) joined are %d bytes, want the %d bytes list_users returned:\n%s", len(pages), len(got), len(full), got)
	}
	if len(pages) < 3 {
		t.Errorf("read_value took %d pages of 1 KiB for %d bytes", len(pages), len(full))
	}
}

// TestResultBlocks checks what the model receives for results that are not
// one text block: text blocks are stored as one value and shown once, where
// the first was; an image passes through; a tool's own error passes through.
func TestResultBlocks(t *testing.T) {
	image := sdk.BetaToolResultBlockParamContentUnion{OfImage: &sdk.BetaImageBlockParam{
		Source: sdk.BetaImageBlockParamSourceUnion{OfBase64: &sdk.BetaBase64ImageSourceParam{Data: "iVBORw0KGgo=", MediaType: "image/png"}},
	}}
	big := strings.Repeat("x", 5000)
	tools := []sdk.BetaTool{
		blocksTool{name: "mixed", blocks: []sdk.BetaToolResultBlockParamContentUnion{textResult("HEAD" + big), image, textResult("TAIL")}},
		blocksTool{name: "picture", blocks: []sdk.BetaToolResultBlockParamContentUnion{image}},
		blocksTool{name: "broken", err: errors.New("disk full")},
	}
	model := &scriptedModel{}
	var got map[string]wireBlock
	model.turn = func(n int, req wireRequest) reply {
		if n == 1 {
			return useTools(call{"mixed", `{}`}, call{"picture", `{}`}, call{"broken", `{}`})(n)
		}
		got = req.results()
		return answer("done")
	}
	client := model.start(t)
	vals := values.New()
	runner := client.Beta.Messages.NewToolRunner(avanthropic.Tools(vals, tools...), runnerParams())
	if _, err := runner.RunToCompletion(context.Background()); err != nil {
		t.Fatal(err)
	}

	mixed := got[useID(1, 0)]
	if len(mixed.Content) != 2 || mixed.Content[0].Type != "text" || mixed.Content[1].Type != "image" {
		t.Fatalf("mixed: the model got %+v, want a text block and the image", mixed.Content)
	}
	text := mixed.Content[0].Text
	if !strings.HasPrefix(text, "r") || !strings.Contains(text, `head="HEADxxx`) || !strings.Contains(text, `xxx\nTAIL"`) || len(text) > 3000 {
		t.Errorf("mixed: the model got %q, want the preview of both texts joined by a newline", text)
	}
	if picture := got[useID(1, 1)]; picture.IsError || len(picture.Content) != 1 || picture.Content[0].Type != "image" {
		t.Errorf("picture: the model got %+v, want the image alone", picture)
	}
	if broken := got[useID(1, 2)]; !broken.IsError || broken.text() != "Error: disk full" {
		t.Errorf("broken: the model got %q (is_error %v), want the tool's error as the runner words it", broken.text(), broken.IsError)
	}
	if vals.Len() != 1 {
		t.Errorf("the store holds %d values, want 1: the texts of mixed", vals.Len())
	}
}

// blocksTool is a tool of empty input that returns blocks, or err.
type blocksTool struct {
	name   string
	blocks []sdk.BetaToolResultBlockParamContentUnion
	err    error
}

func (b blocksTool) Name() string                              { return b.name }
func (b blocksTool) Description() string                       { return "" }
func (b blocksTool) InputSchema() sdk.BetaToolInputSchemaParam { return sdk.BetaToolInputSchemaParam{} }
func (b blocksTool) Execute(context.Context, json.RawMessage) ([]sdk.BetaToolResultBlockParamContentUnion, error) {
	return b.blocks, b.err
}
