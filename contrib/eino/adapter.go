package eino

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	values "github.com/agentvalues/values"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
)

// Adapter connects one store of values to Eino tools nodes: its
// ResolveArguments is a ToolArgumentsHandler, its Middleware a
// compose.ToolMiddleware, and its Tools the read_value and query_value tools.
// It is safe for concurrent use.
type Adapter struct {
	vals    *values.SessionValues
	read    string // the name of the read_value tool
	query   string // the name of the query_value tool
	mu      sync.RWMutex
	schemas map[string]*values.Schema // by tool name; nil: resolve only
}

// New returns an Adapter over vals, the store of one agent run; nil means a
// new values.New(). A run whose context carries a store of its own
// (WithValues) uses that one instead.
func New(vals *values.SessionValues) *Adapter {
	if vals == nil {
		vals = values.New()
	}
	return &Adapter{
		vals:    vals,
		read:    values.ReadValueTool().Name,
		query:   values.QueryValueTool().Name,
		schemas: make(map[string]*values.Schema),
	}
}

type valuesKey struct{}

// WithValues returns a context under which an Adapter stores results in,
// resolves references against and reads from vals rather than its own store:
// one agent built once can then serve many runs, each with its own handles.
// Pass it to the run (agent.Generate, runnable.Invoke). A nil vals changes
// nothing.
func WithValues(ctx context.Context, vals *values.SessionValues) context.Context {
	if vals == nil {
		return ctx
	}
	return context.WithValue(ctx, valuesKey{}, vals)
}

// Values returns the store a call under ctx uses: the one WithValues put in
// ctx, else the Adapter's own.
func (a *Adapter) Values(ctx context.Context) *values.SessionValues {
	if v, ok := ctx.Value(valuesKey{}).(*values.SessionValues); ok {
		return v
	}
	return a.vals
}

// Configure makes conf store and resolve values: it reads the parameter
// schema of every tool in conf.Tools (for validation after resolution),
// appends the read_value and query_value tools (Tools), sets
// conf.ToolArgumentsHandler to ResolveArguments (an arguments handler conf
// already had runs after it, on the resolved arguments, and not for a call
// refused), and puts Middleware first in conf.ToolCallMiddlewares, so that
// middlewares already there see the real arguments and results while the
// model gets previews. (A ReAct agent puts its own result collector before
// all of these; it sees what the model sees.)
//
// It fails, changing nothing, when a tool's Info fails or a tool is already
// named read_value or query_value. A tool's schema that does not compile is
// treated as none: its arguments are resolved and checked for references
// that did not resolve, not validated. Call Configure once per config.
func (a *Adapter) Configure(ctx context.Context, conf *compose.ToolsNodeConfig) error {
	found := make(map[string]*values.Schema, len(conf.Tools))
	for _, t := range conf.Tools {
		info, err := t.Info(ctx)
		if err != nil {
			return fmt.Errorf("eino: tool info: %w", err)
		}
		if info.Name == a.read || info.Name == a.query {
			return fmt.Errorf("eino: a tool is already named %s", info.Name)
		}
		found[info.Name] = compileParams(info)
	}
	a.mu.Lock()
	for name, sch := range found {
		a.schemas[name] = sch
	}
	a.mu.Unlock()

	conf.Tools = append(conf.Tools[:len(conf.Tools):len(conf.Tools)], a.Tools()...)
	if prev := conf.ToolArgumentsHandler; prev != nil {
		conf.ToolArgumentsHandler = func(ctx context.Context, name, arguments string) (string, error) {
			args, _ := a.ResolveArguments(ctx, name, arguments)
			if refused(args) {
				return args, nil
			}
			return prev(ctx, name, args)
		}
	} else {
		conf.ToolArgumentsHandler = a.ResolveArguments
	}
	conf.ToolCallMiddlewares = append([]compose.ToolMiddleware{a.Middleware()}, conf.ToolCallMiddlewares...)
	return nil
}

// Tools returns the read_value and query_value tools, serving the store of
// each call's context (see Values). Configure adds them; add them yourself
// when you wire ResolveArguments and Middleware by hand.
func (a *Adapter) Tools() []tool.BaseTool {
	return []tool.BaseTool{
		&valueTool{a: a, def: values.ReadValueTool(), run: readValue},
		&valueTool{a: a, def: values.QueryValueTool(), run: queryValue},
	}
}

// schema returns the compiled parameter schema of the tool named name, nil
// for a tool Configure did not see or that has none.
func (a *Adapter) schema(name string) *values.Schema {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.schemas[name]
}

// own reports whether name is one of the adapter's tools, whose arguments
// are never resolved (their ref is a reference) and whose results are never
// stored again (a page of r1 is not a new value).
func (a *Adapter) own(name string) bool { return name == a.read || name == a.query }

// compileParams compiles the parameter schema Eino derives from info, nil
// when there is none or it does not compile.
func compileParams(info *schema.ToolInfo) *values.Schema {
	if info.ParamsOneOf == nil {
		return nil
	}
	js, err := info.ParamsOneOf.ToJSONSchema()
	if err != nil || js == nil {
		return nil
	}
	raw, err := json.Marshal(js)
	if err != nil {
		return nil
	}
	sch, err := values.CompileSchema(raw)
	if err != nil {
		return nil
	}
	return sch
}
