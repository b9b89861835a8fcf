package mcpgo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/internal/mcpresult"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// DefaultThreshold is the size in bytes above which a tool result reaches
// the client as a preview and a hint rather than whole: the text of its
// content blocks plus its structured content. It is the proxy's default.
const DefaultThreshold = 8 << 10

// MetaHandle is the key ("agentvalues/handle"), in a tool result's _meta,
// of the handle under which the result is stored. It is the proxy's key.
const MetaHandle = mcpresult.MetaHandle

// MetaContentHandle is the key ("agentvalues/content-handle"), in a tool
// result's _meta, of the handle under which a result's content blocks are
// stored when the result also has structured content that they do not
// merely repeat. It is the proxy's key.
const MetaContentHandle = mcpresult.MetaContentHandle

// An Option configures [New].
type Option func(*config)

type config struct {
	threshold int
	values    []values.Option
}

// WithThreshold sets the size in bytes of a result's text blocks plus its
// structured content above which the client gets a preview and a hint
// instead of the result. Zero means [DefaultThreshold]; a negative n
// previews every result.
func WithThreshold(n int) Option {
	return func(c *config) { c.threshold = n }
}

// WithValues sets the options of every session's store (the preview bound,
// the resolved-arguments bound, query limits, …), as given to [values.New].
// A [values.WithFirstHandle] among them is overridden: each new session
// starts past every handle handed out before.
func WithValues(opts ...values.Option) Option {
	return func(c *config) { c.values = slices.Clone(opts) }
}

// Values is the agentvalues glue for one or more mcp-go servers: it keeps
// one [values.SessionValues] per client session and provides the
// middleware, the tool filter, the read_value and query_value tools and the
// session hook that use them. It is safe for concurrent use.
type Values struct {
	threshold int
	opts      []values.Option

	mu       sync.Mutex
	sessions map[string]*values.SessionValues // by session ID; "" for calls without one
	next     int                              // the least first handle number of the next store

	schemas schemaCache
}

// New returns a Values with no stores yet; each session gets one at its
// first tool call.
func New(opts ...Option) *Values {
	var c config
	for _, o := range opts {
		o(&c)
	}
	if c.threshold == 0 {
		c.threshold = DefaultThreshold
	}
	return &Values{threshold: c.threshold, opts: c.values, sessions: map[string]*values.SessionValues{}, next: 1}
}

// ServerOption returns the option of [server.NewMCPServer] that installs v
// in a server: [Values.Middleware] as a tool handler middleware,
// [Values.FilterTools] as a tool filter, the read_value and query_value
// tools, and [Values.EndSession] as an OnUnregisterSession hook (added to
// the server's hooks, or to new ones when it has none yet). Give it first,
// and before any [server.WithHooks]; see the package documentation.
func (v *Values) ServerOption() server.ServerOption {
	return func(s *server.MCPServer) {
		server.WithToolHandlerMiddleware(v.Middleware)(s)
		server.WithToolFilter(v.FilterTools)(s)
		hooks := s.GetHooks()
		if hooks == nil {
			hooks = &server.Hooks{}
			server.WithHooks(hooks)(s)
		}
		hooks.AddOnUnregisterSession(v.EndSession)
		s.AddTools(v.Tools()...)
	}
}

// Session returns the store of the client session of a tool call's
// context, making it at the first call of the session. A context without a
// session, or whose session ID is empty, gets the store shared by such
// calls.
func (v *Values) Session(ctx context.Context) *values.SessionValues {
	id := ""
	if ss := server.ClientSessionFromContext(ctx); ss != nil {
		id = ss.SessionID()
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if vals, ok := v.sessions[id]; ok {
		return vals
	}
	// Past every handle handed out so far, by the stores alive and those
	// dropped (v.next keeps theirs).
	first := v.next
	for _, vals := range v.sessions {
		first = max(first, nextNumber(vals))
	}
	vals := values.New(append(slices.Clip(v.opts), values.WithFirstHandle(first))...)
	v.sessions[id] = vals
	return vals
}

// EndSession drops the store of session, if it has one. It is the
// OnUnregisterSession hook [Values.ServerOption] installs; add it to a
// server's hooks yourself when they are set after that option. A later
// call in the same session starts a new store, numbered past the handles of
// the old one.
func (v *Values) EndSession(_ context.Context, session server.ClientSession) {
	if session == nil {
		return
	}
	id := session.SessionID()
	v.mu.Lock()
	defer v.mu.Unlock()
	if vals, ok := v.sessions[id]; ok && id != "" {
		v.next = max(v.next, nextNumber(vals))
		delete(v.sessions, id)
	}
}

// nextNumber is the number of the handle vals hands out next.
func nextNumber(vals *values.SessionValues) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(vals.Next(), "r"))
	return n
}

// Middleware is the [server.ToolHandlerMiddleware] that resolves the
// references in a call's arguments before next runs and stores its result.
// In order:
//
//   - calls of read_value and query_value go to next untouched;
//   - the arguments are resolved in the session's store and validated
//     against the tool's input schema as the server holds it (the session's
//     own tool first, as mcp-go looks it up); a schema that does not
//     compile is skipped, and the arguments are only resolved. On an
//     error the handler is not called and the result is an isError tool
//     result "TOOL was not called: " and the error, which names the
//     reference;
//   - next gets the request with Params.Arguments and Params.RawArguments
//     replaced by the resolved arguments (left as they were when nothing
//     was substituted);
//   - next's result is stored and returned as the package documentation
//     says; an error, a nil result or one that asks for more input is
//     returned as it is, and nothing is stored.
func (v *Values) Middleware(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		name := req.Params.Name
		if isOwnTool(name) {
			return next(ctx, req)
		}
		vals := v.Session(ctx)
		tool, _ := lookupTool(ctx, name)
		schema := v.schemas.of(tool)
		args, err := argsOf(req)
		if err != nil {
			return notCalled(name, err), nil
		}
		prepared, _, err := vals.Prepare(schema.compiled, args)
		if err != nil {
			return notCalled(name, err), nil
		}
		if !bytes.Equal(prepared, args) {
			var decoded any
			if err := json.Unmarshal(prepared, &decoded); err != nil {
				return notCalled(name, err), nil // cannot happen: Prepare returns JSON
			}
			req.Params.Arguments = decoded
			req.Params.RawArguments = json.RawMessage(prepared)
		}
		res, err := next(ctx, req)
		if err != nil || res == nil || res.NeedsInput() {
			return res, err
		}
		return v.present(vals, res, hasOutputSchema(tool)), nil
	}
}

// notCalled is the result of a call whose arguments did not make it to the
// handler, worded as the proxy words it.
func notCalled(tool string, err error) *mcp.CallToolResult {
	return mcp.NewToolResultError(fmt.Sprintf("%s was not called: %v", tool, err))
}

// argsOf returns the JSON arguments of a call: the bytes mcp-go kept from
// the wire when it has them, else its Arguments encoded; {} when there are
// none.
func argsOf(req mcp.CallToolRequest) ([]byte, error) {
	var raw []byte
	switch a := req.Params.Arguments; {
	case len(req.Params.RawArguments) > 0:
		raw = req.Params.RawArguments
	case a == nil:
	default:
		if r, ok := a.(json.RawMessage); ok {
			raw = r
			break
		}
		b, err := json.Marshal(a)
		if err != nil {
			return nil, fmt.Errorf("mcpgo: arguments cannot be encoded as JSON: %w", err)
		}
		raw = b
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return []byte("{}"), nil
	}
	return raw, nil
}

// lookupTool returns the definition of the tool a call names as mcp-go
// finds it: the session's own tool first, then the server's.
func lookupTool(ctx context.Context, name string) (mcp.Tool, bool) {
	if ss, ok := server.ClientSessionFromContext(ctx).(server.SessionWithTools); ok {
		if t, ok := ss.GetSessionTools()[name]; ok {
			return t.Tool, true
		}
	}
	if s := server.ServerFromContext(ctx); s != nil {
		if t := s.GetTool(name); t != nil {
			return t.Tool, true
		}
	}
	return mcp.Tool{}, false
}

// hasOutputSchema reports whether the tool declares an output schema.
func hasOutputSchema(t mcp.Tool) bool {
	return len(t.RawOutputSchema) > 0 || t.OutputSchema.Type != ""
}
