package mcpproxy

import (
	"bytes"
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"
)

// Large resolved arguments are spliced into the outgoing frame: the SDK
// would re-encode them (a full scan and copy of a 17 MiB argument on the
// way into the request, another into the message). The proxy passes the
// SDK a short placeholder string instead, and the downstream connection
// writes the arguments in its place as it writes the line.

// spliceMin is the size of prepared arguments from which they are spliced.
const spliceMin = 64 << 10

// spliceMark begins every placeholder; rawNonce makes it one no argument
// from the agent can hold.
var spliceMark = []byte(`"agentvalues-splice:` + rawNonce + `:`)

// splices holds the arguments of the calls in flight, by placeholder number.
var splices struct {
	sync.Map // uint64 -> []byte
	next     atomic.Uint64
}

// holdSplice returns the placeholder for args and a func that forgets them,
// to be called once the call is over.
func holdSplice(args []byte) (json.RawMessage, func()) {
	n := splices.next.Add(1)
	splices.Store(n, args)
	ph := append(bytes.Clone(spliceMark), strconv.FormatUint(n, 10)...)
	return append(ph, '"'), func() { splices.Delete(n) }
}

// spliced finds a placeholder in the encoded message data and returns the
// bytes before it, the arguments it stands for, and the bytes after it; ok
// is false when data holds none (or one whose call is over).
func spliced(data []byte) (before, args, after []byte, ok bool) {
	i := bytes.Index(data, spliceMark)
	if i < 0 {
		return nil, nil, nil, false
	}
	rest := data[i+len(spliceMark):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return nil, nil, nil, false
	}
	n, err := strconv.ParseUint(string(rest[:end]), 10, 64)
	if err != nil {
		return nil, nil, nil, false
	}
	v, found := splices.Load(n)
	if !found {
		return nil, nil, nil, false
	}
	return data[:i], v.([]byte), rest[end+1:], true
}

// expandParams returns params with a placeholder replaced by the arguments
// it stands for, for a connection that encodes messages itself.
func expandParams(params json.RawMessage) json.RawMessage {
	before, args, after, ok := spliced(params)
	if !ok {
		return params
	}
	out := make([]byte, 0, len(before)+len(args)+len(after))
	out = append(out, before...)
	out = append(out, args...)
	return append(out, after...)
}
