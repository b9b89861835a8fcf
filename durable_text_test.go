package values_test

import (
	"strings"
	"testing"

	"github.com/agentvalues/values"
)

// A text holding JSON read back from the durable store is indexed again,
// on first use: references into it and its preview work after a reopen as
// they did before, for a text small enough to be shown whole and for one
// over the memory limit.
func TestDurableTextHoldingJSON(t *testing.T) {
	small := `{"rows":[{"id":1},{"id":2}],"next":"c2"}`
	large := `{"rows":[` + repeatJoin(`{"id":7,"name":"a long enough name"}`, ",", 400) + `]}`
	stores(t, func(t *testing.T, st func() values.Durable, reopen func() values.Durable) {
		s := openSession(st(), testSession, values.WithMemoryLimit(testMemLimit))
		hSmall, err := s.Put(small) // a string: stored as text
		if err != nil {
			t.Fatal(err)
		}
		hLarge, err := s.Put(large)
		if err != nil {
			t.Fatal(err)
		}
		check := func(s *values.SessionValues) {
			t.Helper()
			out, _, err := s.Resolve([]byte(`{"a":"$` + hSmall + `.rows.1.id","b":"$` + hSmall + `.next","c":"$` + hLarge + `.rows.-1.name"}`))
			if err != nil {
				t.Fatal(err)
			}
			if want := `{"a":2,"b":"c2","c":"a long enough name"}`; string(out) != want {
				t.Fatalf("Resolve = %s, want %s", out, want)
			}
			v, _ := s.Get(hLarge)
			if p := values.RenderPreview(hLarge, v); !containsAll(p, "json-text(", "array(len=400") {
				t.Fatalf("preview of the large text: %s", p)
			}
		}
		check(s)
		check(openSession(reopen(), testSession, values.WithMemoryLimit(testMemLimit)))
	})
}

func repeatJoin(s, sep string, n int) string {
	out := make([]byte, 0, n*(len(s)+len(sep)))
	for i := range n {
		if i > 0 {
			out = append(out, sep...)
		}
		out = append(out, s...)
	}
	return string(out)
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
