package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/agentvalues/values/internal/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// answer replies to a malformed message from the client, or logs it when
// it cannot be answered.
func (c *Conn) answer(data []byte, decodeErr error) {
	if !json.Valid(data) {
		c.reply(nil, jsonrpc.CodeParseError, "Parse error: "+jsonProblem(data))
		return
	}
	switch data[0] {
	case '[':
		c.reply(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: JSON-RPC batches are not supported (MCP removed them in 2025-06-18); send each message on a line of its own")
		return
	case '{':
	default:
		c.reply(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: a JSON-RPC message is a JSON object, not "+KindName(data[0]))
		return
	}
	id, idOK := messageID(data)
	method, hasMethod := jsontext.Member(data, "method")
	version, _ := jsontext.Member(data, "jsonrpc")
	rawID, hasID := jsontext.Member(data, "id")
	switch {
	case len(version) == 0 || version[0] != '"' || !jsontext.KeyEquals(version, "2.0"):
		c.replyOrLog(id, idOK, hasMethod, jsonrpc.CodeInvalidRequest, `Invalid Request: "jsonrpc" must be "2.0"`)
	case !idOK && hasID:
		c.reply(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: an id is a string or a number, not "+ClipText(string(rawID)))
	case hasMethod && method[0] != '"':
		c.replyOrLog(id, idOK, true, jsonrpc.CodeInvalidRequest, `Invalid Request: "method" must be a string`)
	case hasMethod:
		c.replyOrLog(id, idOK, true, jsonrpc.CodeInvalidParams, "Invalid params: "+decodeProblem(data, decodeErr))
	default:
		c.Logf("ignored a malformed response from the client: %s", decodeProblem(data, decodeErr))
	}
}

// replyOrLog answers a request that has an id; a notification, or a
// message that is not a request, cannot be answered and is logged.
func (c *Conn) replyOrLog(id jsonrpc.ID, idOK, request bool, code int64, msg string) {
	if idOK && request {
		c.reply(&id, code, msg)
		return
	}
	c.Logf("ignored a malformed message from the client: %s", msg)
}

// reply writes a JSON-RPC error response with id (nil: null).
func (c *Conn) reply(id *jsonrpc.ID, code int64, msg string) {
	b := []byte(`{"jsonrpc":"2.0","id":`)
	if id == nil || !id.IsValid() {
		b = append(b, "null"...)
	} else {
		raw, _ := json.Marshal(id.Raw())
		b = append(b, raw...)
	}
	b = fmt.Appendf(b, `,"error":{"code":%d,"message":`, code)
	m, _ := json.Marshal(msg)
	b = append(b, m...)
	b = append(b, "}}\n"...)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.w.Write(b) // a failed write shows on the next one the session makes
}

// salvage handles a line from the server that the SDK cannot decode. A
// line that is not JSON is, when it begins as a response to a pending call
// (its id found as tooLarge finds one), the end of that call, with an
// error, so the call does not wait for ever; any other (a log line on
// standard output) is logged and skipped. A response to a pending call is
// rebuilt from its parts when it is only too deep for the SDK (Fix,
// applied first, may make it shallow enough) and otherwise answered with
// an error; anything else is logged and skipped.
func (c *Conn) salvage(data []byte, decodeErr error) jsonrpc.Message {
	if !json.Valid(data) {
		if id, ok := brokenResponseID(data); ok {
			if call, pending := c.calls.Done(id); pending {
				return &jsonrpc.Response{ID: call.ID, Error: &jsonrpc.Error{Code: CodeProxy, Message: "the downstream server's response is " + jsonProblem(data)}}
			}
		}
		c.Logf("ignored a line from the downstream server that is not JSON-RPC: %s", ClipText(string(data)))
		return nil
	}
	id, idOK := messageID(data)
	if _, hasMethod := jsontext.Member(data, "method"); !idOK || hasMethod {
		c.Logf("ignored a message from the downstream server that could not be decoded: %s", decodeProblem(data, decodeErr))
		return nil
	}
	if _, pending := c.calls.method(id); !pending {
		c.Logf("ignored a response from the downstream server that could not be decoded: %s", decodeProblem(data, decodeErr))
		return nil
	}
	resp := &jsonrpc.Response{ID: id}
	result, hasResult := jsontext.Member(data, "result")
	_, hasError := jsontext.Member(data, "error")
	version, _ := jsontext.Member(data, "jsonrpc")
	if hasResult && !hasError && len(version) > 0 && version[0] == '"' && jsontext.KeyEquals(version, "2.0") {
		resp.Result = json.RawMessage(result)
		if !c.settle(resp, ResultLine{}) { // ended since it was found pending: see fromEnvelope
			return nil
		}
		if resp.Error != nil {
			return resp
		}
		// The depth is the fixed result's, what the SDK would be given.
		d := jsontext.Depth(resp.Result) + 1 // in the message
		if d <= MaxDepth {
			return resp
		}
		resp.Result = nil
		resp.Error = &jsonrpc.Error{Code: CodeProxy, Message: fmt.Sprintf("the downstream server's response could not be decoded: the message nests %d levels deep; at most %d can be decoded", d, MaxDepth)}
		return resp
	} else {
		call, _ := c.calls.Done(id)
		resp.ID = call.ID
	}
	resp.Result = nil
	resp.Error = &jsonrpc.Error{Code: CodeProxy, Message: "the downstream server's response could not be decoded: " + decodeProblem(data, decodeErr)}
	return resp
}

// stray drops a response from the server whose id, raw as written and
// id as idOf makes it (exact: it could), names no call in flight,
// logging it unless it names, exactly, a call this connection sent that
// ended before its response came (cancelled). Ids are matched by type and
// value, as JSON-RPC has them: the string "8" is not the number 8, nor is
// 8.5; a response with either is dropped, and call 8 goes on waiting for
// its own.
func (c *Conn) stray(raw []byte, id jsonrpc.ID, exact bool) {
	if n, ok := id.Raw().(int64); exact && ok && n > 0 && n <= c.wireSeq.Load() {
		return
	}
	c.Logf("ignored a response from the downstream server: its id %s names no call in flight", ClipText(string(raw)))
}

// responseID returns the id of the message data, which the SDK decoded,
// as written and as idOf makes it; exact is false when idOf does not take
// it (or data has none).
func responseID(data []byte) (raw []byte, id jsonrpc.ID, exact bool) {
	// encoding/json, as the SDK, takes invalid UTF-8 in a string; the
	// structure is all Member needs.
	if !json.Valid(data) {
		return nil, id, false
	}
	raw, ok := jsontext.Member(data, "id")
	if !ok {
		return nil, id, false
	}
	id, exact = idOf(raw)
	return raw, id, exact
}

// tooLarge handles a line over the bound: the server side answers the
// request it carries, the client side the call it answers, when the id can
// be found in the line's head or tail.
func (c *Conn) tooLarge(ln line) jsonrpc.Message {
	why := fmt.Sprintf("the message is %d bytes, over the limit of %d", ln.size, c.max)
	id, ok := FindID(ln.head, ln.tail)
	if c.server {
		if ok {
			c.reply(&id, jsonrpc.CodeInvalidRequest, "Invalid Request: "+why)
		} else {
			c.reply(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: "+why+" (and its id could not be found)")
		}
		return nil
	}
	if ok {
		if call, pending := c.calls.Done(id); pending {
			return &jsonrpc.Response{ID: call.ID, Error: &jsonrpc.Error{Code: CodeProxy, Message: "the downstream server's response was dropped: " + why}}
		}
	}
	c.Logf("dropped a message from the downstream server: %s", why)
	return nil
}

// jsonProblem says why data is not a JSON value.
func jsonProblem(data []byte) string {
	var v json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&v); err != nil {
		return "not valid JSON: " + ClipText(err.Error())
	}
	return fmt.Sprintf("not one JSON value: more data after byte %d (one message per line)", dec.InputOffset())
}

// decodeProblem says why the SDK could not decode the valid JSON data.
func decodeProblem(data []byte, err error) string {
	if d := jsontext.Depth(data); d > MaxDepth {
		return fmt.Sprintf("the message nests %d levels deep; at most %d can be decoded", d, MaxDepth)
	}
	return ClipText(err.Error())
}

// KindName names the kind of JSON value that starts with c.
func KindName(c byte) string {
	switch c {
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case '[':
		return "an array"
	case '{':
		return "an object"
	}
	return "a number"
}

// ClipText clips s to clipLog bytes, quoting it, for a log line or an error.
func ClipText(s string) string {
	if len(s) <= clipLog {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:jsontext.HeadCutString(s, clipLog)]) + fmt.Sprintf("… (%d bytes)", len(s))
}
