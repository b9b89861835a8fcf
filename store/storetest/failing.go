package storetest

import (
	"errors"
	"fmt"

	values "github.com/agentvalues/values"
)

// ErrFailing is the error a [Failing] store wraps when given none.
var ErrFailing = errors.New("storetest: failing store")

// Failing returns a [values.Durable] on which every call fails with an
// error wrapping err, or [ErrFailing] when err is nil. PutBody returns the
// key "", Body and Records return nil. It stores nothing and is safe for
// concurrent use. It lets a test prove that a store failure never fails
// the caller's own work and never yields a key.
//
// Since its Records fails too, [values.Open] on it fails; to test failing
// writes to a session that opens, wrap a working store and fail only its
// PutBody and AppendRecord.
func Failing(err error) values.Durable {
	if err == nil {
		err = ErrFailing
	}
	return failing{err}
}

type failing struct{ err error }

func (f failing) PutBody(session string, body []byte) (string, error) {
	return "", fmt.Errorf("storetest: put body: %w", f.err)
}

func (f failing) Body(session, key string) ([]byte, error) {
	return nil, fmt.Errorf("storetest: body: %w", f.err)
}

func (f failing) AppendRecord(session string, r values.Record) error {
	return fmt.Errorf("storetest: append record: %w", f.err)
}

func (f failing) Records(session string) ([]values.Record, error) {
	return nil, fmt.Errorf("storetest: records: %w", f.err)
}
