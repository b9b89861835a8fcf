package mcpproxy

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/agentvalues/values/internal/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The notifications of a downstream server are taken as they are read,
// before the SDK client sees them: the SDK queues every message it reads,
// without bound, for handlers that run one at a time, so a server that
// writes notifications faster than they are handled would grow that queue
// for as long as it writes. Each is handled where it is read, and its
// handling never waits for anything (it queues what it relays in the
// sessions' lanes, session.go), so reading goes at the pace of handling
// and the proxy holds one notification at a time:
//
//   - a log message (notifications/message) is dropped at once when no
//     session set a log level; otherwise it goes to the lane of each
//     session whose level it meets (see logging.go);
//   - a progress notification goes to the call it belongs to (see
//     Proxy.progressToken), or is dropped when it belongs to none;
//   - any other notification (list_changed, cancelled, …) passes to the
//     SDK when its params are at most maxPassedNote bytes, and is dropped
//     otherwise: none of them carries much, and their handlers do not wait.

// maxPassedNote bounds the params of a downstream notification passed to
// the SDK client (see intakeConn); a larger one is dropped as it is read.
const maxPassedNote = 64 << 10

// intakeTransport makes the connection to a downstream server take its
// notifications (see intakeConn).
type intakeTransport struct {
	mcp.Transport
	p *Proxy
}

func (t intakeTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &intakeConn{Connection: c, p: t.p}, nil
}

// intakeConn hands the SDK client every message of the connection but the
// notifications it takes itself.
type intakeConn struct {
	mcp.Connection
	p *Proxy
}

func (c *intakeConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return msg, err
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok || req.IsCall() {
			return msg, nil
		}
		switch {
		case req.Method == "notifications/message":
			c.p.takeLog(req.Params)
		case req.Method == "notifications/progress":
			c.p.takeProgress(req.Params)
		case len(req.Params) <= maxPassedNote:
			return msg, nil
		}
	}
}

// A logNote is a downstream log message as the proxy reads it: its data
// kept as the server's JSON, neither decoded nor copied again.
type logNote struct {
	Meta   mcp.Meta         `json:"_meta,omitempty"`
	Level  mcp.LoggingLevel `json:"level"`
	Logger string           `json:"logger,omitempty"`
	Data   json.RawMessage  `json:"data"`
}

// takeLog relays the log message of a downstream server whose params are
// params to every session whose log level it meets, through their lanes;
// with no session listening it is dropped before it is decoded.
func (p *Proxy) takeLog(params json.RawMessage) {
	listening := p.stores.listening()
	if len(listening) == 0 {
		return
	}
	p.mu.Lock()
	serving := p.server != nil
	p.mu.Unlock()
	if !serving {
		return
	}
	var m logNote
	if json.Unmarshal(params, &m) != nil {
		return // the SDK would refuse it too
	}
	out := &mcp.LoggingMessageParams{Meta: forwardMeta(m.Meta), Level: m.Level, Logger: m.Logger, Data: m.Data}
	if m.Data == nil {
		out.Data = nil // absent: as the SDK would decode it
	}
	if p.prefix != "" {
		name := strings.TrimSuffix(p.prefix, ToolSeparator)
		if out.Logger != "" {
			name += "/" + out.Logger
		}
		out.Logger = name
	}
	for _, s := range listening {
		if s.wants(m.Level) {
			s.out.push(note{size: len(params), send: func(ctx context.Context) {
				_ = s.ss.Log(ctx, out) // a session that is gone misses it
			}})
		}
	}
}

// takeProgress relays a downstream progress notification whose params are
// params to the call it belongs to, with that call's own token: on the
// call's own stream while it runs, else (it came after the result) the
// session's lane. One that belongs to no call is dropped before it is
// decoded.
func (p *Proxy) takeProgress(params json.RawMessage) {
	if len(params) == 0 {
		return
	}
	raw, ok := jsontext.Member(params, "progressToken") // params are valid JSON: the connection decoded them
	if !ok || raw[0] != '"' {
		return // the proxy's tokens are strings
	}
	r, ok := p.progress.Load(string(jsontext.AppendUnquoted(nil, raw)))
	if !ok {
		return
	}
	route := r.(progressRoute)
	var out mcp.ProgressNotificationParams
	if json.Unmarshal(params, &out) != nil {
		return
	}
	out.Meta = nil
	out.ProgressToken = route.token
	n := note{size: len(params), send: func(ctx context.Context) {
		_ = route.sess.ss.NotifyProgress(ctx, &out)
	}}
	if !route.call.push(n) {
		route.sess.out.push(n)
	}
}
