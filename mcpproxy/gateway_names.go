package mcpproxy

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The names a gateway offers its servers' tools and prompts under are
// decided here, for all of its servers at once: a tool keeps its own name
// (bare) unless a rule below asks for SERVER__NAME (prefixed), where SERVER
// is the name the server was added under and "__" is [ToolSeparator]. A
// name is prefixed when
//
//   - another server offers a tool (prompt) of the same name, bare: then
//     every server offering it bare gets the prefix, whatever the order
//     they started in, and the log gets one line naming the servers;
//   - it is read_value or query_value, so that the gateway's own are never
//     shadowed;
//   - it has the form OTHER__REST where OTHER names a server of the
//     gateway, so that it can never equal another server's prefixed name;
//   - the server asks for prefixes (Downstream.PrefixNames), or the
//     gateway does (Options.PrefixNames).
//
// The names are decided again whenever a server's list changes (it starts,
// restarts, or reports a change): a name offered bare becomes prefixed when
// another server later offers the same one, and the client is told the
// list changed. A call of the old bare name then fails with an error naming
// the prefixed ones. SERVER__NAME is accepted for a tool or prompt offered
// bare too (not listed), so a client may always use it. Resources keep
// their URIs (catalog.go).
//
// A lone [Proxy] has a names of its own, with one server and no prefix.

// A names is the naming of one upstream server's tools and prompts. It is
// safe for concurrent use: each proxy's list follower calls set, routes
// look names up.
type names struct {
	mu      sync.Mutex
	servers []string // the gateway's server names, fixed
	log     io.Writer
	tools   nameTable
	prompts nameTable
}

// A nameTable is the naming of one kind: tools or prompts.
type nameTable struct {
	what     string                          // "tool" or "prompt"
	byProxy  map[*Proxy]map[string]*offer    // each server's offers, by downstream name
	byUp     map[string]*offer               // the offers registered, by upstream name
	collided map[string]string               // downstream name -> the servers logged as offering it
	add      func(o *offer, up string) error // registers o upstream under up
	remove   func(s *mcp.Server, up ...string)
}

// An offer is one tool or prompt of one server, and the name it is
// registered under upstream.
type offer struct {
	p      *Proxy
	name   string        // downstream
	key    string        // its definition's JSON: registered again when it changes
	def    any           // *mirroredTool or *mcp.Prompt, as the server listed it
	up     string        // the upstream name registered, or ""
	dirty  bool          // the definition changed since it was registered
	failed bool          // the SDK refused it: not offered, and no claimant
	live   *mirroredTool // for a tool: as registered under up
}

// newNames makes the naming of a gateway over the servers named servers
// (none for a lone proxy), which logs to log.
func newNames(servers []string, log io.Writer) *names {
	n := &names{servers: servers, log: log}
	n.tools = nameTable{what: "tool", byProxy: map[*Proxy]map[string]*offer{}, byUp: map[string]*offer{}, collided: map[string]string{},
		add: func(o *offer, up string) error {
			m := *o.def.(*mirroredTool)
			def := *m.def
			def.Name = up
			m.up, m.def = up, &def
			if err := o.p.addTool(&m); err != nil {
				return err
			}
			o.live = &m
			return nil
		},
		remove: func(s *mcp.Server, up ...string) { s.RemoveTools(up...) },
	}
	n.prompts = nameTable{what: "prompt", byProxy: map[*Proxy]map[string]*offer{}, byUp: map[string]*offer{}, collided: map[string]string{},
		add: func(o *offer, up string) error {
			return o.p.addPrompt(o.def.(*mcp.Prompt), up)
		},
		remove: func(s *mcp.Server, up ...string) { s.RemovePrompts(up...) },
	}
	return n
}

// upName is the name o is offered under, given whether its name is one
// only one server offers (unforced).
func (n *names) upName(o *offer, alone bool) string {
	if alone && !o.p.prefixNames && !n.reserved(o.name) {
		return o.name
	}
	return o.p.prefix + o.name
}

// hides reports whether a tool named name is not offered at all: read_value
// and query_value of a lone proxy's server, which its own would shadow.
func (n *names) hides(name string) bool {
	return len(n.servers) == 0 && (name == readValueTool().Name || name == queryValueTool().Name)
}

// reserved reports whether name must be prefixed whoever offers it: the
// gateway's own tools, and a name of the form SERVER__REST.
func (n *names) reserved(name string) bool {
	if name == readValueTool().Name || name == queryValueTool().Name {
		return len(n.servers) > 0 // a lone proxy hides them instead (syncTools)
	}
	server, _, ok := strings.Cut(name, ToolSeparator)
	return ok && slices.Contains(n.servers, server)
}

// setTools makes the tools p offers upstream those of listed, by
// downstream name (a nil def is not offered), renaming any other
// server's tools the change makes collide or no longer collide, and
// publishes each affected proxy's offered map.
func (n *names) setTools(p *Proxy, listed map[string]*mirroredTool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	offers := make(map[string]*offer, len(listed))
	for name, m := range listed {
		if m.def != nil {
			offers[name] = &offer{p: p, name: name, key: m.key, def: m}
		}
	}
	touched := n.set(&n.tools, p, offers)
	touched[p] = true
	for q := range touched {
		offered := make(map[string]*mirroredTool)
		for _, o := range n.tools.byProxy[q] {
			if o.up != "" && o.live != nil {
				offered[o.up] = o.live
			}
		}
		q.offered.Store(&offered)
	}
}

// setPrompts does for prompts what setTools does for tools.
func (n *names) setPrompts(p *Proxy, listed map[string]*mcp.Prompt, keys map[string]string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	offers := make(map[string]*offer, len(listed))
	for name, pr := range listed {
		offers[name] = &offer{p: p, name: name, key: keys[name], def: pr}
	}
	n.set(&n.prompts, p, offers)
}

// set replaces p's offers in t with offers and registers upstream what
// changes, returning the proxies whose registrations changed. Under n.mu.
func (n *names) set(t *nameTable, p *Proxy, offers map[string]*offer) map[*Proxy]bool {
	old := t.byProxy[p]
	affected := map[string]bool{}
	var removed []string
	for name, o := range offers {
		switch prev := old[name]; {
		case prev != nil && prev.key == o.key:
			offers[name] = prev // unchanged (one the SDK refused stays so)
		case prev != nil:
			o.up, o.dirty = prev.up, true
			affected[name] = true
		default:
			affected[name] = true
		}
	}
	for name, prev := range old {
		if offers[name] == nil {
			affected[name] = true
			if prev.up != "" {
				removed = append(removed, prev.up)
				delete(t.byUp, prev.up)
			}
		}
	}
	t.byProxy[p] = offers
	touched := map[*Proxy]bool{}
	for len(affected) > 0 {
		type registration struct {
			o  *offer
			up string
		}
		var adds []registration
		for _, name := range sortedKeys(affected) {
			claimants := n.claimants(t, name)
			var servers []string // those that would offer it bare
			for _, o := range claimants {
				if !o.p.prefixNames && !n.reserved(name) {
					servers = append(servers, o.p.gatewayName())
				}
			}
			n.noteCollision(t, name, servers)
			for _, o := range claimants {
				want := n.upName(o, len(servers) == 1)
				if o.up == want && !o.dirty {
					continue
				}
				if o.up != "" && o.up != want {
					removed = append(removed, o.up)
					delete(t.byUp, o.up)
					o.up = ""
				}
				touched[o.p] = true
				adds = append(adds, registration{o, want})
			}
		}
		// Removals first, then additions, so that a name never stands for
		// two offers at once.
		if len(removed) > 0 {
			slices.Sort(removed)
			t.remove(p.server, slices.Compact(removed)...)
			removed = nil
		}
		clear(affected)
		for _, r := range adds {
			r.o.dirty = false
			if err := t.add(r.o, r.up); err != nil {
				fmt.Fprintf(n.log, "agentvalues: not offering the downstream %s %q of %s: %v\n", t.what, r.o.name, r.o.p.serverName(), err)
				if r.o.up != "" { // registered before under this name: the old definition goes
					removed = append(removed, r.o.up)
					delete(t.byUp, r.o.up)
				}
				r.o.up, r.o.failed = "", true
				affected[r.o.name] = true // it claims the name no more: decide it again
				continue
			}
			r.o.up = r.up
			t.byUp[r.up] = r.o
		}
	}
	return touched
}

// claimants returns the offers of name that can be offered, in the order
// of their servers' names.
func (n *names) claimants(t *nameTable, name string) []*offer {
	var out []*offer
	for _, offers := range t.byProxy {
		if o := offers[name]; o != nil && !o.failed {
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b *offer) int { return strings.Compare(a.p.prefix, b.p.prefix) })
	return out
}

// noteCollision logs, once per set of servers, that servers offer name.
func (n *names) noteCollision(t *nameTable, name string, servers []string) {
	if len(servers) < 2 {
		delete(t.collided, name)
		return
	}
	slices.Sort(servers)
	joined := strings.Join(servers, ", ")
	if t.collided[name] == joined {
		return
	}
	t.collided[name] = joined
	prefixed := make([]string, len(servers))
	for i, s := range servers {
		prefixed[i] = s + ToolSeparator + name
	}
	fmt.Fprintf(n.log, "agentvalues: the servers %s each offer a %s named %q: it is offered as %s\n", quoteJoin(servers), t.what, name, strings.Join(prefixed, ", "))
}

// route names what a call of the tool (or prompt) up reaches: the offer
// registered under up, or the one offered bare that SERVER__NAME names
// (alias), or neither, with an error when up is a name offered bare before
// and prefixed now.
func (n *names) route(t *nameTable, up string) (o *offer, alias bool, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if o := t.byUp[up]; o != nil {
		return o, false, nil
	}
	if server, name, ok := strings.Cut(up, ToolSeparator); ok {
		for p, offers := range t.byProxy {
			if p.gatewayName() == server {
				if o := offers[name]; o != nil && o.up == name {
					return o, true, nil
				}
			}
		}
	}
	var prefixed []string
	for _, o := range n.claimants(t, up) {
		if o.up != "" && o.up != up {
			prefixed = append(prefixed, o.up)
		}
	}
	if len(prefixed) > 0 {
		return nil, false, fmt.Errorf("more than one server offers a %s named %q, so it is offered as %s: call one of those", t.what, up, strings.Join(prefixed, " or "))
	}
	return nil, false, nil
}

// resolve is the gateway's receiving middleware for names: a tools/call or
// prompts/get of SERVER__NAME where NAME is offered bare goes to NAME, and
// one of a bare name that is prefixed now is answered with an error naming
// the prefixed ones.
func (n *names) resolve(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch params := req.GetParams().(type) {
		case *mcp.CallToolParamsRaw:
			if method != "tools/call" {
				break
			}
			o, alias, err := n.route(&n.tools, params.Name)
			switch {
			case err != nil:
				return errorResult(fmt.Sprintf("%s was not called: %v.", params.Name, err)), nil
			case alias:
				params.Name = o.name
			}
		case *mcp.GetPromptParams:
			if method != "prompts/get" {
				break
			}
			o, alias, err := n.route(&n.prompts, params.Name)
			switch {
			case err != nil:
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "mcpproxy: " + err.Error()}
			case alias:
				params.Name = o.name
			}
		}
		return next(ctx, method, req)
	}
}

// known reports whether a call of the tool up reaches a tool (the
// gateway's own included), or is answered by resolve (a name offered bare
// before and prefixed now).
func (n *names) known(up string) bool {
	if up == readValueTool().Name || up == queryValueTool().Name {
		return true
	}
	o, _, err := n.route(&n.tools, up)
	return o != nil || err != nil
}

// prompt returns the proxy whose prompt a request naming the prompt up
// (prompts/get, completion/complete) reaches, and the prompt's name on its
// server; nil when none does.
func (n *names) prompt(up string) (*Proxy, string) {
	o, _, _ := n.route(&n.prompts, up)
	if o == nil {
		return nil, ""
	}
	return o.p, o.name
}

// toolOwner returns the proxy whose tool is registered under up, or nil.
func (n *names) toolOwner(up string) *Proxy {
	n.mu.Lock()
	defer n.mu.Unlock()
	if o := n.tools.byUp[up]; o != nil {
		return o.p
	}
	return nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func quoteJoin(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, " and ")
}
