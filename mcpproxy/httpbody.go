package mcpproxy

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/agentvalues/values/mcpproxy/internal/wire"

	"github.com/agentvalues/values/internal/jsontext"
	"github.com/dustin/go-humanize"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Request bodies. The SDK's handler reads a body with io.ReadAll, then
// decodes the message, its params and its _meta once each through a
// streaming decoder that copies its input into buffers of its own: about
// ten times the body in allocations, seven times at the peak (a 200 MB
// tools/call, 1.4 GB). The handler reads the body first, into a buffer of
// its Content-Length (or blocks joined once, for a chunked one), and when
// the body is a single tools/call whose arguments are stashMin or larger
// it hands the SDK the message with its arguments replaced by a stand-in
// ({"agentvalues/arguments": "<nonce>:<n>"}), small to decode. A receiving
// middleware (restoreArguments) puts the arguments back, as a slice of the
// body, before any handler or later middleware sees the call: the body is
// held once, for the length of its request. Any other body goes to the SDK
// as it came; MaxBodyBytes bounds what the bodies in flight hold.

// stashMin is the size of tools/call arguments from which they are held
// apart from what the SDK decodes: below it, decoding them costs less
// than the rewriting.
const stashMin = 64 << 10

// bodyStep is how much of a body is read between two updates of the read
// deadline, and the size of the blocks a chunked body is read into.
const bodyStep = 64 << 10

// argsMark begins every arguments stand-in; rawNonce makes it one a client
// cannot write.
var argsMark = `{"agentvalues/arguments":"` + rawNonce + `:`

// stashed holds the arguments of the calls whose requests are being
// handled, by stand-in number. The numbers are random, so that even a
// client that learnt rawNonce could not name another request's arguments.
var stashed sync.Map // uint64 -> []byte

// sdkBodyFactor is what a body the SDK decodes whole costs while its
// request is handled, as a multiple of its size: 7 at the peak, measured
// for a 200 MB tools/call; such a body counts that many times toward
// MaxBodyBytes.
const sdkBodyFactor = 8

// A bodyHold is what one request holds of MaxBodyBytes.
type bodyHold struct {
	h  *httpBounds
	w  http.ResponseWriter
	id *jsonrpc.ID // the request's, when found in its first bytes
	// whole: those first bytes were the whole body, so that id is what
	// wire.HeadID finds in it (nil: nothing).
	whole bool
	held  int64
}

// hold counts n more bytes in, or writes the refusal and gives back what
// was held.
func (b *bodyHold) hold(n int64) bool {
	h := b.h
	if h.cfg.maxBodyBytes >= 0 {
		n = min(n, h.cfg.maxBodyBytes-b.held) // a body over the bound is taken alone
	}
	if h.take("body bytes", func() bool { return h.cfg.maxBodyBytes < 0 || h.held == b.held || h.held+n <= h.cfg.maxBodyBytes }, func() { h.held += n; b.held += n },
		func() string {
			return fmt.Sprintf("the request bodies being handled hold %s, the most this server holds at once (MaxBodyBytes)", humanize.IBytes(uint64(h.cfg.maxBodyBytes)))
		}) {
		return true
	}
	b.release()
	writeHTTPError(b.w, http.StatusServiceUnavailable, b.id, codeBusy,
		fmt.Sprintf("the server is busy: the request bodies it is handling hold %s, the most it holds at once; try again in a moment", humanize.IBytes(uint64(h.cfg.maxBodyBytes))), time.Second)
	return false
}

// release gives back what b holds.
func (b *bodyHold) release() {
	b.h.release(func() { b.h.held -= b.held })
	b.held = 0
}

// readBody reads req's body within the bounds of h: it returns the body
// and what it holds of MaxBodyBytes, to be released once the request is
// answered, or writes the refusal and returns false.
func (h *httpBounds) readBody(w http.ResponseWriter, req *http.Request) (body []byte, b *bodyHold, ok bool) {
	rc := http.NewResponseController(w)
	start := time.Now()
	got := int64(0)
	var deadline time.Time
	// Before each read: the body must have arrived at MinBodyRate after
	// ReadTimeout, up to what this read asks.
	step := func(ask int64) {
		if h.cfg.readTimeout < 0 {
			return
		}
		d := h.cfg.readTimeout
		if h.cfg.minBodyRate > 0 {
			d += time.Duration(float64(got+ask) / float64(h.cfg.minBodyRate) * float64(time.Second))
		}
		deadline = start.Add(d)
		rc.SetReadDeadline(deadline) // not on every ResponseWriter (a test's recorder): then unbounded
	}
	defer func() {
		if ok {
			rc.SetReadDeadline(time.Time{}) // the event stream of the response is not bounded
		} else {
			// What is left of the body is not read: the connection closes
			// after the refusal, at once rather than after the server read
			// the rest to keep the connection.
			rc.SetReadDeadline(time.Now())
		}
	}()
	w.Header()["Connection"] = connectionClose // until the body is in

	// The head, enough to find the request's id when it is refused: a
	// body of a known length no longer than that is read whole into its
	// own memory, the body itself.
	size := req.ContentLength // -1: unknown (chunked)
	headSize := int64(wire.IDWindow)
	if size >= 0 && size <= headSize {
		headSize = size
	}
	head := make([]byte, headSize)
	step(int64(len(head)))
	n, err := io.ReadFull(req.Body, head)
	got += int64(n)
	b = &bodyHold{h: h, w: w}
	if id, ok := wire.HeadID(head[:n]); ok {
		b.id = &id
	}
	if (err == io.EOF || err == io.ErrUnexpectedEOF) && size <= int64(n) {
		size, err = int64(n), nil // all of it
	}
	b.whole = err == nil && size == int64(n)
	if err != nil {
		h.bodyFailed(w, b.id, err, got, size, start, deadline)
		return nil, nil, false
	}
	if h.cfg.maxMessage >= 0 && size > h.cfg.maxMessage {
		writeHTTPError(w, http.StatusRequestEntityTooLarge, b.id, jsonrpc.CodeInvalidRequest,
			fmt.Sprintf("Invalid Request: the message is %d bytes, over the limit of %d", size, h.cfg.maxMessage), 0)
		return nil, nil, false
	}

	if size >= 0 {
		if !b.hold(size) {
			return nil, nil, false
		}
		if int64(n) == size {
			body = head[:n]
		} else {
			body = make([]byte, size)
			copy(body, head[:n])
		}
		for got < size && err == nil {
			step(min(bodyStep, size-got))
			var m int
			m, err = io.ReadFull(req.Body, body[got:min(got+bodyStep, size)])
			got += int64(m)
		}
		if err == nil { // to the end: the server then watches the connection for the client going away
			var one [1]byte
			if m, _ := req.Body.Read(one[:]); m > 0 {
				err = errors.New("the body is longer than its Content-Length")
			}
		}
		if err != nil {
			b.release()
			h.bodyFailed(w, b.id, err, got, size, start, deadline)
			return nil, nil, false
		}
		w.Header().Del("Connection")
		return body, b, true
	}
	// Chunked: blocks, joined once at the end.
	blocks := wire.AppendBlocks(nil, head[:n])
	if !b.hold(int64(n)) {
		return nil, nil, false
	}
	buf := make([]byte, bodyStep)
	for {
		step(bodyStep)
		m, err := req.Body.Read(buf)
		got += int64(m)
		if h.cfg.maxMessage >= 0 && got > h.cfg.maxMessage {
			b.release()
			writeHTTPError(w, http.StatusRequestEntityTooLarge, b.id, jsonrpc.CodeInvalidRequest,
				fmt.Sprintf("Invalid Request: the message is over the limit of %d bytes", h.cfg.maxMessage), 0)
			return nil, nil, false
		}
		if m > 0 && !b.hold(int64(m)) {
			return nil, nil, false
		}
		blocks = wire.AppendBlocks(blocks, buf[:m])
		if err == io.EOF {
			break
		}
		if err != nil {
			b.release()
			h.bodyFailed(w, b.id, err, got, -1, start, deadline)
			return nil, nil, false
		}
	}
	w.Header().Del("Connection")
	return wire.JoinBlocks(nil, blocks), b, true
}

// bodyFailed answers a request whose body could not be read: too slow
// (408), or cut off.
func (h *httpBounds) bodyFailed(w http.ResponseWriter, id *jsonrpc.ID, err error, got, size int64, start, deadline time.Time) {
	of := ""
	if size >= 0 {
		of = fmt.Sprintf(" of %d", size)
	}
	var ne interface{ Timeout() bool }
	if errors.As(err, &ne) && ne.Timeout() {
		fmt.Fprintf(h.cfg.log, "agentvalues: gave up on a request body over HTTP: %d%s bytes in %v\n", got, of, time.Since(start).Round(time.Millisecond))
		writeHTTPError(w, http.StatusRequestTimeout, id, jsonrpc.CodeInvalidRequest,
			fmt.Sprintf("Invalid Request: the body did not arrive in time: %d%s bytes in %v (a body must arrive within %v, and then at %s/s at least)",
				got, of, deadline.Sub(start).Round(time.Millisecond), h.cfg.readTimeout, humanize.IBytes(uint64(h.cfg.minBodyRate))), 0)
		return
	}
	writeHTTPError(w, http.StatusBadRequest, id, jsonrpc.CodeInvalidRequest,
		fmt.Sprintf("Invalid Request: reading the body: %v after %d%s bytes", err, got, of), 0)
}

// withBody returns req with body as its body. A single tools/call whose
// arguments are stashMin or larger gets them replaced by a stand-in (see
// the top of this file), which lives until the request's context ends;
// any other body counts sdkBodyFactor times toward MaxBodyBytes in b, or,
// if that is refused, withBody writes the refusal and returns false.
func withBody(req *http.Request, body []byte, b *bodyHold) (*http.Request, bool) {
	ctx := req.Context()
	if small, n, ok := stashArguments(body); ok {
		context.AfterFunc(req.Context(), func() { stashed.Delete(n) })
		body = small
	} else {
		// For the session layer's fast path, which takes the request from
		// these bytes rather than through the SDK (httpfast.go).
		ctx = context.WithValue(ctx, readBodyKey{}, &bodyRead{body: body, id: b.id, idKnown: b.whole})
		if !b.hold(int64(len(body)) * (sdkBodyFactor - 1)) {
			return nil, false
		}
	}
	var r *http.Request
	if len(req.Header["Content-Length"]) == 1 && int64(len(body)) == req.ContentLength {
		r = req.WithContext(ctx) // its header says the length (net/http read it into ContentLength): shared
	} else {
		r = req.Clone(ctx)
		r.Header.Set("Content-Length", strconv.Itoa(len(body)))
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	return r, true
}

// connectionClose is the value of the Connection header of an answer after
// which the connection closes, shared: a header set from it allocates
// nothing.
var connectionClose = []string{"close"}

// readBodyKey is the context key of the body the bounds layer read, when
// its arguments were not stashed: the session layer's fast path takes the
// request from it (httpfast.go).
type readBodyKey struct{}

// bodyRead is the value of readBodyKey: the body, and its request's id
// when the bounds layer found it (or found there is none) in the whole
// body, so that the fast path need not look again.
type bodyRead struct {
	body    []byte
	id      *jsonrpc.ID // nil: none
	idKnown bool        // id is wire.HeadID(body)
}

// stashArguments returns body with the arguments of its tools/call replaced
// by a stand-in whose number is n, when body is a single tools/call whose
// arguments are an object of stashMin bytes or more; ok is false otherwise
// (a batch, another method, invalid JSON, nesting the SDK refuses: the SDK
// has the body whole, and says what is wrong with it). Of duplicate keys
// the last counts, as for the SDK's decoder.
func stashArguments(body []byte) (small []byte, n uint64, ok bool) {
	if len(body) < stashMin || jsontext.Valid(body) != nil || jsontext.Depth(body) > wire.MaxDepth {
		return nil, 0, false
	}
	method, ok := jsontext.Member(body, "method")
	if !ok || method[0] != '"' || !jsontext.KeyEquals(method, "tools/call") {
		return nil, 0, false
	}
	params, ok := jsontext.Member(body, "params")
	if !ok {
		return nil, 0, false
	}
	args, ok := jsontext.Member(params, "arguments")
	if !ok || args[0] != '{' || len(args) < stashMin {
		return nil, 0, false
	}
	for {
		var b [8]byte
		rand.Read(b[:]) // never fails (crypto/rand)
		n = binary.LittleEndian.Uint64(b[:])
		if _, taken := stashed.LoadOrStore(n, args); !taken {
			break
		}
	}
	at := offsetIn(body, args)
	small = make([]byte, 0, len(body)-len(args)+len(argsMark)+24)
	small = append(small, body[:at]...)
	small = append(small, argsMark...)
	small = strconv.AppendUint(small, n, 10)
	small = append(small, `"}`...)
	return append(small, body[at+len(args):]...), n, true
}

// restoreArguments is the receiving middleware that puts the arguments of a
// tools/call back in place of their stand-in. A stand-in whose arguments
// are gone (its HTTP request ended before the call started) fails the call.
func restoreArguments(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		call, ok := req.(*mcp.CallToolRequest)
		if method != "tools/call" || !ok || call.Params == nil || !bytes.HasPrefix(call.Params.Arguments, []byte(argsMark)) {
			return next(ctx, method, req)
		}
		rest := bytes.TrimSuffix(call.Params.Arguments[len(argsMark):], []byte(`"}`))
		n, err := strconv.ParseUint(string(rest), 10, 64)
		args, found := stashed.Load(n)
		if err != nil || !found {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "mcpproxy: the arguments of this call are gone: its HTTP request ended before the call started"}
		}
		call.Params.Arguments = args.([]byte)
		return next(ctx, method, req)
	}
}
