package mcpproxy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"

	"github.com/agentvalues/values/mcpproxy/internal/wire"

	"github.com/agentvalues/values/internal/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A BoundedRoundTripper is the http.RoundTripper of the HTTP client of an
// [mcp.StreamableClientTransport] to a downstream server: it holds each
// message the server sends to MaxMessage bytes, as [CommandTransport] does
// for a stdio server. The SDK's client reads a JSON response whole and
// decodes it several times over (a 400 MB result took a gateway to 2.4
// GB), and ends the whole connection at an event of a stream over its
// MaxEventSize (16 MiB by default): set MaxEventSize negative, and let
// this bound it instead.
//
// A message over the bound is read through without being held (its first
// and last 4 KiB aside, to find its id) and never reaches the SDK: a
// response becomes an error response for the same call, "the downstream
// server's response was dropped: the message is N bytes, over the limit
// of M", which the proxy shows the agent as it does for a stdio server;
// a request or notification of the server's is dropped, with a line on
// Log. This holds for a JSON response (one with a Content-Length over the
// bound is not read at all) and for every event of a stream (a POST's
// response stream, or the standalone GET stream). The body of an error
// status is cut at the bound. The connection goes on.
//
// A BoundedRoundTripper is safe for concurrent use if Base is.
type BoundedRoundTripper struct {
	// Base makes the requests; nil means http.DefaultTransport.
	Base http.RoundTripper
	// MaxMessage bounds one message in bytes. Zero means
	// DefaultMaxMessage; negative means no bound.
	MaxMessage int
	// Log receives a line for each request or notification of the server
	// dropped for its size. Nil means os.Stderr.
	Log io.Writer
}

// RoundTrip makes the request with Base and bounds the messages of its
// response.
func (t *BoundedRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(req)
	max := int64(orDefault(t.MaxMessage, DefaultMaxMessage))
	if err != nil || max < 0 || resp.Body == nil || resp.Body == http.NoBody {
		return resp, err
	}
	b := &bounded{max: max, req: req, log: t.Log, endpoint: req.URL.Redacted()}
	if b.log == nil {
		b.log = os.Stderr
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.LimitReader(resp.Body, max), resp.Body}
		return resp, nil
	}
	switch ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct {
	case "application/json":
		if resp.ContentLength > max {
			resp.Body.Close()
			msg := b.dropped(nil, nil, resp.ContentLength, true)
			resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(msg)), int64(len(msg))
			resp.Header.Del("Content-Length")
			return resp, nil
		}
		if resp.ContentLength < 0 {
			resp.Body = &boundedJSON{bounded: b, body: resp.Body}
		}
	case "text/event-stream":
		resp.Body = &boundedEvents{bounded: b, body: resp.Body, r: bufio.NewReaderSize(resp.Body, 64<<10)}
	}
	return resp, nil
}

// bounded is what the bounded readers of one response share.
type bounded struct {
	max      int64
	req      *http.Request // the request the response answers
	log      io.Writer
	endpoint string
}

// dropped returns what stands in for a message of size bytes over the
// bound, whose first and last bytes are head and tail: an error response
// for its call, when it is a response (a response is all a JSON body can
// be: whole says so) whose id is in it or, failing that, is the request's;
// nil when it is a request or a notification of the server's, which is
// logged.
func (b *bounded) dropped(head, tail []byte, size int64, whole bool) []byte {
	why := fmt.Sprintf("the message is %d bytes, over the limit of %d", size, b.max)
	if !whole && isRequest(head) {
		fmt.Fprintf(b.log, "agentvalues: dropped a message of the Streamable HTTP server %s: %s\n", b.endpoint, why)
		return nil
	}
	id, ok := wire.FindID(head, tail)
	if !ok {
		id, ok = b.requestID()
	}
	if !ok {
		fmt.Fprintf(b.log, "agentvalues: dropped a response of the Streamable HTTP server %s whose call could not be told: %s\n", b.endpoint, why)
		return nil
	}
	data, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: wire.CodeProxy, Message: "the downstream server's response was dropped: " + why}})
	if err != nil {
		return nil
	}
	return data
}

// requestID returns the id of the call the response answers, read from
// the first bytes of the request's body (the SDK writes it there).
func (b *bounded) requestID() (jsonrpc.ID, bool) {
	if b.req.GetBody == nil {
		return jsonrpc.ID{}, false
	}
	body, err := b.req.GetBody()
	if err != nil {
		return jsonrpc.ID{}, false
	}
	defer body.Close()
	var head [wire.IDWindow]byte
	n, _ := io.ReadFull(body, head[:])
	return wire.HeadID(head[:n])
}

// isRequest reports whether the message beginning with head is a request
// or a notification: an object with a top-level "method" before the head
// is cut.
func isRequest(head []byte) bool {
	method := false
	var w jsontext.Walker
	w.Walk(head, func(_, end int) error { // head is cut: the walk ends in an error
		if w.Depth() == 1 && end < len(head) && w.Pointer(head) == "/method" {
			method = true
			return errFound
		}
		return nil
	})
	return method
}

// errFound ends a walk that found what it looked for.
var errFound = errors.New("found")

// A boundedJSON is the body of a JSON response of unknown length, read
// whole at the first Read: within the bound as it came, past it as the
// error response that stands in for it.
type boundedJSON struct {
	*bounded
	body io.ReadCloser
	out  io.Reader
}

func (j *boundedJSON) Read(p []byte) (int, error) {
	if j.out == nil {
		j.out = j.fill()
	}
	return j.out.Read(p)
}

func (j *boundedJSON) fill() io.Reader {
	var blocks [][]byte
	var head, tail []byte
	size := int64(0)
	buf := make([]byte, 64<<10)
	for {
		n, err := j.body.Read(buf)
		size += int64(n)
		if len(head) < wire.IDWindow {
			head = append(head, buf[:min(n, wire.IDWindow-len(head))]...)
		}
		tail = wire.AppendTail(tail, buf[:n])
		if size <= j.max {
			blocks = wire.AppendBlocks(blocks, buf[:n])
		} else {
			blocks = nil
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return io.MultiReader(bytes.NewReader(wire.JoinBlocks(nil, blocks)), errReader{err})
		}
	}
	if size <= j.max {
		return bytes.NewReader(wire.JoinBlocks(nil, blocks))
	}
	return bytes.NewReader(j.dropped(head, tail, size, true))
}

func (j *boundedJSON) Close() error { return j.body.Close() }

// An errReader returns its error.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// A boundedEvents is the body of an event stream, passed on an event at a
// time: an event whose data is within the bound as it came, one past it
// with its data replaced by the error response that stands in for it (or
// left out, for a request or notification).
type boundedEvents struct {
	*bounded
	body io.ReadCloser
	r    *bufio.Reader
	out  [][]byte // what is ready for the SDK
	err  error    // what ends the stream, once out is read
}

func (e *boundedEvents) Read(p []byte) (int, error) {
	for len(e.out) == 0 {
		if e.err != nil {
			return 0, e.err
		}
		e.err = e.next()
	}
	n := copy(p, e.out[0])
	if e.out[0] = e.out[0][n:]; len(e.out[0]) == 0 {
		e.out = e.out[1:]
	}
	return n, nil
}

func (e *boundedEvents) Close() error { return e.body.Close() }

// maxEventField bounds a line of an event other than data (id, event,
// retry, a comment), and maxEventFields all of them: past it a line is
// left out of an event whose data is over the bound.
const (
	maxEventField  = 4 << 10
	maxEventFields = 64 << 10
)

// An event is one event of a stream while it is read.
type event struct {
	raw       [][]byte // its bytes as they came, while its data is within the bound
	fields    []byte   // its lines other than data
	head      []byte   // the first wire.IDWindow bytes of its data
	tail      []byte   // the last wire.IDWindow bytes of its data
	size      int64    // of its data, as the SDK joins it (a newline between data lines)
	dataLines int
	over      bool // its data is over the bound: raw is dropped

	inLine   bool   // a line was begun and not ended
	lineData bool   // that line is data
	field    []byte // that line, when it is another field short enough to keep
}

// add adds chunk, the next piece of a line (all of it, when it ends with
// a newline), to the event.
func (ev *event) add(chunk []byte, max int64) {
	if !ev.inLine {
		ev.inLine = true
		name, value, _ := bytes.Cut(bytes.TrimRight(chunk, "\r\n"), []byte(":"))
		ev.lineData = string(name) == "data"
		if ev.lineData {
			if ev.dataLines > 0 {
				ev.addData([]byte("\n"), max)
			}
			ev.dataLines++
			ev.addData(bytes.TrimPrefix(value, []byte(" ")), max)
		} else {
			ev.field = append(ev.field[:0], chunk...)
		}
	} else if ev.lineData {
		ev.addData(bytes.TrimRight(chunk, "\r\n"), max)
	} else if ev.field != nil {
		if len(ev.field)+len(chunk) > maxEventField {
			ev.field = nil
		} else {
			ev.field = append(ev.field, chunk...)
		}
	}
	if !ev.over {
		ev.raw = wire.AppendBlocks(ev.raw, chunk)
	}
}

// endLine ends the line begun.
func (ev *event) endLine() {
	if !ev.lineData && len(bytes.TrimRight(ev.field, "\r\n")) > 0 && len(ev.field) <= maxEventField && len(ev.fields)+len(ev.field) <= maxEventFields {
		ev.fields = append(ev.fields, ev.field...)
	}
	ev.inLine, ev.field = false, nil
}

// addData adds v to the event's data.
func (ev *event) addData(v []byte, max int64) {
	ev.size += int64(len(v))
	if len(ev.head) < wire.IDWindow {
		ev.head = append(ev.head, v[:min(len(v), wire.IDWindow-len(ev.head))]...)
	}
	ev.tail = wire.AppendTail(ev.tail, v)
	if !ev.over && ev.size > max {
		ev.over, ev.raw = true, nil
	}
}

// next reads one event, up to the blank line that ends it, into out, and
// returns the error reading stopped at, if any.
func (e *boundedEvents) next() error {
	var ev event
	for {
		chunk, err := e.r.ReadSlice('\n')
		blank := !ev.inLine && err == nil && len(bytes.TrimRight(chunk, "\r\n")) == 0
		if len(chunk) > 0 {
			ev.add(chunk, e.max)
		}
		if err == bufio.ErrBufferFull {
			continue // the rest of the line follows
		}
		ev.endLine()
		if err == nil && !blank {
			continue
		}
		switch {
		case !ev.over:
			e.out = append(e.out, ev.raw...)
		default:
			if msg := e.dropped(ev.head, ev.tail, ev.size, false); msg != nil {
				e.out = append(e.out, ev.fields, []byte("data: "), msg, []byte("\n\n"))
			}
		}
		return err
	}
}
