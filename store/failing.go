package store

import "fmt"

// Failing returns a Store on which every call but Close fails with an
// error wrapping err (ErrUnavailable when err is nil). It is a test aid: it
// lets a caller prove that a store failure never fails its own work and
// never yields a key. It stores nothing and is safe for concurrent use.
func Failing(err error) Store {
	if err == nil {
		err = ErrUnavailable
	}
	return failing{err}
}

type failing struct{ err error }

func (f failing) Put(session string, body []byte) (string, error) {
	return "", fmt.Errorf("store: put: %w", f.err)
}

func (f failing) Get(session, key string) ([]byte, error) {
	return nil, fmt.Errorf("store: get: %w", f.err)
}

func (f failing) AppendHandle(session string, rec HandleRecord) error {
	return fmt.Errorf("store: append handle: %w", f.err)
}

func (f failing) Handles(session string) ([]HandleRecord, error) {
	return nil, fmt.Errorf("store: handles: %w", f.err)
}

func (f failing) Close() error { return nil }
