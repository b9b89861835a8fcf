package wire

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"
)

// Large arguments are spliced into the outgoing line: an encoder (the
// SDK's) would re-encode them (a full scan and copy of a 17 MiB argument
// on the way into the request, another into the message). The caller
// passes the encoder a short placeholder string instead ([Splices.Hold]),
// and the connection writes the arguments in its place as it writes the
// line (the Splices hook); a connection that encodes messages itself has
// them put back first ([Splices.Expand]).

// A Splices holds the arguments of the calls in flight by placeholder.
// Each placeholder holds a nonce of its Splices, so that no argument from
// an agent can hold one. The zero value is not usable: make one with
// NewSplices. A Splices is safe for concurrent use.
type Splices struct {
	mark []byte   // begins every placeholder
	held sync.Map // uint64 -> []byte
	next atomic.Uint64
}

// NewSplices returns an empty Splices.
func NewSplices() *Splices {
	nonce := make([]byte, 16)
	rand.Read(nonce) // never fails (crypto/rand)
	return &Splices{mark: []byte(`"agentvalues-splice:` + hex.EncodeToString(nonce) + `:`)}
}

// Hold returns the placeholder for args, a JSON string, and a func that
// forgets args, to be called once the call is over.
func (s *Splices) Hold(args []byte) (json.RawMessage, func()) {
	n := s.next.Add(1)
	s.held.Store(n, args)
	ph := append(bytes.Clone(s.mark), strconv.FormatUint(n, 10)...)
	return append(ph, '"'), func() { s.held.Delete(n) }
}

// Count returns how many placeholders Hold has handed out.
func (s *Splices) Count() uint64 { return s.next.Load() }

// Len returns how many arguments are held: placeholders handed out whose
// call is not over.
func (s *Splices) Len() int {
	n := 0
	s.held.Range(func(_, _ any) bool { n++; return true })
	return n
}

// find finds a placeholder in the encoded message data and returns the
// bytes before it, the arguments it stands for, and the bytes after it; ok
// is false when data holds none (or one whose call is over), and for a
// nil Splices.
func (s *Splices) find(data []byte) (before, args, after []byte, ok bool) {
	if s == nil {
		return nil, nil, nil, false
	}
	i := bytes.Index(data, s.mark)
	if i < 0 {
		return nil, nil, nil, false
	}
	rest := data[i+len(s.mark):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return nil, nil, nil, false
	}
	n, err := strconv.ParseUint(string(rest[:end]), 10, 64)
	if err != nil {
		return nil, nil, nil, false
	}
	v, found := s.held.Load(n)
	if !found {
		return nil, nil, nil, false
	}
	return data[:i], v.([]byte), rest[end+1:], true
}

// Expand returns params with a placeholder replaced by the arguments it
// stands for, for a connection that encodes messages itself.
func (s *Splices) Expand(params json.RawMessage) json.RawMessage {
	before, args, after, ok := s.find(params)
	if !ok {
		return params
	}
	out := make([]byte, 0, len(before)+len(args)+len(after))
	out = append(out, before...)
	out = append(out, args...)
	return append(out, after...)
}
