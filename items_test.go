package values_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	values "github.com/agentvalues/values"
	"github.com/google/go-cmp/cmp"
)

// items collects what Items calls fn with, up to n items.
func items(t *testing.T, s *values.SessionValues, ref string, from, n int) ([]string, error) {
	t.Helper()
	var got []string
	err := s.Items(ref, from, func(i int, key, item []byte) bool {
		if key != nil {
			item = []byte(string(key) + ":" + string(item))
		}
		if want := from + len(got); i != want {
			t.Errorf("Items(%q, %d): item index %d, want %d", ref, from, i, want)
		}
		got = append(got, string(item))
		return len(got) < n
	})
	return got, err
}

func TestItems(t *testing.T) {
	// A large array, so that Put indexes it with marks, and items of
	// mixed kinds and sizes, so that a walk from a mark is tested.
	var rows []string
	for i := range 20000 {
		switch i % 4 {
		case 0:
			rows = append(rows, fmt.Sprintf(`{"id":%d,"name":"n%d"}`, i, i))
		case 1:
			rows = append(rows, fmt.Sprintf(`"s,]%d"`, i))
		case 2:
			rows = append(rows, fmt.Sprintf(`[%d, {"x":"]"}]`, i))
		default:
			rows = append(rows, fmt.Sprint(i))
		}
	}
	s := values.New()
	big := s.PutOutput([]byte("[ " + strings.Join(rows, " ,\n ") + " ]"))
	env := s.PutOutput([]byte(`{"meta":{"n":20000},"rows":[` + strings.Join(rows, ",") + `]}`))
	lines := s.PutOutput([]byte(strings.Join(rows[:100], "\n") + "\n"))
	small := s.PutOutput([]byte(`[1,"two",{"three":3}]`))
	for _, tc := range []struct {
		name     string
		ref      string
		from, n  int
		want     []string
		wantNone bool
	}{
		{name: "first", ref: big, from: 0, n: 3, want: rows[:3]},
		{name: "middle", ref: "$" + big, from: 12345, n: 7, want: rows[12345:12352]},
		{name: "tail", ref: big, from: 19998, n: 10, want: rows[19998:]},
		{name: "past the end", ref: big, from: 20000, n: 10, wantNone: true},
		{name: "far past the end", ref: big, from: 1 << 40, n: 10, wantNone: true},
		{name: "a path", ref: "$" + env + ".rows", from: 9999, n: 3, want: rows[9999:10002]},
		{name: "json lines", ref: lines, from: 97, n: 10, want: rows[97:100]},
		{name: "small", ref: small, from: 1, n: 5, want: []string{`"two"`, `{"three":3}`}},
		{name: "object", ref: env, from: 0, n: 1, want: []string{`"meta":{"n":20000}`}},
		{name: "object from", ref: "$" + env + ".meta", from: 0, n: 5, want: []string{`"n":20000`}},
		{name: "object past the end", ref: env, from: 2, n: 5, wantNone: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := items(t, s, tc.ref, tc.from, tc.n)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantNone && len(got) != 0 {
				t.Fatalf("got %d items, want none", len(got))
			}
			if !tc.wantNone {
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("items (-want +got):\n%s", diff)
				}
			}
		})
	}
	for _, tc := range []struct {
		ref  string
		from int
		want error
	}{
		{"$" + env + ".meta.n", 0, values.ErrNotContainer},
		{s.PutOutput([]byte("plain text")), 0, values.ErrNotContainer},
		{"r99", 0, values.ErrUnknownHandle},
		{"$r1..x", 0, values.ErrBadRef},
		{big, -1, values.ErrReadArgs},
		{"$" + env + ".nope", 0, values.ErrNoPath},
	} {
		if _, err := items(t, s, tc.ref, tc.from, 1); !errors.Is(err, tc.want) {
			t.Errorf("Items(%q, %d): %v, want %v", tc.ref, tc.from, err, tc.want)
		}
	}
}

func TestQueryJSON(t *testing.T) {
	s := values.New()
	h := s.PutOutput([]byte(`[{"n":3},{"n":1},{"n":2}]`))
	next := s.Next()
	out, n, err := s.QueryJSON(context.Background(), h, `map(.n) | sort`)
	if err != nil || n != 1 || string(out) != `[1,2,3]` {
		t.Fatalf("QueryJSON = %s, %d, %v; want [1,2,3], 1, nil", out, n, err)
	}
	out, n, err = s.QueryJSON(context.Background(), "$"+h, `.[].n`)
	if err != nil || n != 3 || string(out) != `[3,1,2]` {
		t.Fatalf("QueryJSON = %s, %d, %v; want [3,1,2], 3, nil", out, n, err)
	}
	if _, _, err := s.QueryJSON(context.Background(), h, `error("no")`); !errors.Is(err, values.ErrQuery) {
		t.Errorf("a failing program: %v, want ErrQuery", err)
	}
	if s.Next() != next || s.Len() != 1 {
		t.Errorf("QueryJSON stored a value: next %s (was %s), %d values", s.Next(), next, s.Len())
	}
	var v any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Error(err)
	}
}

func TestValueWriteTo(t *testing.T) {
	s := values.New()
	big := strings.Repeat(`{"a":1},`, 1<<17)
	for _, out := range [][]byte{
		[]byte("plain text\n"),
		[]byte("[" + big + `{"a":2}]`),
		{0xff, 0xfe, 0x00, 0x01},
	} {
		v, _ := s.Get(s.PutOutput(out))
		var b strings.Builder
		n, err := v.WriteTo(&b)
		if err != nil || n != int64(v.Size()) || b.String() != string(v.Bytes()) {
			t.Errorf("%s: WriteTo wrote %d bytes, %v; want its %d bytes", v.Kind(), n, err, v.Size())
		}
		if allocs := testing.AllocsPerRun(5, func() { v.WriteTo(io.Discard) }); allocs > 0 {
			t.Errorf("%s: WriteTo of a value held in memory allocates %v times", v.Kind(), allocs)
		}
	}
}

// FuzzItems: the items Items walks from any from are those of the array,
// byte for byte, as encoding/json splits it, for any JSON array Put
// stores (the large ones indexed with marks).
func FuzzItems(f *testing.F) {
	f.Add([]byte(`[1, "a,]", {"b":[2,3]}, null]`), 1, 0)
	f.Add([]byte(`[`+strings.Repeat(`{"k":"v\"]"}, `, 200)+`0]`), 150, 3)
	f.Add([]byte(`{"rows":[1,2,3]}`), 0, 0)
	f.Fuzz(func(t *testing.T, data []byte, from, pad int) {
		if pad > 0 && pad < 20 { // make it large enough to be indexed with marks
			data = []byte(strings.Repeat(" ", 0) + string(data))
			if len(data) > 1 && data[0] == '[' && data[len(data)-1] == ']' {
				filler := strings.Repeat(`"0123456789abcdef",`, pad*50)
				data = []byte("[" + filler + string(data[1:]))
			}
		}
		var want []json.RawMessage
		if json.Unmarshal(data, &want) != nil || from < 0 {
			return
		}
		s := values.New()
		h := s.PutOutput(data)
		if !utf8.Valid(data) {
			// encoding/json reads invalid UTF-8 as U+FFFD; PutOutput
			// stores anything that is not UTF-8 as binary, which has no
			// items to walk.
			if err := s.Items(h, from, func(int, []byte, []byte) bool { return true }); err == nil {
				t.Fatalf("Items of the binary value %q: no error", data)
			}
			return
		}
		var got []json.RawMessage
		err := s.Items(h, from, func(i int, key, item []byte) bool {
			if key != nil || i != from+len(got) {
				t.Fatalf("item %d (want %d), key %q", i, from+len(got), key)
			}
			got = append(got, json.RawMessage(item))
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		want = want[min(from, len(want)):]
		if len(got) != len(want) {
			t.Fatalf("%d items from %d, want %d", len(got), from, len(want))
		}
		for i := range want {
			if string(got[i]) != string(want[i]) {
				t.Fatalf("item %d: %s, want %s", from+i, got[i], want[i])
			}
		}
	})
}
