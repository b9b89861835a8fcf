package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"sync"

	"github.com/agentvalues/values/internal/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A Tracker remembers each call awaiting its response, by its id on the
// wire: its method, its tag, and its own id. A call is forgotten when its
// response comes, when it is cancelled, or when it could not be sent. The
// zero value is an empty Tracker; a Tracker is safe for concurrent use.
type Tracker struct {
	mu      sync.Mutex
	pending map[jsonrpc.ID]Pending
	wire    map[jsonrpc.ID]jsonrpc.ID // the wire id of each pending call, by its own id
}

// A Pending is a call awaiting its response: its method, its tag
// (what the caller gave it for the Fix hook: see WithTag), and its own id, which
// its response gets back (the same as on the wire on a connection that
// does not renumber calls).
type Pending struct {
	Method string
	Tag    any
	ID     jsonrpc.ID
}

// Add remembers call, sent as wire.
func (t *Tracker) Add(wire jsonrpc.ID, call Pending) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pending == nil {
		t.pending = make(map[jsonrpc.ID]Pending)
		t.wire = make(map[jsonrpc.ID]jsonrpc.ID)
	}
	t.pending[wire] = call
	t.wire[call.ID] = wire
}

// method returns the method of the pending call id.
func (t *Tracker) method(id jsonrpc.ID) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m, ok := t.pending[id]
	return m.Method, ok
}

// Done forgets the pending call sent as id and returns it.
func (t *Tracker) Done(id jsonrpc.ID) (Pending, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m, ok := t.pending[id]
	if ok {
		delete(t.pending, id)
		if t.wire[m.ID] == id {
			delete(t.wire, m.ID)
		}
	}
	return m, ok
}

// waiting returns the ids on the wire of the pending calls of method, or
// of every pending call when method is "".
func (t *Tracker) waiting(method string) []jsonrpc.ID {
	t.mu.Lock()
	defer t.mu.Unlock()
	var ids []jsonrpc.ID
	for id, call := range t.pending {
		if method == "" || call.Method == method {
			ids = append(ids, id)
		}
	}
	return ids
}

// cancelled returns the notifications/cancelled request req with the call
// it names by its own id named by its id on the wire, and forgets the
// call; it reports false when no pending call has that id (it is over).
// A request it cannot read is returned as it is.
func (t *Tracker) cancelled(req *jsonrpc.Request) (*jsonrpc.Request, bool) {
	if len(req.Params) == 0 || jsontext.Valid(req.Params) != nil {
		return req, true
	}
	v, ok := jsontext.Member(req.Params, "requestId")
	if !ok {
		return req, true
	}
	id, ok := idOf(v)
	if !ok {
		return req, true
	}
	t.mu.Lock()
	wire, ok := t.wire[id]
	t.mu.Unlock()
	if !ok {
		return nil, false
	}
	t.Done(wire)
	raw, _ := json.Marshal(wire.Raw())
	at := offsetIn(req.Params, v)
	params := append([]byte(nil), req.Params[:at]...)
	params = append(params, raw...)
	params = append(params, req.Params[at+len(v):]...)
	r := *req
	r.Params = params
	return &r, true
}

// ForgetCancelled forgets the call a notifications/cancelled request names:
// the server need not answer it, and its entry would keep its store.
func (t *Tracker) ForgetCancelled(req *jsonrpc.Request) {
	if req.Method != "notifications/cancelled" || len(req.Params) == 0 || jsontext.Valid(req.Params) != nil {
		return
	}
	if v, ok := jsontext.Member(req.Params, "requestId"); ok {
		if id, ok := idOf(v); ok {
			t.Done(id)
		}
	}
}

// messageID returns the id of the valid JSON object data, if it has a
// usable one (a string or a number).
func messageID(data []byte) (jsonrpc.ID, bool) {
	v, ok := jsontext.Member(data, "id")
	if !ok {
		return jsonrpc.ID{}, false
	}
	return idOf(v)
}

// idOf makes an id of the valid JSON value v, a string or a number. A
// number must be an integer of at most maxExactID in magnitude (8.0 is 8):
// the SDK makes an integer of any number, so that 8.5 would name call 8.
func idOf(v []byte) (jsonrpc.ID, bool) {
	var raw any
	switch v[0] {
	case '"':
		raw = string(jsontext.AppendUnquoted(nil, v))
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		// Digits alone (every id the SDK's clients send), read without
		// ParseFloat's copy of v: up to maxExactID, the value ParseFloat
		// would give.
		if n, ok := jsontext.ParseUint(v, min(maxExactID, math.MaxInt)); ok {
			id, err := jsonrpc.MakeID(float64(n))
			return id, err == nil
		}
		f, err := strconv.ParseFloat(string(v), 64) // as the SDK decodes an id
		if err != nil || f != math.Trunc(f) || math.Abs(f) > maxExactID {
			return jsonrpc.ID{}, false
		}
		raw = f
	default:
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(raw)
	return id, err == nil && id.IsValid()
}

// maxExactID is the largest integer magnitude up to which every integer
// is a float64, as the SDK decodes a number id: past it two ids may be
// decoded as one.
const maxExactID = 1 << 53

// FindID finds the top-level id of a message known only by its first and
// last bytes: in the head when the id comes before the large part (as the Go
// SDK writes it), else as the last member of the object (as the TypeScript
// SDK writes it).
func FindID(head, tail []byte) (jsonrpc.ID, bool) {
	if id, ok := HeadID(head); ok {
		return id, true
	}
	return tailID(tail)
}

// HeadID looks for "id" among the top-level members of the object whose
// first bytes are head, those that end before head does.
func HeadID(head []byte) (jsonrpc.ID, bool) {
	found, ok := jsonrpc.ID{}, false
	var w jsontext.Walker
	w.Walk(head, func(start, end int) error { // head is cut: the walk ends in an error
		if w.Depth() == 1 && end < len(head) && head[jsontext.SkipSpace(head, 0)] == '{' && w.Pointer(head) == "/id" {
			found, ok = idOf(head[start:end])
			return errFound
		}
		return nil
	})
	return found, ok
}

// brokenResponseID finds the id of a line that is not valid JSON but
// begins as a response: an object whose id comes before the fault, with
// no method before it, or whose id ends it (see tailID).
func brokenResponseID(data []byte) (jsonrpc.ID, bool) {
	if data[0] != '{' {
		return jsonrpc.ID{}, false
	}
	found, ok, method := jsonrpc.ID{}, false, false
	var w jsontext.Walker
	w.Walk(data, func(start, end int) error { // data is not JSON: the walk ends in an error
		if w.Depth() == 1 {
			switch w.Pointer(data) {
			case "/id":
				found, ok = idOf(data[start:end])
			case "/method":
				method = true
			}
		}
		return nil
	})
	if method {
		return jsonrpc.ID{}, false
	}
	if ok {
		return found, true
	}
	return tailID(data)
}

// errFound ends a walk that found what it looked for.
var errFound = errors.New("found")

// tailID matches `,"id":<number or string>}` at the end of tail.
func tailID(tail []byte) (jsonrpc.ID, bool) {
	t := bytes.TrimRight(tail, " \t\r\n")
	if len(t) == 0 || t[len(t)-1] != '}' {
		return jsonrpc.ID{}, false
	}
	t = bytes.TrimRight(t[:len(t)-1], " \t\r\n")
	var start int
	switch {
	case len(t) > 0 && t[len(t)-1] == '"':
		start = -1
		for i := len(t) - 2; i >= 0; i-- {
			if t[i] != '"' {
				continue
			}
			bs := 0
			for j := i - 1; j >= 0 && t[j] == '\\'; j-- {
				bs++
			}
			if bs%2 == 0 {
				start = i
				break
			}
		}
		if start < 0 {
			return jsonrpc.ID{}, false
		}
	default:
		start = len(t)
		for start > 0 && bytes.IndexByte([]byte("0123456789+-.eE"), t[start-1]) >= 0 {
			start--
		}
		if start == len(t) {
			return jsonrpc.ID{}, false
		}
	}
	val := t[start:]
	rest := bytes.TrimRight(t[:start], " \t\r\n")
	if !bytes.HasSuffix(rest, []byte(":")) {
		return jsonrpc.ID{}, false
	}
	rest = bytes.TrimRight(rest[:len(rest)-1], " \t\r\n")
	if !bytes.HasSuffix(rest, []byte(`"id"`)) {
		return jsonrpc.ID{}, false
	}
	rest = bytes.TrimRight(rest[:len(rest)-4], " \t\r\n")
	if !bytes.HasSuffix(rest, []byte(",")) && !bytes.HasSuffix(rest, []byte("{")) {
		return jsonrpc.ID{}, false
	}
	if jsontext.Valid(val) != nil {
		return jsonrpc.ID{}, false
	}
	return idOf(val)
}

// CancelledID returns the request id a notifications/cancelled names.
func CancelledID(params json.RawMessage) (jsonrpc.ID, bool) {
	p := bytes.TrimSpace(params)
	if len(p) == 0 || p[0] != '{' || jsontext.Valid(p) != nil {
		return jsonrpc.ID{}, false
	}
	v, ok := jsontext.Member(p, "requestId")
	if !ok {
		return jsonrpc.ID{}, false
	}
	return idOf(v)
}

// offsetIn returns the offset of sub within outer; sub must be a subslice.
func offsetIn(outer, sub []byte) int { return cap(outer) - cap(sub) }
