package store

import values "github.com/agentvalues/values"

// ForValues adapts st to [values.Durable], so that a values.SessionValues
// persists its values in st ([values.WithDurable], [values.Open]): bodies
// go to [Store.Put] and [Store.Get] (digest-verified, scoped to the
// session), records to [Store.AppendHandle] and [Store.Handles]. Errors
// are st's own, so errors.Is with this package's sentinels works on them.
// The result is safe for concurrent use when st is; closing st is the
// caller's business.
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
	for i, h := range hs {
		rs[i] = values.Record(h)
	}
	return rs, nil
}
