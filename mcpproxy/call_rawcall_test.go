package mcpproxy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	values "github.com/agentvalues/values"
	valuestore "github.com/agentvalues/values/store"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// scriptServer is a downstream MCP server written by hand, over r and w:
// its one tool, "result", answers each call by the case it names
// (arguments {"case": NAME}) with the line script[NAME], "%ID%" replaced by
// the call's id as it came, or, for a NAME in results, with a response
// whose result is results[NAME] as is. Two cases act instead: "hang" never
// answers, "die" closes the server's output. Every line it reads goes to
// got.
type scriptServer struct {
	script  map[string]string
	results map[string]string
	v2      bool // answers server/discover, for protocol 2026-07-28
	mu      sync.Mutex
	got     []string
	cancel  chan struct{} // receives when a notifications/cancelled arrives
	gone    chan struct{} // closed, if not nil, when serve returns
}

func (s *scriptServer) serve(r io.Reader, w io.WriteCloser) {
	if s.gone != nil {
		defer close(s.gone)
	}
	in := bufio.NewReader(r)
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return
		}
		s.mu.Lock()
		s.got = append(s.got, string(line))
		s.mu.Unlock()
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
				Arguments       struct {
					Case string `json:"case"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &msg) != nil {
			continue
		}
		if msg.Method == "notifications/cancelled" {
			select {
			case s.cancel <- struct{}{}:
			default:
			}
		}
		if msg.ID == nil {
			continue
		}
		answer := func(result string) {
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", msg.ID, result)
		}
		switch msg.Method {
		case "server/discover":
			if !s.v2 {
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`+"\n", msg.ID)
				continue
			}
			answer(`{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"script","version":"1"}},"supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true}}}`)
		case "initialize":
			answer(fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"script","version":"1"}}`, msg.Params.ProtocolVersion))
		case "tools/list":
			answer(`{"tools":[{"name":"result","inputSchema":{"type":"object","properties":{"case":{"type":"string"}},"required":["case"]}}]}`)
		case "tools/call":
			switch c := msg.Params.Arguments.Case; c {
			case "hang":
			case "die":
				w.Close()
				return
			default:
				if r, ok := s.results[c]; ok {
					answer(r)
				} else {
					io.WriteString(w, strings.ReplaceAll(s.script[c], "%ID%", string(msg.ID))+"\n")
				}
			}
		default:
			answer(`{}`)
		}
	}
}

// lines returns the lines the server read that hold sub.
func (s *scriptServer) lines(sub string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, l := range s.got {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return out
}

// A lineClient is an agent that speaks to a proxy's Run in lines.
type lineClient struct {
	w     io.WriteCloser
	lines chan string
	ran   chan struct{} // closed when Run has returned
}

// newLineClient returns a client of run, which serves the transport it is
// given in a goroutine of its own until it returns.
func newLineClient(run func(*LineTransport)) *lineClient {
	ur, cw := io.Pipe()
	cr, uw := io.Pipe()
	c := &lineClient{w: cw, lines: make(chan string, 64), ran: make(chan struct{})}
	go func() {
		in := bufio.NewReader(cr)
		for {
			l, err := in.ReadString('\n')
			if err != nil {
				return
			}
			c.lines <- strings.TrimSuffix(l, "\n")
		}
	}()
	go func() {
		defer close(c.ran)
		defer uw.Close()
		run(&LineTransport{Reader: ur, Writer: uw})
	}()
	return c
}

// within returns the next line the proxy writes within d, if any.
func (c *lineClient) within(d time.Duration) (string, bool) {
	select {
	case l := <-c.lines:
		return l, true
	case <-time.After(d):
		return "", false
	}
}

// send writes one line.
func (c *lineClient) send(t testing.TB, line string) {
	t.Helper()
	if _, err := io.WriteString(c.w, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

// next returns the next line the proxy writes.
func (c *lineClient) next(t testing.TB) string {
	t.Helper()
	select {
	case l := <-c.lines:
		return l
	case <-time.After(time.Minute):
		t.Fatal("no line from the proxy within a minute")
		return ""
	}
}

// initialize completes the MCP handshake.
func (c *lineClient) initialize(t testing.TB) {
	t.Helper()
	c.initializeAt(t, "2025-06-18")
}

// initializeAt completes the MCP handshake at protocol version, which must
// be before 2026-07-28.
func (c *lineClient) initializeAt(t testing.TB, version string) {
	t.Helper()
	c.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+version+`","capabilities":{},"clientInfo":{"name":"lines","version":"1"}}}`)
	if l := c.next(t); !strings.Contains(l, `"protocolVersion":"`+version+`"`) {
		t.Fatalf("initialize: %s", l)
	}
	c.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// v2Meta is the _meta a client at protocol 2026-07-28 sends with every
// request.
const v2Meta = `{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"lines","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`

// discover opens a session at protocol 2026-07-28.
func (c *lineClient) discover(t testing.TB) {
	t.Helper()
	c.send(t, `{"jsonrpc":"2.0","id":0,"method":"server/discover","params":{"_meta":`+v2Meta+`}}`)
	if l := c.next(t); !strings.Contains(l, `"supportedVersions"`) {
		t.Fatalf("server/discover: %s", l)
	}
}

// startLineProxy runs a proxy with Run over a LineTransport, in front of
// a scriptServer over the proxy's own line connection, with the raw path
// off when rawOff is set.
func startLineProxy(t testing.TB, script map[string]string, rawOff bool) (*Proxy, *lineClient, *scriptServer) {
	return startLineProxyAt(t, script, rawOff, false)
}

// startLineProxyAt is startLineProxy with the server (and the proxy's
// client of it) at protocol 2026-07-28 when v2 is set.
func startLineProxyAt(t testing.TB, script map[string]string, rawOff, v2 bool) (*Proxy, *lineClient, *scriptServer) {
	down := ""
	if v2 {
		down = protocolRaw
	}
	return startLineProxyDown(t, script, rawOff, down)
}

// startLineProxyDown is startLineProxy with the proxy asking the server
// for protocol version down (Options.ProtocolVersion); a server asked for
// 2026-07-28 or later answers server/discover.
func startLineProxyDown(t testing.TB, script map[string]string, rawOff bool, down string) (*Proxy, *lineClient, *scriptServer) {
	t.Helper()
	srv := &scriptServer{script: script, cancel: make(chan struct{}, 16), gone: make(chan struct{}), v2: down >= protocolRaw}
	sr, pw := io.Pipe()
	pr, sw := io.Pipe()
	go srv.serve(sr, sw)
	ctx, cancel := context.WithCancel(context.Background())
	p, err := Connect(ctx, lineDownstream{pr, pw}, &Options{Log: io.Discard, ProtocolVersion: down})
	if err != nil {
		t.Fatal(err)
	}
	p.rawOff = rawOff
	c := newLineClient(func(lt *LineTransport) { p.Run(ctx, lt) })
	t.Cleanup(func() {
		cancel()
		c.w.Close()
		<-c.ran
		sw.Close()
	})
	return p, c, srv
}

// callLine is the line of a tools/call of the script server's tool for
// the case name, with id 7.
func callLine(name string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"result","arguments":{"case":%q}}}`, name)
}

// scriptCases are downstream answers to a call, "%ID%" its id: results
// of every shape, errors, and frames the proxy must refuse.
func scriptCases() map[string]string {
	result := func(r string) string { return `{"jsonrpc":"2.0","id":%ID%,"result":` + r + `}` }
	text := func(s string) string { b, _ := json.Marshal(s); return `{"type":"text","text":` + string(b) + `}` }
	var big strings.Builder
	for i := range 900 {
		fmt.Fprintf(&big, "line %d: <tag> & \"quote\" ✓\n", i)
	}
	cases := map[string]string{
		"text":                result(`{"content":[` + text("hello <world> & \u2028 ✓") + `]}`),
		"json text":           result(`{"content":[` + text(`{"ok":true,"n":[1,2,3]}`) + `]}`),
		"two blocks":          result(`{"content":[` + text("first") + `,` + text(`{"a":1}`) + `]}`),
		"empty content":       result(`{"content":[]}`),
		"no content":          result(`{}`),
		"is error":            result(`{"content":[` + text("it failed") + `],"isError":true}`),
		"not error":           result(`{"isError":false,"content":[` + text("fine") + `]}`),
		"structured":          result(`{"content":[` + text(`{"b":2,"a":1}`) + `],"structuredContent":{"b":2,"a":1,"big":12345678901234567890}}`),
		"structured only":     result(`{"structuredContent":{"rows":[1,2]}}`),
		"structured mirror":   result(`{"content":[` + text("plain") + `],"structuredContent":{"text":"plain"}}`),
		"structured other":    result(`{"content":[` + text("a summary") + `],"structuredContent":[3,2,1]}`),
		"image":               result(`{"content":[` + text("a picture") + `,{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}]}`),
		"annotated":           result(`{"content":[{"type":"text","text":"x","annotations":{"priority":1},"_meta":{"k":1}}]}`),
		"meta":                result(`{"content":[` + text("m") + `],"_meta":{"z":1,"a":{"b":1.50},"io.modelcontextprotocol/related-task":{"id":"x"}}}`),
		"extra member":        result(`{"content":[` + text("x") + `],"resultType":"complete","other":1}`),
		"escapes":             result(`{"content":[{"type":"text","text":"lone \ud800 surrogate, nul \u0000, \u00e9\ud83d\ude00 \/ \"q\""}]}`),
		"big text":            result(`{"content":[` + text(big.String()) + `]}`),
		"big blocks":          result(`{"content":[` + text(big.String()) + `,` + text(big.String()) + `]}`),
		"duplicate content":   result(`{"content":[` + text("one") + `],"content":[` + text("two") + `]}`),
		"block type twice":    result(`{"content":[{"type":"text","type":"text","text":"x"}]}`),
		"block no text":       result(`{"content":[{"type":"text"}]}`),
		"block text number":   result(`{"content":[{"type":"text","text":5}]}`),
		"unknown block":       result(`{"content":[{"type":"hologram","text":"x"}]}`),
		"content not array":   result(`{"content":{"type":"text","text":"x"}}`),
		"is error string":     result(`{"content":[` + text("x") + `],"isError":"yes"}`),
		"not an object":       result(`[1,2,3]`),
		"string result":       result(`"done"`),
		"null result":         result(`null`),
		"deep":                result(`{"content":[` + text("deep") + `],"structuredContent":` + strings.Repeat(`{"a":`, 1100) + `1` + strings.Repeat(`}`, 1100) + `}`),
		"error":               `{"jsonrpc":"2.0","id":%ID%,"error":{"code":-32000,"message":"boom <b>"}}`,
		"error with data":     `{"jsonrpc":"2.0","id":%ID%,"error":{"code":-32602,"message":"bad","data":{"x":1}}}`,
		"long error":          `{"jsonrpc":"2.0","id":%ID%,"error":{"code":-1,"message":"` + strings.Repeat("detail ", 1000) + `"}}`,
		"result and error":    `{"jsonrpc":"2.0","id":%ID%,"result":{"content":[]},"error":{"code":1,"message":"both"}}`,
		"no result":           `{"jsonrpc":"2.0","id":%ID%}`,
		"bad version":         `{"jsonrpc":"1.0","id":%ID%,"result":{"content":[]}}` + "\n" + `{"jsonrpc":"2.0","id":%ID%,"result":{"content":[` + text("after") + `]}}`,
		"noise first":         "Server listening on port 3000\n" + result(`{"content":[`+text("after noise")+`]}`),
		"v2 result":           result(`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}},"content":[` + text("v2") + `],"resultType":"complete"}`),
		"input required":      result(`{"content":[],"resultType":"input_required","inputRequests":{"a":{"method":"roots/list"}},"requestState":"s"}`),
		"wrong id then right": `{"jsonrpc":"2.0","id":999,"result":{"content":[]}}` + "\n" + result(`{"content":[`+text("right")+`]}`),
		"not json":            `{"jsonrpc":"2.0","id":%ID%,"result":{"content":[{"type":"text","text":"a` + "\t" + `b"}]}}`,
		"not json, id last":   `{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"a` + "\t" + `b"}]},"id":%ID%}`,
		"invalid utf8":        result(`{"content":[{"type":"text","text":"` + badUTF8 + `"}],"structuredContent":{"s":"` + badUTF8 + `"}}`),
		"invalid utf8 big":    result(`{"content":[{"type":"text","text":"` + strings.Repeat(badUTF8, 200) + `"}]}`),
		"id a string":         `{"jsonrpc":"2.0","id":"%ID%","result":{"content":[` + text("stray") + `]}}` + "\n" + result(`{"content":[`+text("right")+`]}`),
		"id fractional":       `{"jsonrpc":"2.0","id":%ID%.5,"result":{"content":[` + text("stray") + `]}}` + "\n" + `{"jsonrpc":"2.0","id":%ID%.5,"error":{"code":1,"message":"stray"}}` + "\n" + result(`{"content":[`+text("right")+`]}`),
	}
	return cases
}

// outcome is what a call did: the response line the agent got, and the
// values stored, kind and bytes.
type outcome struct {
	Line   string
	Values []string
}

// runScript makes each call, each on a fresh proxy, and returns what each
// did; took counts the calls the raw path took. With v2, both sides are
// at protocol 2026-07-28, and each call carries the _meta it then carries.
func runScript(t *testing.T, rawOff, v2 bool, calls map[string]string) (out map[string]outcome, took map[string]bool) {
	out, took = map[string]outcome{}, map[string]bool{}
	for name, line := range calls {
		p, c, _ := startLineProxyAt(t, scriptCases(), rawOff, v2)
		if v2 {
			c.discover(t)
			line = strings.Replace(line, `"params":{`, `"params":{"_meta":`+v2Meta+`,`, 1)
		} else {
			c.initialize(t)
		}
		c.send(t, line)
		o := outcome{Line: c.next(t)}
		vals := p.Values()
		for i := 1; i <= vals.Len(); i++ {
			v, _ := vals.Get(fmt.Sprintf("r%d", i))
			o.Values = append(o.Values, v.Kind().String()+": "+string(v.Bytes()))
		}
		out[name], took[name] = o, p.rawN.Load() > 0
	}
	return out, took
}

// TestRawCallMatchesSDKPath: every downstream answer, through the raw path
// and through the SDK path, gives the agent the same response line, byte
// for byte, and stores the same values.
func TestRawCallMatchesSDKPath(t *testing.T) {
	calls := map[string]string{}
	for name := range scriptCases() {
		calls[name] = callLine(name)
	}
	calls["die"] = callLine("die")
	for _, v2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("v2=%v", v2), func(t *testing.T) {
			sdk, _ := runScript(t, true, v2, calls)
			raw, took := runScript(t, false, v2, calls)
			for name := range calls {
				if !took[name] {
					t.Errorf("%s: the raw path did not take the call", name)
				}
				if diff := cmp.Diff(sdk[name], raw[name]); diff != "" {
					t.Errorf("%s: raw path differs from SDK path (-sdk +raw):\n%s", name, diff)
				}
			}
			for name, want := range map[string]string{
				"die":               "disconnected during the call of result",
				"not json":          `result ran, but the proxy could not take its result: the downstream server's response is not valid JSON: \"invalid character '\\\\t' in string literal\"`,
				"not json, id last": "the downstream server's response is not valid JSON",
				"id a string":       `"text":"right"`,
				"id fractional":     `"text":"right"`,
			} {
				if !strings.Contains(raw[name].Line, want) {
					t.Errorf("%s: %s\nwant it to hold %s", name, raw[name].Line, want)
				}
			}
			for _, name := range []string{"invalid utf8", "invalid utf8 big"} {
				for _, v := range raw[name].Values {
					if !strings.HasPrefix(v, "text: a\uFFFDb") && !strings.HasPrefix(v, `object: {"s":"a`+"\uFFFD"+`b`) {
						t.Errorf("%s: stored %.100q, want the text with U+FFFD for each bad byte", name, v)
					}
				}
			}
			if v2 && !strings.Contains(raw["text"].Line, `"resultType":"complete"`) {
				t.Errorf("text at 2026-07-28: %s", raw["text"].Line)
			}
		})
	}
}

// protocolVersions are the versions the version tests pair: the two
// before 2026-07-28 that clients speak, and 2026-07-28.
var protocolVersions = []string{"2025-06-18", "2025-11-25", "2026-07-28"}

// TestRawCallVersions pairs clients and servers of every protocol version
// (the proxy asking the server for its own, Options.ProtocolVersion): the
// server is spoken to at the version asked, a request carries the
// per-request _meta of 2026-07-28 only to a server at it, the raw call
// route takes the call (but for a client at 2026-07-28 and a server
// before it, which the SDK route bridges: bridge.go), and both routes give
// the client the same line, at its own version.
func TestRawCallVersions(t *testing.T) {
	for _, client := range protocolVersions {
		for _, down := range protocolVersions {
			t.Run(client+"/"+down, func(t *testing.T) {
				lines := map[bool]string{}
				for _, rawOff := range []bool{true, false} {
					p, c, srv := startLineProxyDown(t, scriptCases(), rawOff, down)
					if got := p.current().down.InitializeResult().ProtocolVersion; got != down {
						t.Errorf("the server is spoken to at %s, want %s", got, down)
					}
					line := callLine("text")
					if client >= protocolRaw {
						c.discover(t)
						line = strings.Replace(line, `"params":{`, `"params":{"_meta":`+v2Meta+`,`, 1)
					} else {
						c.initializeAt(t, client)
					}
					c.send(t, line)
					lines[rawOff] = c.next(t)
					calls := srv.lines(`"tools/call"`)
					if len(calls) != 1 {
						t.Fatalf("the server read %d calls", len(calls))
					}
					if got, want := strings.Contains(calls[0], protocolMetaPrefix), down >= protocolRaw; got != want {
						t.Errorf("rawOff=%v: the call carries the protocol's _meta: %v, want %v: %s", rawOff, got, want, calls[0])
					}
					took, want := p.rawN.Load() > 0, !rawOff && !(client >= protocolRaw && down < protocolRaw)
					if took != want {
						t.Errorf("rawOff=%v: the raw call route took the call: %v, want %v", rawOff, took, want)
					}
				}
				if lines[true] != lines[false] {
					t.Errorf("the routes differ:\nSDK: %s\nraw: %s", lines[true], lines[false])
				}
				if got, want := strings.Contains(lines[false], `"resultType"`), client >= protocolRaw; got != want || !strings.Contains(lines[false], `"agentvalues/handle":"r1"`) {
					t.Errorf("the response (resultType as the client's version has it: %v): %s", want, lines[false])
				}
			})
		}
	}
}

// TestRawCallFallsBack: calls that are not nominal take the SDK path, and
// get what they got before the raw path.
func TestRawCallFallsBack(t *testing.T) {
	calls := map[string]string{
		"progress token":     `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"result","arguments":{"case":"text"},"_meta":{"progressToken":"p1"}}}`,
		"meta":               `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":{"k":1},"name":"result","arguments":{"case":"text"}}}`,
		"new protocol":       `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"result","arguments":{"case":"text"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		"unknown tool":       `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"nope","arguments":{}}}`,
		"read_value":         `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_value","arguments":{"ref":"r1"}}}`,
		"name not a string":  `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":5,"arguments":{}}}`,
		"arguments array":    `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"result","arguments":[1]}}`,
		"arguments string":   `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"result","arguments":"x"}}`,
		"name twice":         `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"result","name":"result","arguments":{"case":"text"}}}`,
		"params array":       `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":[1]}`,
		"no params":          `{"jsonrpc":"2.0","id":7,"method":"tools/call"}`,
		"notification":       `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"result","arguments":{"case":"text"}}}` + "\n" + `{"jsonrpc":"2.0","id":8,"method":"ping"}`,
		"object id":          `{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{"name":"result","arguments":{"case":"text"}}}`,
		"not json":           `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"result",`,
		"extra member":       `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"result","arguments":{"case":"text"},"task":{}}}`,
		"two messages":       callLine("text") + callLine("text"),
		"deep arguments":     `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"result","arguments":{"case":` + strings.Repeat("[", 1100) + strings.Repeat("]", 1100) + `}}}`,
		"method case":        `{"jsonrpc":"2.0","id":7,"method":"Tools/Call","params":{"name":"result","arguments":{"case":"text"}}}`,
		"missing case (bad)": `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"result","arguments":{}}}`,
	}
	for _, v2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("v2=%v", v2), func(t *testing.T) {
			sdk, _ := runScript(t, true, v2, calls)
			raw, took := runScript(t, false, v2, calls)
			for name := range calls {
				if took[name] != (name == "missing case (bad)") {
					t.Errorf("%s: raw path taken: %v", name, took[name])
				}
				if diff := cmp.Diff(sdk[name], raw[name]); diff != "" {
					t.Errorf("%s: raw path differs from SDK path (-sdk +raw):\n%s", name, diff)
				}
			}
		})
	}
}

// TestRawCallBeforeInitialize: a call before the session is initialized
// takes the SDK path, which refuses it.
func TestRawCallBeforeInitialize(t *testing.T) {
	for _, rawOff := range []bool{true, false} {
		p, c, _ := startLineProxy(t, scriptCases(), rawOff)
		c.send(t, callLine("text"))
		if l := c.next(t); !strings.Contains(l, `"error"`) || !strings.Contains(l, "invalid during session initialization") {
			t.Errorf("rawOff=%v: %s", rawOff, l)
		}
		// Answered the initialize, but not yet told initialized.
		c.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"lines","version":"1"}}}`)
		c.next(t)
		c.send(t, callLine("text"))
		if l := c.next(t); !strings.Contains(l, `"result"`) {
			t.Errorf("rawOff=%v: %s", rawOff, l)
		}
		if n := p.rawN.Load(); n != 0 {
			t.Errorf("rawOff=%v: the raw path took %d calls before notifications/initialized", rawOff, n)
		}
	}
}

// TestRawCallCancelled: a call the agent cancels is not answered, on
// either path (the specification: the receiver of a cancellation does not
// answer the request), the connection goes on, and the downstream server
// is sent a cancellation naming the call by the id it got; on the raw path
// with the agent's reason.
func TestRawCallCancelled(t *testing.T) {
	for _, rawOff := range []bool{true, false} {
		p, c, srv := startLineProxy(t, scriptCases(), rawOff)
		c.initialize(t)
		c.send(t, callLine("hang"))
		waitFor(t, func() bool { return len(srv.lines(`"hang"`)) == 1 })
		c.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user"}}`)
		select {
		case <-srv.cancel:
		case <-time.After(time.Minute):
			t.Fatalf("rawOff=%v: no cancellation reached the server", rawOff)
		}
		var call, cancel struct {
			ID     json.RawMessage `json:"id"`
			Params struct {
				RequestID json.RawMessage `json:"requestId"`
				Reason    string          `json:"reason"`
			} `json:"params"`
		}
		json.Unmarshal([]byte(srv.lines(`"hang"`)[0]), &call)
		json.Unmarshal([]byte(srv.lines(`notifications/cancelled`)[0]), &cancel)
		if string(call.ID) == "" || string(call.ID) != string(cancel.Params.RequestID) {
			t.Errorf("rawOff=%v: the call went as id %s, the cancellation names %s", rawOff, call.ID, cancel.Params.RequestID)
		}
		if !rawOff && cancel.Params.Reason != "user" {
			t.Errorf("raw path: the server was given the reason %q, want the agent's", cancel.Params.Reason)
		}
		if took := p.rawN.Load() > 0; took == rawOff {
			t.Errorf("rawOff=%v: raw path taken %v", rawOff, took)
		}
		// The connection goes on: a next call is answered, and a ping
		// after it, and nothing answers the cancelled call.
		c.send(t, strings.Replace(callLine("text"), `"id":7`, `"id":9`, 1))
		c.send(t, `{"jsonrpc":"2.0","id":10,"method":"ping"}`)
		for l := ""; l != `{"jsonrpc":"2.0","id":10,"result":{}}`; {
			l = c.next(t)
			if strings.Contains(l, `"id":7`) {
				t.Errorf("rawOff=%v: the cancelled call was answered: %s", rawOff, l)
			}
		}
	}
}

// TestRawCallProxyClosed: a raw call in flight when the proxy is closed
// gets the result that says the proxy shut down during it (not that the
// connection to the server broke), as on the SDK route.
func TestRawCallProxyClosed(t *testing.T) {
	p, c, srv := startLineProxy(t, scriptCases(), false)
	c.initialize(t)
	c.send(t, callLine("hang"))
	waitFor(t, func() bool { return len(srv.lines(`"hang"`)) == 1 })
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	l := c.next(t)
	var resp struct {
		ID     int                 `json:"id"`
		Result *mcp.CallToolResult `json:"result"`
	}
	if err := json.Unmarshal([]byte(l), &resp); err != nil || resp.ID != 7 || resp.Result == nil {
		t.Fatalf("the call in flight at Close got %s (%v)", l, err)
	}
	want := "the proxy shut down during the call of result; it may have partly run"
	if got := text(resp.Result); !resp.Result.IsError || got != want {
		t.Errorf("the call in flight at Close got %q (isError %v), want %q", got, resp.Result.IsError, want)
	}
	if n := p.rawN.Load(); n != 1 {
		t.Errorf("the raw path took %d calls, want 1", n)
	}
}

// TestRawCallClientGone: when the client's side of the connection ends
// (standard input closed) during a call, Run returns at once on both
// paths, having closed the downstream connection (a cancellation of the
// call may come first), and no response is written.
func TestRawCallClientGone(t *testing.T) {
	for _, rawOff := range []bool{true, false} {
		t.Run(fmt.Sprintf("rawOff=%v", rawOff), func(t *testing.T) {
			p, c, srv := startLineProxy(t, scriptCases(), rawOff)
			c.initialize(t)
			c.send(t, callLine("hang"))
			waitFor(t, func() bool { return len(srv.lines(`"hang"`)) == 1 })
			c.w.Close()
			select {
			case <-c.ran:
			case <-time.After(10 * time.Second):
				t.Fatal("Run still running 10 s after the client went away")
			}
			select {
			case <-srv.gone:
			case <-time.After(10 * time.Second):
				t.Error("the downstream connection is still open")
			}
			if l, ok := c.within(100 * time.Millisecond); ok {
				t.Errorf("a response was written after the client went away: %s", l)
			}
			if took := p.rawN.Load() > 0; took == rawOff {
				t.Errorf("raw path taken: %v", took)
			}
		})
	}
}

// TestRawCallDuplicateID: a call whose id is that of a call still in
// flight, on either path, is dropped, as the SDK alone drops it: the tool
// is not called again and the client gets one response for the id.
func TestRawCallDuplicateID(t *testing.T) {
	firsts := map[string]string{
		"raw first": callLine("hang"),
		"sdk first": `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"result","arguments":{"case":"hang"},"_meta":{"progressToken":"p"}}}`,
	}
	for name, first := range firsts {
		for _, rawOff := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/rawOff=%v", name, rawOff), func(t *testing.T) {
				p, c, srv := startLineProxy(t, scriptCases(), rawOff)
				c.initialize(t)
				c.send(t, first)
				waitFor(t, func() bool { return len(srv.lines(`"hang"`)) == 1 })
				c.send(t, callLine("text"))
				c.send(t, `{"jsonrpc":"2.0","id":8,"method":"ping"}`)
				if l := c.next(t); l != `{"jsonrpc":"2.0","id":8,"result":{}}` {
					t.Errorf("the line after the duplicate: %s, want the ping's response", l)
				}
				if n := len(srv.lines(`"text"`)); n != 0 {
					t.Errorf("the call whose id is in flight reached the server (%d times)", n)
				}
				want := int64(0)
				if name == "raw first" && !rawOff {
					want = 1
				}
				if n := p.rawN.Load(); n != want {
					t.Errorf("the raw path took %d calls, want %d", n, want)
				}
				// Once the first is over, its id is free again: cancelled,
				// it is not answered, and a ping of its id is dropped until
				// then.
				c.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`)
				for {
					c.send(t, `{"jsonrpc":"2.0","id":7,"method":"ping"}`)
					l, ok := c.within(50 * time.Millisecond)
					if !ok {
						continue
					}
					if l != `{"jsonrpc":"2.0","id":7,"result":{}}` {
						t.Fatalf("the line after the cancellation: %s, want a ping's response", l)
					}
					break
				}
				c.send(t, callLine("text"))
				for l := ""; !strings.Contains(l, "hello"); {
					if l = c.next(t); l != `{"jsonrpc":"2.0","id":7,"result":{}}` && !strings.Contains(l, "hello") {
						t.Fatalf("the id used again after its call ended: %s", l)
					}
				}
			})
		}
	}
}

// TestRawCallDownstreamRequest: the downstream server is sent the same
// request on both paths, whatever the session set up before the call; a
// progress token in the _meta every call repeats at 2026-07-28 takes the
// SDK path, which gives the server a token of the proxy's own.
func TestRawCallDownstreamRequest(t *testing.T) {
	discoverWith := func(extra string) string {
		return `{"jsonrpc":"2.0","id":51,"method":"server/discover","params":{"_meta":{` + extra + v2Meta[1:] + `}}`
	}
	callWith := func(extra string) string {
		return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":{` + extra + v2Meta[1:] + `,"name":"result","arguments":{"case":"text"}}}`
	}
	cases := []struct {
		name string
		v2   bool
		pre  []string
		call string
		raw  bool // taken by the raw path
	}{
		{"plain", false, nil, callLine("text"), true},
		{"after setLevel", false, []string{`{"jsonrpc":"2.0","id":50,"method":"logging/setLevel","params":{"level":"debug"}}`}, callLine("text"), true},
		{"v2 plain", true, nil, callWith(""), true},
		// Arguments past rawLight and rawJoinMax: checked off the
		// reading goroutine, and written in pieces.
		{"large arguments", false, nil, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"result","arguments":{"case":"text","pad":"` + strings.Repeat("x", rawJoinMax) + `"}}}`, true},
		{"v2 progress token in discover", true, []string{discoverWith(`"progressToken":"tok",`)}, callWith(`"progressToken":"tok",`), false},
		{"v2 progress token agentvalues-1", true, []string{discoverWith(`"progressToken":"agentvalues-1",`)}, callWith(`"progressToken":"agentvalues-1",`), false},
		{"v2 logLevel in discover", true, []string{discoverWith(`"io.modelcontextprotocol/logLevel":"debug",`)}, callWith(`"io.modelcontextprotocol/logLevel":"debug",`), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var sent, answer [2]string
			for i, rawOff := range []bool{true, false} {
				p, c, srv := startLineProxyAt(t, scriptCases(), rawOff, tc.v2)
				if tc.v2 {
					c.discover(t)
				} else {
					c.initialize(t)
				}
				for _, l := range tc.pre {
					c.send(t, l)
					c.next(t)
				}
				c.send(t, tc.call)
				answer[i] = c.next(t)
				if ls := srv.lines(`"tools/call"`); len(ls) == 1 {
					sent[i] = ls[0]
				} else {
					t.Errorf("rawOff=%v: the server was sent %d calls", rawOff, len(ls))
				}
				if took := p.rawN.Load() > 0; took != (tc.raw && !rawOff) {
					t.Errorf("rawOff=%v: raw path taken: %v", rawOff, took)
				}
			}
			if diff := cmp.Diff(sent[0], sent[1]); diff != "" {
				t.Errorf("the downstream request differs (-sdk +raw):\n%s", diff)
			}
			if diff := cmp.Diff(answer[0], answer[1]); diff != "" {
				t.Errorf("the response differs (-sdk +raw):\n%s", diff)
			}
		})
	}
}

// TestRawCallsConcurrent: calls in flight together on the raw path, some
// answered out of order, each get their own result.
func TestRawCallsConcurrent(t *testing.T) {
	p, c, _ := startLineProxy(t, scriptCases(), false)
	c.initialize(t)
	const n = 50
	names := []string{"text", "json text", "two blocks", "error", "structured", "image"}
	for i := range n {
		c.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"result","arguments":{"case":%q}}}`, 100+i, names[i%len(names)]))
	}
	got := map[int]string{}
	for range n {
		l := c.next(t)
		var resp struct {
			ID int `json:"id"`
		}
		json.Unmarshal([]byte(l), &resp)
		got[resp.ID] = l
	}
	for i := range n {
		l := got[100+i]
		want := map[string]string{"text": "hello", "json text": `\"ok\":true`, "two blocks": "first", "error": "boom", "structured": `"b":2`, "image": "a picture"}[names[i%len(names)]]
		if !strings.Contains(l, want) {
			t.Errorf("call %d (%s): %s", 100+i, names[i%len(names)], l)
		}
	}
	if p.rawN.Load() != n {
		t.Errorf("the raw path took %d of %d calls", p.rawN.Load(), n)
	}
	if v := p.Values().Len(); v < n {
		t.Errorf("%d values stored for %d calls", v, n)
	}
}

// TestStoresInline: a raw call's result is stored on the goroutine that
// read it (startRaw's inline) whenever the store does no I/O: the proxy's
// own store, and one in memory a caller passes (as agentvalues proxy
// does, to set its preview bound); never with a durable store.
func TestStoresInline(t *testing.T) {
	durable, err := values.Open(valuestore.NewMemory(), "s")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		opts Options
		want bool
	}{
		{"own", Options{}, true},
		{"given in memory", Options{Values: values.New(values.WithMaxPreview(1 << 10))}, true},
		{"given durable", Options{Values: durable}, false},
	} {
		if got := newStores(&c.opts).memoryOnly; got != c.want {
			t.Errorf("%s: memoryOnly = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestRawAnswerReset holds a rawAnswer reset to a new one but for the
// memory it keeps: an answer made in it after a call with a content handle
// and the serverInfo of protocol 2026-07-28 carries neither, nor any block
// or text of that call. (TestRawCallMatchesSDKPath runs its calls one
// after another on one connection, each answer in the last one's memory.)
func TestRawAnswerReset(t *testing.T) {
	vals, fresh := values.New(), values.New()
	p := &Proxy{threshold: -1}
	const one, two = `{"content":[{"type":"text","text":"one"},{"type":"text","text":"two"}],"isError":true}`, `{"content":[{"type":"text","text":"three"}]}`
	a := new(rawAnswer)
	first, ok := textResult([]byte(one), &a.read)
	if !ok {
		t.Fatal("textResult refused the first result")
	}
	out := p.present(vals, first, &a.pr)
	out.Meta[MetaContentHandle] = "r9"
	req := &rawRequest{id: mustID(t, 1), serverInfo: json.RawMessage(`{"name":"s","version":"1"}`)}
	a.line = rawLine(a.line, req, out, nil)
	if !strings.Contains(string(a.line), `"r9"`) || !strings.Contains(string(a.line), `"isError":true`) {
		t.Fatalf("first line: %s", a.line)
	}
	keep := cap(a.line)
	a.reset()
	if a.pr.meta == nil || len(a.pr.meta) != 0 || cap(a.line) != keep || len(a.line) != 0 {
		t.Fatalf("reset kept meta %v (want empty, not nil), line len %d cap %d (want 0, %d)", a.pr.meta, len(a.line), cap(a.line), keep)
	}
	second, ok := textResult([]byte(two), &a.read)
	if !ok {
		t.Fatal("textResult refused the second result")
	}
	out = p.present(vals, second, &a.pr)
	got := string(rawLine(a.line, &rawRequest{id: mustID(t, 2)}, out, nil))
	p.present(fresh, mustText(t, one), nil) // r1 there too
	want := string(rawLine(nil, &rawRequest{id: mustID(t, 2)}, p.present(fresh, mustText(t, two), nil), nil))
	if got != want {
		t.Errorf("answer made in reset memory:\n%s\nwant, as in new memory:\n%s", got, want)
	}
	a.line = append(a.line[:0], make([]byte, maxAnswerLine+1)...)
	a.reset()
	if a.line != nil {
		t.Errorf("reset kept a line of %d bytes, more than maxAnswerLine", cap(a.line))
	}
}

func mustID(t *testing.T, n int64) jsonrpc.ID {
	t.Helper()
	id, err := jsonrpc.MakeID(float64(n))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func mustText(t *testing.T, r string) *mcp.CallToolResult {
	t.Helper()
	res, ok := textResult([]byte(r), nil)
	if !ok {
		t.Fatalf("textResult refused %s", r)
	}
	return res
}
