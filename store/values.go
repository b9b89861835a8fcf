package store

import (
	"strconv"

	values "github.com/agentvalues/values"
)

// ForValues adapts st to [values.Durable], so that a values.SessionValues
// persists its values in st ([values.WithDurable], [values.Open]): bodies
// go to [Store.Put] and [Store.Get] (digest-verified, scoped to the
// session), records to [Store.AppendHandle] and [Store.Handles]. Errors
// are st's own, so errors.Is with this package's sentinels works on them.
// The result is safe for concurrent use when st is; closing st is the
// caller's business.
//
// A lost record ([HandleRecord.Lost]) becomes a record without a key for
// the handle number after the highest handle rN recorded before it, which
// values.Open treats as a lost handle: it is never handed out again, and
// a reference to it is unresolved instead of naming another value. Since
// values records its handles in order, that is the lost record's own
// number, unless the append of the number before it had failed too (an
// error the store reported at the time): then the lost record's number is
// the one after, and that one can be handed out again.
func ForValues(st Store) values.Durable { return durable{st} }

type durable struct{ st Store }

func (d durable) PutBody(session string, body []byte) (string, error) {
	return d.st.Put(session, body)
}

func (d durable) Body(session, key string) ([]byte, error) {
	return d.st.Get(session, key)
}

func (d durable) AppendRecord(session string, r values.Record) error {
	return d.st.AppendHandle(session, HandleRecord(r))
}

func (d durable) Records(session string) ([]values.Record, error) {
	hs, err := d.st.Handles(session)
	if err != nil || hs == nil {
		return nil, err
	}
	rs := make([]values.Record, len(hs))
	top := 0 // the highest handle number so far
	for i, h := range hs {
		if h.Lost() {
			top++
			rs[i] = values.Record{Handle: "r" + strconv.Itoa(top)}
			continue
		}
		if n, ok := handleNumber(h.Handle); ok {
			top = max(top, n)
		}
		rs[i] = values.Record(h)
	}
	return rs, nil
}

// handleNumber returns n for a handle "rN" as values names them: N a
// decimal number from 1, without leading zeros, of at most 18 digits.
func handleNumber(h string) (int, bool) {
	if len(h) < 2 || len(h) > 19 || h[0] != 'r' || h[1] == '0' {
		return 0, false
	}
	n := 0
	for _, c := range h[1:] {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}
