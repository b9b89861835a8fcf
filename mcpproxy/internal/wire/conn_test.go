package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/agentvalues/values/internal/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// readAllMessages reads c until it ends and returns the messages and the
// error that ended it.
func readAllMessages(c *Conn) ([]jsonrpc.Message, error) {
	var msgs []jsonrpc.Message
	for {
		msg, err := c.Read(context.Background())
		if err != nil {
			return msgs, err
		}
		msgs = append(msgs, msg)
	}
}

// checkReplies checks that every line c wrote is a JSON-RPC 2.0 error
// response and returns them.
func checkReplies(t *testing.T, out []byte) []map[string]json.RawMessage {
	t.Helper()
	var replies []map[string]json.RawMessage
	for l := range bytes.Lines(out) {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("wrote %q: %v", l, err)
		}
		if string(m["jsonrpc"]) != `"2.0"` || m["error"] == nil || m["id"] == nil {
			t.Fatalf("wrote %s: not a JSON-RPC error response", l)
		}
		replies = append(replies, m)
	}
	return replies
}

// ping is a valid request sent after garbage in the tests.
const ping = `{"jsonrpc":"2.0","id":"after","method":"ping"}`

// FuzzLineConn checks the proxy's JSON-RPC input path on the side facing
// the client: whatever lines come first, reading never fails before the
// end of the input, every reply written is a JSON-RPC error response, and a
// valid request after the garbage is delivered.
func FuzzLineConn(f *testing.F) {
	for _, seed := range []string{
		"hello", "", "\ufeff", "[]", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"jsonrpc":"1.0","id":1,"method":"ping"}`, `{"jsonrpc":"2.0","id":{},"method":"x"}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping"}{"jsonrpc":"2.0","id":2,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":` + strings.Repeat("[", 1100) + strings.Repeat("]", 1100) + `}`,
		`{"jsonrpc":"2.0","method":7}`, `{"jsonrpc":"2.0","id":1,"result":{}}`, `{"jsonrpc":"2.0","id":1,"error":5}`,
		"\x00\xff\xfe", `{"jsonrpc":"2.0","id":1e400,"method":"ping"}`, "  \r", `{"id":"x","jsonrpc":"2.0"}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":"` + strings.Repeat("x", 300) + `"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, garbage []byte) {
		in := append(bytes.Clone(garbage), '\n')
		in = append(in, ping+"\n"...)
		var out bytes.Buffer
		c := NewConn(bytes.NewReader(in), &out, nil, 256, true, io.Discard)
		// Take is told params are valid only when jsontext finds them so,
		// and takes every request but a ping, each in the memory of the
		// last one taken (Conn.taken): the ping after them is intact.
		c.SetHooks(Hooks{Take: func(req *jsonrpc.Request, valid bool) bool {
			if valid && req.Params != nil && jsontext.Valid(req.Params) != nil {
				t.Errorf("Take was told params %q are valid", req.Params)
			}
			return req.Method != "ping"
		}})
		msgs, err := readAllMessages(c)
		if !errors.Is(err, io.EOF) {
			t.Fatalf("reading stopped with %v, want io.EOF at the end", err)
		}
		checkReplies(t, out.Bytes())
		if len(msgs) == 0 {
			t.Fatalf("the request after %q was not delivered", garbage)
		}
		last, ok := msgs[len(msgs)-1].(*jsonrpc.Request)
		if !ok || last.Method != "ping" || last.ID.Raw() != "after" {
			t.Fatalf("last message %#v, want the ping after %q", msgs[len(msgs)-1], garbage)
		}
	})
}

// FuzzLineConnClient checks the side facing the server: whatever lines
// come before it, the response to a pending call is delivered, and reading
// never fails before the end of the input.
func FuzzLineConnClient(f *testing.F) {
	for _, seed := range []string{
		"Server listening on port 3000", `{"jsonrpc":"2.0","id":9,"result":{}}`,
		`{"jsonrpc":"2.0","id":"c","result":` + strings.Repeat("[", 1100) + strings.Repeat("]", 1100) + `}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info"}}`, "\ufeff{}", "[1]",
		"{\"jsonrpc\":\"2.0\",\"id\":\"c\",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"\xff\xe2\x82\\ud800\"}]}}",
		"\xff\xfe{\"jsonrpc\":\"2.0\"}", "{\"jsonrpc\":\"2.0\",\"id\":\"c\",\"result\":{\"\xc0\":1},\"x\":\"\xed\xa0\x80\"}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, garbage []byte) {
		in := append(bytes.Clone(garbage), '\n')
		in = append(in, `{"jsonrpc":"2.0","id":"c","result":{"ok":true}}`+"\n"...)
		c := NewConn(bytes.NewReader(in), io.Discard, nil, 256, false, io.Discard)
		c.hooks.Fix = func(_ string, _ any, result json.RawMessage, line ResultLine) (json.RawMessage, *jsonrpc.Error) {
			if line.Valid && jsontext.Valid(result) != nil {
				t.Errorf("Fix was told result %q is valid", result)
			}
			return result, nil
		}
		id, _ := jsonrpc.MakeID("c")
		c.calls.Add(id, Pending{Method: "tools/call", ID: id})
		msgs, err := readAllMessages(c)
		if !errors.Is(err, io.EOF) {
			t.Fatalf("reading stopped with %v, want io.EOF at the end", err)
		}
		var answered bool
		for _, m := range msgs {
			if r, ok := m.(*jsonrpc.Response); ok && r.ID.Raw() == "c" {
				answered = true
			}
		}
		if !answered {
			t.Fatalf("the pending call got no response after %q", garbage)
		}
	})
}

func TestFindID(t *testing.T) {
	for _, tc := range []struct {
		name, head, tail string
		want             any // nil: not found
	}{
		{"first", `{"jsonrpc":"2.0","id":7,"result":{"content":[{"text":"xxx`, `xxx"}]}}`, int64(7)},
		{"last", `{"result":{"content":[{"text":"xxx`, `xxx"}]},"jsonrpc":"2.0","id":8}`, int64(8)},
		{"last string", `{"result":"xx`, `xx","id":"a\"b"}` + "\n", `a"b`},
		{"last, spaced", `{"result":"xx`, `xx" , "id" : 9 } `, int64(9)},
		{"nested id is not it", `{"result":{"x":"xx`, `xx","id":5}}`, nil},
		{"id inside a string", `{"result":"xx`, `xx\",\"id\":5}"}`, nil},
		{"object id", `{"result":"xx`, `xx","id":{"a":1}}`, nil},
		{"none", `{"result":"xx`, `xx"}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, ok := FindID([]byte(tc.head), []byte(tc.tail))
			if tc.want == nil {
				if ok {
					t.Errorf("found %v, want none", id.Raw())
				}
				return
			}
			if !ok || id.Raw() != tc.want {
				t.Errorf("found %v (%v), want %v", id.Raw(), ok, tc.want)
			}
		})
	}
}

// TestLineConnTooLarge checks that a line over the bound is read through
// without being held, and answered with its id.
func TestLineConnTooLarge(t *testing.T) {
	big := `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"s":"` + strings.Repeat("x", 1<<20) + `"}}`
	var out bytes.Buffer
	c := NewConn(strings.NewReader(big+"\n"+ping+"\n"), &out, nil, 64<<10, true, io.Discard)
	msgs, err := readAllMessages(c)
	if !errors.Is(err, io.EOF) || len(msgs) != 1 {
		t.Fatalf("got %d messages, %v; want the ping and EOF", len(msgs), err)
	}
	replies := checkReplies(t, out.Bytes())
	if len(replies) != 1 || string(replies[0]["id"]) != "4" || !strings.Contains(string(replies[0]["error"]), "over the limit of 65536") {
		t.Errorf("replies: %v", replies)
	}
}

// TestReadLineLong reads lines around the size at which readLine reads
// into blocks, whole and past a bound: a line within the bound comes back
// byte for byte, one past it as its head and tail. The stream is read in
// pieces of several sizes, and with its end reported with the last bytes,
// so that long lines end in the middle of a read, with the next line's
// bytes and the end of the stream in the same read.
func TestReadLineLong(t *testing.T) {
	sizes := []int{0, 1, IDWindow, lineBlock - 1, lineBlock, lineBlock + 1, 3*lineBlock + 12345, 5, 2*lineBlock + 7, 0, IDWindow}
	var in bytes.Buffer
	var lines [][]byte
	for i, n := range sizes {
		l := make([]byte, n)
		for j := range l {
			l[j] = byte('a' + (i*7+j*13)%26)
		}
		lines = append(lines, l)
		in.Write(l)
		in.WriteByte('\n')
	}
	stream := in.Bytes()
	readers := map[string]func() io.Reader{
		"whole":      func() io.Reader { return bytes.NewReader(stream) },
		"halves":     func() io.Reader { return iotest.HalfReader(bytes.NewReader(stream)) },
		"end with":   func() io.Reader { return iotest.DataErrReader(bytes.NewReader(stream)) },
		"odd pieces": func() io.Reader { return &pieceReader{b: stream, n: 77777} },
	}
	for name, reader := range readers {
		for _, server := range []bool{true, false} { // the client side maps long lines on Linux
			for _, bound := range []int{-1, lineBlock + 1, 2 * lineBlock} {
				readLines(t, name, NewConn(reader(), io.Discard, nil, bound, server, nil), lines, server, bound)
			}
		}
	}
}

// pieceReader reads b n bytes at a time.
type pieceReader struct {
	b []byte
	n int
}

func (r *pieceReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.n)], r.b)
	r.b = r.b[n:]
	return n, nil
}

// readLines reads lines from c, each whole or, past bound, as its head
// and tail, and then the end of the stream.
func readLines(t *testing.T, reader string, c *Conn, lines [][]byte, server bool, bound int) {
	t.Helper()
	for _, want := range lines {
		ln, err := c.readLine()
		if err != nil {
			t.Fatalf("%s, bound %d: line of %d: %v", reader, bound, len(want), err)
		}
		if ln.size != len(want) {
			t.Errorf("%s, bound %d: size %d, want %d", reader, bound, ln.size, len(want))
		}
		if mapped := ln.free != nil; mapped != (!server && len(want) > lineBlock && runtime.GOOS == "linux" && !ln.over) {
			t.Errorf("%s, server %v, bound %d: line of %d mapped: %v", reader, server, bound, len(want), mapped)
		}
		if bound < 0 || len(want) <= bound {
			if ln.over || !bytes.Equal(ln.data, want) {
				t.Errorf("%s, bound %d: line of %d read as %d bytes (over %v)", reader, bound, len(want), len(ln.data), ln.over)
			}
			if ln.free != nil {
				ln.free()
			}
			continue
		}
		if !ln.over || !bytes.Equal(ln.head, want[:IDWindow]) || !bytes.Equal(ln.tail, want[len(want)-IDWindow:]) {
			t.Errorf("%s, bound %d: line of %d past it: over %v, head and tail not the line's", reader, bound, len(want), ln.over)
		}
	}
	if _, err := c.readLine(); err != io.EOF {
		t.Errorf("%s, bound %d: after the last line: %v", reader, bound, err)
	}
}

// TestDetach: a message taken from a line that is then freed holds none of
// its bytes.
func TestDetach(t *testing.T) {
	line := []byte(`{"jsonrpc":"2.0","id":1,"result":{"a":1},"params":[2],"data":3}`)
	in := func(s string) json.RawMessage { i := bytes.Index(line, []byte(s)); return line[i : i+len(s)] }
	outside := json.RawMessage(`{"b":2}`)
	for _, msg := range []jsonrpc.Message{
		&jsonrpc.Request{Method: "m", Params: in(`[2]`)},
		&jsonrpc.Response{Result: in(`{"a":1}`)},
		&jsonrpc.Response{Error: &jsonrpc.Error{Code: 1, Message: "x", Data: in(`3`)}},
		&jsonrpc.Response{Result: outside},
		nil,
	} {
		detach(msg, line)
		var raw []json.RawMessage
		switch m := msg.(type) {
		case *jsonrpc.Request:
			raw = append(raw, m.Params)
		case *jsonrpc.Response:
			raw = append(raw, m.Result)
			if werr, ok := m.Error.(*jsonrpc.Error); ok {
				raw = append(raw, werr.Data)
			}
		}
		for _, r := range raw {
			if len(r) > 0 && &r[0] != &outside[0] && &copyIfIn(r, line)[0] != &r[0] {
				t.Errorf("%T still holds %s of the line", msg, r)
			}
		}
	}
	if got := detach(&jsonrpc.Response{Result: outside}, line).(*jsonrpc.Response).Result; &got[0] != &outside[0] {
		t.Error("a result outside the line was copied")
	}
}

// TestIDOf: a number id is read as the SDK decodes it (a float64, made an
// integer), whether it is read digit by digit (up to 15 digits) or parsed.
func TestIDOf(t *testing.T) {
	for _, v := range []string{"0", "7", "4964", "123456789012345", "1234567890123456", "9007199254740992", "-3", "8.0", "1e3", `"7"`} {
		want, err := jsonrpc.DecodeMessage([]byte(`{"jsonrpc":"2.0","id":` + v + `,"method":"ping"}`))
		if err != nil {
			t.Fatal(err)
		}
		id, ok := idOf([]byte(v))
		if !ok || id != want.(*jsonrpc.Request).ID {
			t.Errorf("idOf(%s) = %v %v, want %v", v, id.Raw(), ok, want.(*jsonrpc.Request).ID.Raw())
		}
	}
	for _, v := range []string{"8.5", "9007199254740994", "1e17", "true"} {
		if id, ok := idOf([]byte(v)); ok {
			t.Errorf("idOf(%s) = %v, want none", v, id.Raw())
		}
	}
}

// TestPlainEnvelopeAllocs: the envelope of a line below outlineMin, every
// small request and response, is read without allocating (jsontext.Members,
// not Scan, which allocates its records).
func TestPlainEnvelopeAllocs(t *testing.T) {
	for _, line := range []string{ping, `{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"{\"ok\":true}"}]}}`} {
		data := []byte(line)
		if a := testing.AllocsPerRun(100, func() {
			if _, ok := plainEnvelope(data, Outline{}); !ok {
				t.Fatalf("%s: not plain", line)
			}
		}); a != 0 {
			t.Errorf("%s: %v allocations, want 0", line, a)
		}
	}
}

// FuzzPlainEnvelope checks the proxy's own reading of plain messages
// against the SDK's decoding: whatever message fromEnvelope makes, the SDK
// decodes the same line to the same message (kind, id, method, params or
// result); and a line the SDK cannot decode is never taken.
func FuzzPlainEnvelope(f *testing.F) {
	for _, seed := range []string{
		ping, `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":[1,"$r1"]}}}`,
		`{"id":-2.5e1,"params":[],"method":"","jsonrpc":"2.0"}`, `{"jsonrpc":"2.0","id":"c","result":{"content":[]}}`,
		`{"jsonrpc":"2.0","id":"c","result":{},"result":1}`, `{"jsonrpc":"2.0","Method":"ping","id":1}`,
		`{"jsonrpc":"2.0","id":1,"method":"p\u0069ng"}`, `{"jsonrpc":"2.0","id":null,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1e400,"method":"ping"}`, `{"jsonrpc":"2.0","id":"c","error":{"code":1,"message":"x"}}`,
		`{"jsonrpc":"2.0","id":7,"method":"x","params":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		env, ok := plainEnvelope(data, Outline{})
		if !ok {
			return
		}
		c := NewConn(bytes.NewReader(nil), io.Discard, nil, -1, false, io.Discard)
		if env.id != nil {
			if id, ok := idOf(env.id); ok {
				c.calls.Add(id, Pending{Method: "ping", ID: id}) // no fix: the result stays as sent
			}
		}
		msg := c.fromEnvelope(env)
		if msg == nil {
			return
		}
		want, err := jsonrpc.DecodeMessage(data)
		if err != nil {
			t.Fatalf("took %q, which the SDK does not decode: %v", data, err)
		}
		switch m := msg.(type) {
		case *jsonrpc.Request:
			w, ok := want.(*jsonrpc.Request)
			if !ok || w.ID != m.ID || w.Method != m.Method || !sameRaw(w.Params, m.Params) {
				t.Fatalf("%q: read %#v, the SDK %#v", data, m, want)
			}
		case *jsonrpc.Response:
			w, ok := want.(*jsonrpc.Response)
			if !ok || w.ID != m.ID || w.Error != nil || !sameRaw(w.Result, m.Result) {
				t.Fatalf("%q: read %#v, the SDK %#v", data, m, want)
			}
		}
	})
}

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// sameRaw reports whether two raw JSON values are the same JSON text, as
// compacted (absent counts as empty).
func sameRaw(a, b json.RawMessage) bool {
	var ca, cb bytes.Buffer
	if len(a) > 0 && json.Compact(&ca, a) != nil || len(b) > 0 && json.Compact(&cb, b) != nil {
		return false
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}

// TestStrayResponseID: a response whose id is a call's number written as
// a string ("1" for 1), or with a fraction (1.5), names no call (JSON-RPC
// matches ids by type and value): it is logged and dropped, and the call's
// own response, written after it in the same write, is delivered. A late
// response to a call that was cancelled is dropped without a line.
func TestStrayResponseID(t *testing.T) {
	for _, stray := range []string{`"1"`, `1.5`, `"1.0"`, `"sdk-1"`} {
		t.Run(stray, func(t *testing.T) {
			sr, sw := io.Pipe()
			var log syncBuffer
			c := NewConn(sr, io.Discard, nil, -1, false, &log)
			defer c.Close()
			ctx := context.Background()
			for i := 1; i <= 2; i++ {
				id, _ := jsonrpc.MakeID(fmt.Sprintf("sdk-%d", i))
				if err := c.Write(ctx, &jsonrpc.Request{ID: id, Method: "tools/call"}); err != nil {
					t.Fatal(err)
				}
			}
			// Call 2 (on the wire) is cancelled: its response is no one's.
			cancel, _ := jsonrpc.MakeID("sdk-2")
			params, _ := json.Marshal(map[string]any{"requestId": cancel.Raw()})
			if err := c.Write(ctx, &jsonrpc.Request{Method: "notifications/cancelled", Params: params}); err != nil {
				t.Fatal(err)
			}
			go io.WriteString(sw, `{"jsonrpc":"2.0","id":`+stray+`,"result":{"content":[]}}`+"\n"+
				`{"jsonrpc":"2.0","id":`+stray+`,"error":{"code":1,"message":"stray"}}`+"\n"+
				`{"jsonrpc":"2.0","id":2,"result":{"late":true}}`+"\n"+
				`{"jsonrpc":"2.0","id":1,"result":{"own":true}}`+"\n")
			msg, err := c.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			resp, ok := msg.(*jsonrpc.Response)
			if want, _ := jsonrpc.MakeID("sdk-1"); !ok || resp.ID != want || string(resp.Result) != `{"own":true}` || resp.Error != nil {
				t.Fatalf("delivered %#v, want call 1's own response", msg)
			}
			want := "ignored a response from the downstream server: its id " + strconv.Quote(stray) + " names no call in flight"
			if got := strings.Count(log.String(), want); got != 2 {
				t.Errorf("log holds %q %d times, want 2 (the result and the error):\n%s", want, got, log.String())
			}
			if strings.Contains(log.String(), `"2"`) {
				t.Errorf("the late response to the cancelled call was logged:\n%s", log.String())
			}
		})
	}
}

// TestLargeResponseDoesNotHoldOthers: while a large response is being
// taken (its result stored, here held by fix), the response to another
// call is delivered; a read loop that took the large one before reading on
// would hold it until the first was done.
func TestLargeResponseDoesNotHoldOthers(t *testing.T) {
	sr, sw := io.Pipe()
	c := NewConn(sr, io.Discard, nil, -1, false, nil)
	defer c.Close()
	started, release := make(chan struct{}), make(chan struct{})
	c.hooks.Fix = func(method string, _ any, result json.RawMessage, _ ResultLine) (json.RawMessage, *jsonrpc.Error) {
		if len(result) > rawEnvelopeMin {
			close(started)
			<-release
		}
		return result, nil
	}
	ctx := context.Background()
	id1, _ := jsonrpc.MakeID(float64(1)) // as the SDK decodes a numeric id
	id2, _ := jsonrpc.MakeID(float64(2))
	for _, id := range []jsonrpc.ID{id1, id2} {
		if err := c.Write(ctx, &jsonrpc.Request{ID: id, Method: "tools/call"}); err != nil {
			t.Fatal(err)
		}
	}
	go func() {
		big := `{"content":[{"type":"text","text":"` + strings.Repeat("x", 2*rawEnvelopeMin) + `"}]}`
		fmt.Fprintf(sw, `{"jsonrpc":"2.0","id":1,"result":%s}`+"\n", big)
		fmt.Fprintf(sw, `{"jsonrpc":"2.0","id":2,"result":{"content":[]}}`+"\n")
	}()
	first := make(chan jsonrpc.Message)
	go func() {
		msg, _ := c.Read(ctx)
		first <- msg
	}()
	<-started
	select {
	case msg := <-first:
		if msg.(*jsonrpc.Response).ID != id2 {
			t.Fatalf("first delivered: %v, want the response to call 2", msg)
		}
	case <-time.After(time.Minute): // a bound on a hang, not a timing
		t.Fatal("the response to call 2 is held behind the large one")
	}
	close(release)
	msg, err := c.Read(ctx)
	if err != nil || msg.(*jsonrpc.Response).ID != id1 {
		t.Fatalf("second delivered: %v %v, want the response to call 1", msg, err)
	}
}

// TestSalvageDeepResult: a response too deep for the SDK to decode is
// rebuilt from its parts when fix makes its result shallow enough (as
// storing a deep structured content does), and otherwise ends its call
// with an error that says how deep the message is; the depth is read from
// the fixed result, which is what the SDK would be given.
func TestSalvageDeepResult(t *testing.T) {
	sr, sw := io.Pipe()
	c := NewConn(sr, io.Discard, nil, -1, false, nil)
	defer c.Close()
	c.hooks.Fix = func(_ string, _ any, result json.RawMessage, _ ResultLine) (json.RawMessage, *jsonrpc.Error) {
		if bytes.Contains(result, []byte(`"store"`)) {
			return json.RawMessage(`{"content":[]}`), nil
		}
		return result, nil
	}
	ctx := context.Background()
	id1, _ := jsonrpc.MakeID(float64(1))
	id2, _ := jsonrpc.MakeID(float64(2))
	for _, id := range []jsonrpc.ID{id1, id2} {
		if err := c.Write(ctx, &jsonrpc.Request{ID: id, Method: "tools/call"}); err != nil {
			t.Fatal(err)
		}
	}
	deep := strings.Repeat("[", 1100) + strings.Repeat("]", 1100)
	go func() {
		fmt.Fprintf(sw, `{"jsonrpc":"2.0","id":1,"result":{"store":1,"structuredContent":%s}}`+"\n", deep)
		fmt.Fprintf(sw, `{"jsonrpc":"2.0","id":2,"result":{"structuredContent":%s}}`+"\n", deep)
	}()
	msg, err := c.Read(ctx)
	if resp, ok := msg.(*jsonrpc.Response); err != nil || !ok || resp.ID != id1 || resp.Error != nil || string(resp.Result) != `{"content":[]}` {
		t.Fatalf("first: %#v %v, want call 1's fixed result", msg, err)
	}
	msg, err = c.Read(ctx)
	resp, ok := msg.(*jsonrpc.Response)
	if err != nil || !ok || resp.ID != id2 || resp.Error == nil {
		t.Fatalf("second: %#v %v, want call 2 ended with an error", msg, err)
	}
	if want := "the message nests 1102 levels deep; at most 1000 can be decoded"; !strings.Contains(resp.Error.Error(), want) {
		t.Errorf("error %q, want it to say %q", resp.Error, want)
	}
}

// TestResultLineValid: Fix is told that a result is valid as jsontext reads
// JSON when the line's own scan read it (a plain envelope), and not when
// the SDK's decoding did (here, a response with a null error member, which
// the scan leaves to the SDK), so that a hook that relies on it never skips
// the check for a result the scan did not make.
func TestResultLineValid(t *testing.T) {
	sr, sw := io.Pipe()
	c := NewConn(sr, io.Discard, nil, -1, false, nil)
	defer c.Close()
	valid := map[string]bool{}
	c.hooks.Fix = func(_ string, tag any, result json.RawMessage, line ResultLine) (json.RawMessage, *jsonrpc.Error) {
		valid[tag.(string)] = line.Valid
		return result, nil
	}
	ctx := context.Background()
	for i, tag := range []string{"plain", "sdk"} {
		id, _ := jsonrpc.MakeID(float64(i + 1))
		if err := c.Write(WithTag(ctx, tag), &jsonrpc.Request{ID: id, Method: "tools/call"}); err != nil {
			t.Fatal(err)
		}
	}
	go func() {
		fmt.Fprintf(sw, `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`+"\n")
		fmt.Fprintf(sw, `{"jsonrpc":"2.0","id":2,"error":null,"result":{"content":[]}}`+"\n")
	}()
	for range 2 {
		if msg, err := c.Read(ctx); err != nil || msg.(*jsonrpc.Response).Error != nil {
			t.Fatalf("read %#v, %v", msg, err)
		}
	}
	if want := map[string]bool{"plain": true, "sdk": false}; !maps.Equal(valid, want) {
		t.Errorf("Fix was told Valid %v, want %v", valid, want)
	}
}

// TestTakenRequestReused: a request the Take hook took lends its memory to
// the next one the read loop reads, and a request delivered to the SDK
// keeps it: the requests read after it do not change it.
func TestTakenRequestReused(t *testing.T) {
	cr, cw := io.Pipe()
	c := NewConn(cr, io.Discard, nil, -1, true, nil)
	defer c.Close()
	var taken []*jsonrpc.Request
	var params []string
	c.SetHooks(Hooks{Take: func(req *jsonrpc.Request, _ bool) bool {
		if req.Method != "take" {
			return false
		}
		taken = append(taken, req)
		params = append(params, string(req.Params))
		return true
	}})
	go func() {
		for _, l := range []string{
			`{"jsonrpc":"2.0","id":1,"method":"take","params":{"n":1}}`,
			`{"jsonrpc":"2.0","id":2,"method":"take","params":{"n":2}}`,
			`{"jsonrpc":"2.0","id":3,"method":"sdk","params":{"n":3}}`,
			`{"jsonrpc":"2.0","id":4,"method":"take","params":{"n":4}}`,
			`{"jsonrpc":"2.0","id":5,"method":"sdk","params":{"n":5}}`,
		} {
			fmt.Fprintln(cw, l)
		}
	}()
	ctx := context.Background()
	first, err := c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(ctx); err != nil {
		t.Fatal(err)
	}
	req := first.(*jsonrpc.Request)
	if want, _ := jsonrpc.MakeID(float64(3)); req.ID != want || req.Method != "sdk" || string(req.Params) != `{"n":3}` {
		t.Errorf("the first request delivered became %v %s %s after another was read", req.ID, req.Method, req.Params)
	}
	if want := []string{`{"n":1}`, `{"n":2}`, `{"n":4}`}; !slices.Equal(params, want) {
		t.Errorf("Take saw params %q, want %q", params, want)
	}
	// The third request, delivered, was made in the memory of the second,
	// taken; the fourth, taken, not in the delivered one's.
	if len(taken) != 3 || taken[0] != taken[1] || taken[1] != req || taken[2] == req {
		t.Errorf("taken requests %p %p %p, delivered %p: want the second and the delivered one in the first's memory, the last in new memory", taken[0], taken[1], taken[2], req)
	}
}
