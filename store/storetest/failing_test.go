package storetest

import (
	"errors"
	"strings"
	"testing"

	values "github.com/agentvalues/values"
)

func TestFailing(t *testing.T) {
	boom := errors.New("disk on fire")
	for _, tc := range []struct {
		name     string
		in, want error
	}{
		{"given error", boom, boom},
		{"nil error", nil, ErrFailing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := Failing(tc.in)
			check := func(call string, err error) {
				t.Helper()
				if !errors.Is(err, tc.want) {
					t.Errorf("%s = %v, want %v", call, err, tc.want)
				}
				if err != nil && !strings.HasPrefix(err.Error(), "storetest: ") {
					t.Errorf("%s error %q lacks the storetest: prefix", call, err)
				}
			}
			key, err := st.PutBody("a", []byte("v"))
			if key != "" {
				t.Errorf("PutBody key = %q, want \"\"", key)
			}
			check("PutBody", err)
			b, err := st.Body("a", "0000000000000000000000000000000000000000000000000000000000000000")
			if b != nil {
				t.Errorf("Body = %v, want nil", b)
			}
			check("Body", err)
			check("AppendRecord", st.AppendRecord("a", values.Record{Handle: "r1"}))
			recs, err := st.Records("a")
			if recs != nil {
				t.Errorf("Records = %v, want nil", recs)
			}
			check("Records", err)
			if _, err := values.Open(st, "a"); !errors.Is(err, tc.want) {
				t.Errorf("values.Open = %v, want %v", err, tc.want)
			}
		})
	}
}
