package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	values "github.com/agentvalues/values"
	avanthropic "github.com/agentvalues/values/contrib/anthropic"
	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/toolrunner"
	"github.com/google/go-cmp/cmp"
)

type tagInput struct {
	Tag string `json:"tag" jsonschema:"required"`
}

var previewOf = regexp.MustCompile(`^(r[0-9]+) = json\(`)

// TestParallelCalls has the runner execute a turn of parallel calls that all
// store a large result in one store (each waits until all have started, so
// they overlap), then a turn of parallel calls whose references name each of
// those results, beside parallel read_value calls. Every call must get the
// value of its own result. Run it with -race.
func TestParallelCalls(t *testing.T) {
	const calls = 8
	var (
		started  atomic.Int32
		allIn    = make(chan struct{})
		overlap  atomic.Bool // every make_rows call was running at once
		mu       sync.Mutex
		echoed   []string
		handleOf = map[string]string{} // tag → the handle its result got
	)
	makeRows, err := toolrunner.NewBetaToolFromJSONSchema("make_rows", "Makes rows.",
		func(_ context.Context, in tagInput) (sdk.BetaToolResultBlockParamContentUnion, error) {
			if started.Add(1) == calls {
				overlap.Store(true)
				close(allIn)
			}
			select {
			case <-allIn:
			case <-time.After(10 * time.Second):
			}
			rows := make([]user, 100)
			for i := range rows {
				rows[i] = user{ID: i, Email: fmt.Sprintf("%s-%d@example.com", in.Tag, i)}
			}
			b, _ := json.Marshal(map[string]any{"tag": in.Tag, "rows": rows})
			return textResult(string(b)), nil
		})
	if err != nil {
		t.Fatal(err)
	}
	echo, err := toolrunner.NewBetaToolFromJSONSchema("echo", "Echoes.",
		func(_ context.Context, in tagInput) (sdk.BetaToolResultBlockParamContentUnion, error) {
			mu.Lock()
			echoed = append(echoed, in.Tag)
			mu.Unlock()
			return textResult("echo " + in.Tag), nil
		})
	if err != nil {
		t.Fatal(err)
	}

	tag := func(i int) string { return fmt.Sprintf("t%d", i) }
	model := &scriptedModel{}
	model.turn = func(n int, req wireRequest) reply {
		res := req.results()
		switch n {
		case 1:
			var cs []call
			for i := range calls {
				cs = append(cs, call{"make_rows", fmt.Sprintf(`{"tag":%q}`, tag(i))})
			}
			return useTools(cs...)(n)
		case 2:
			// Learn each result's handle from its preview, as a model would.
			var cs []call
			for i := range calls {
				got := res[useID(1, i)]
				m := previewOf.FindStringSubmatch(got.text())
				if got.IsError || m == nil {
					t.Errorf("make_rows %d: the model got %q (is_error %v), want a preview", i, got.text(), got.IsError)
					return answer("stuck")
				}
				handleOf[tag(i)] = m[1]
				cs = append(cs, call{"echo", fmt.Sprintf(`{"tag":"$%s.tag"}`, m[1])})
			}
			for i := range calls {
				cs = append(cs, call{"read_value", fmt.Sprintf(`{"ref":"$%s.rows.-1.email"}`, handleOf[tag(i)])})
			}
			return useTools(cs...)(n)
		case 3:
			for i := range calls {
				// echo's result is stored (its handle follows); a page is not.
				want := []string{"echo " + tag(i) + "\n[stored as r", tag(i) + "-99@example.com"}
				for j, id := range []string{useID(2, i), useID(2, calls+i)} {
					got := res[id]
					if got.IsError || !strings.HasPrefix(got.text(), want[j]) || j == 1 && got.text() != want[j] {
						t.Errorf("%s: the model got %q (is_error %v), want %q", id, got.text(), got.IsError, want[j])
					}
				}
			}
			return answer("done")
		}
		t.Errorf("request %d was not scripted", n)
		return answer("stuck")
	}
	client := model.start(t)

	vals := values.New()
	runner := client.Beta.Messages.NewToolRunner(avanthropic.Tools(vals, makeRows, echo), runnerParams())
	if _, err := runner.RunToCompletion(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !overlap.Load() {
		t.Errorf("only %d of %d make_rows calls ran at once", started.Load(), calls)
	}
	var handles []string
	for _, h := range handleOf {
		handles = append(handles, h)
	}
	slices.Sort(handles)
	if handles = slices.Compact(handles); len(handles) != calls {
		t.Errorf("the %d results got the handles %v, want %d distinct", calls, handles, calls)
	}
	var want []string
	for i := range calls {
		want = append(want, tag(i))
	}
	slices.Sort(echoed)
	if diff := cmp.Diff(want, echoed); diff != "" {
		t.Errorf("echo received (-want +got):\n%s", diff)
	}
	if got := len(model.sent()); got != 3 {
		t.Errorf("the runner sent %d requests, want 3", got)
	}
}
