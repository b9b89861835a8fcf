package mcpproxy

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Log messages pass through. When an agent's session sets a log level
// (logging/setLevel), every downstream server that declared the logging
// capability is asked for that level, or for the most verbose level any
// session of the proxy has asked for so far, since the servers are shared
// by the sessions; a server restarted later is asked again once it is back.
// A downstream notifications/message goes to every session of the agent
// that set a level it meets, as MCP has a client see no log messages
// before it sets a level; it is dropped as it is read when no session has
// set one (intake.go), and reaches each session through the session's
// queue, so that a client that does not read cannot hold up the others
// (session.go). In a gateway the message's logger names its server:
// "SERVER", or "SERVER/LOGGER" when the server named one.
//
// Under protocol version 2026-07-28 and later a server takes the level from
// each request's _meta instead: a forwarded request carries the agent's own
// (when its request has one) or the level asked of the servers. The
// messages themselves reach only sessions that set a level with
// logging/setLevel; an agent on 2026-07-28 without it does not get them
// (they are not tied back to the request that caused them). MCP deprecates
// logging as of 2026-07-28; this keeps it working for the servers and
// clients that still use it.

// A logLevel is the log level asked of the downstream servers.
type logLevel struct {
	mu    sync.Mutex
	level mcp.LoggingLevel // "" until a session sets one
}

// mcpLevels are MCP's log levels, least severe first.
var mcpLevels = []mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// raise makes l at least as verbose as asked and reports whether it
// changed. An unknown level changes nothing (the SDK refuses it before).
func (l *logLevel) raise(asked mcp.LoggingLevel) bool {
	i := slices.Index(mcpLevels, asked)
	if i < 0 {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if cur := slices.Index(mcpLevels, l.level); cur >= 0 && cur <= i {
		return false
	}
	l.level = asked
	return true
}

func (l *logLevel) get() mcp.LoggingLevel {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.level
}

// followLogLevel makes server pass a session's logging/setLevel on to the
// downstream servers of proxies.
func followLogLevel(server *mcp.Server, st *stores, proxies func() []*Proxy) {
	server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if method != "logging/setLevel" || err != nil {
				return res, err
			}
			params, ok := req.GetParams().(*mcp.SetLoggingLevelParams)
			if !ok {
				return res, err
			}
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
				st.setLevel(st.session(ss), params.Level)
			}
			if st.logLevel.raise(params.Level) {
				var wg sync.WaitGroup
				for _, p := range proxies() {
					wg.Go(func() { p.askLogLevel(p.current()) })
				}
				wg.Wait() // so that what the session logs next is sent
			}
			return res, err
		}
	})
}

// logLevelTimeout bounds asking a server for a log level: the agent's
// logging/setLevel waits for every server's answer, or this long.
const logLevelTimeout = 5 * time.Second

// askLogLevel asks the server of l for the proxy's log level, if it logs
// and a level was set. A server that refuses is told of in the log; its
// tools go on.
func (p *Proxy) askLogLevel(l *link) {
	level := p.stores.logLevel.get()
	init := l.down.InitializeResult()
	if level == "" || init == nil || init.Capabilities == nil || init.Capabilities.Logging == nil {
		return
	}
	ctx, cancel := context.WithTimeout(p.ctx, logLevelTimeout)
	defer cancel()
	if err := l.down.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level}); err != nil && p.ctx.Err() == nil {
		fmt.Fprintf(p.log, "agentvalues: asking %s for log level %q: %v\n", p.serverName(), level, err)
	}
}

// requestMeta is the _meta of a request forwarded downstream: the agent's
// own keys, and, to a server at protocol version 2026-07-28 or later,
// which takes the log level from each request, the level (the agent's
// request's own when it has one, else the level asked of the servers).
func (p *Proxy) requestMeta(m mcp.Meta) mcp.Meta {
	level, _ := m[mcp.MetaKeyLogLevel].(string)
	out := forwardMeta(m)
	if init := p.current().down.InitializeResult(); init == nil || init.ProtocolVersion < protocolRaw {
		return out // the server took the level from logging/setLevel (askLogLevel)
	}
	if level == "" {
		level = string(p.stores.logLevel.get())
	}
	if level == "" {
		return out
	}
	if out == nil {
		out = mcp.Meta{}
	}
	out[mcp.MetaKeyLogLevel] = level
	return out
}
