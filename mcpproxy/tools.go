package mcpproxy

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"time"

	values "github.com/agentvalues/values"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// referenceNote ends the description of every mirrored tool.
const referenceNote = values.ReferenceNote

// listTimeout bounds one re-listing of the downstream tools after a
// list_changed notification, so a stuck server cannot stall later refreshes.
const listTimeout = 30 * time.Second

// A mirroredTool is a downstream tool as the proxy offers it upstream.
type mirroredTool struct {
	name   string         // downstream
	up     string         // upstream: as offered (see gateway_names.go)
	def    *mcp.Tool      // what the agent sees; nil if the tool is not offered
	schema *values.Schema // the compiled input schema arguments are prepared against, or nil
	key    string         // the downstream definition's JSON, to notice changes
}

// followToolList re-lists the downstream tools, prompts and resources after
// each list_changed notification (and a restart) until the proxy is closed.
func (p *Proxy) followToolList() {
	defer p.wg.Done()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-p.refresh:
		}
		p.resync()
	}
}

// Re-listing after a list_changed notification is tried up to listAttempts
// times, waiting listBackoff before the first retry and three times longer
// before each next one, at most maxListBackoff: a failed listing would
// otherwise lose the change until the server's next notification.
const (
	listAttempts   = 4
	listBackoff    = 100 * time.Millisecond
	maxListBackoff = time.Second
)

// resync re-lists the downstream tools, prompts and resources, retrying a
// failed listing with backoff until it succeeds, the attempts run out, the
// downstream server is gone or the proxy is closed. Only the last failure
// is logged.
func (p *Proxy) resync() {
	wait := p.seams.listBackoff
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(p.ctx, listTimeout)
		err := p.syncTools(ctx)
		if err == nil {
			err = p.syncCatalog(ctx)
		}
		cancel()
		if err == nil || p.downstreamErr() != nil || p.ctx.Err() != nil {
			return
		}
		if attempt == listAttempts {
			fmt.Fprintf(p.log, "agentvalues: %v (gave up after %d attempts; the tool list is stale until the server next reports a change)\n", err, attempt)
			return
		}
		timer := time.NewTimer(wait)
		select {
		case <-p.ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		wait = min(3*wait, maxListBackoff)
	}
}

// syncTools makes the upstream tool list match the downstream one: new and
// changed tools are (re)added, vanished ones removed, under the names
// p.names gives them. A tool that cannot be offered is reported to the log
// once per definition and left out.
//
// serveOn calls it once, then only followToolList does: never two at once,
// so p.tools needs no lock.
func (p *Proxy) syncTools(ctx context.Context) error {
	var listed []*mcp.Tool
	for t, err := range p.current().down.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("mcpproxy: listing the downstream tools: %w", err)
		}
		listed = append(listed, t)
	}

	current := p.tools

	seen := make(map[string]bool, len(listed))
	for _, t := range listed {
		if t == nil || seen[t.Name] {
			continue
		}
		seen[t.Name] = true
		key, err := json.Marshal(t)
		if err != nil {
			continue // cannot happen for a decoded tool
		}
		if old := current[t.Name]; old != nil && old.key == string(key) {
			continue
		}
		// The name it is offered under is the names' to decide (the
		// tool's own, or SERVER__NAME in a gateway; gateway_names.go).
		m := &mirroredTool{name: t.Name, up: t.Name, key: string(key)}
		if p.names.hides(t.Name) {
			fmt.Fprintf(p.log, "agentvalues: the downstream tool %q is hidden by the proxy's own\n", t.Name)
		} else if def, schema, err := mirror(t, m.up, !p.originalSchemas, func(why string) {
			fmt.Fprintf(p.log, "agentvalues: offering the input schema of %q as it is, without admitting references: %s\n", m.name, why)
		}); def == nil {
			fmt.Fprintf(p.log, "agentvalues: not offering the downstream tool %q: %v\n", t.Name, err)
		} else {
			if err != nil {
				fmt.Fprintf(p.log, "agentvalues: arguments of %q are resolved but left to the downstream server to validate: %v\n", t.Name, err)
			}
			m.def, m.schema = def, schema
		}
		current[t.Name] = m
	}
	for name := range current {
		if !seen[name] {
			delete(current, name)
		}
	}
	p.names.setTools(p, current)
	return nil
}

// addTool registers m upstream. The SDK panics on schemas it rejects; a
// downstream server's tool list is input, so that becomes an error.
func (p *Proxy) addTool(m *mirroredTool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	p.server.AddTool(m.def, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return p.callTool(ctx, req, m)
	})
	return nil
}

// mirror builds the upstream form of a downstream tool, offered as name:
// same title, annotations and input schema (admitting references when
// admit is set; see schema.go); the description gains referenceNote; the
// output schema is dropped, since a previewed result cannot conform to it.
// Arguments are prepared against the original input schema.
//
// A tool whose input schema the proxy cannot compile (one that loads a
// remote $ref, say) is still offered, with a nil schema and a non-nil error
// saying why: its arguments are resolved, and checked for unresolved
// references, but validating them is left to the downstream server.
//
// logUnchanged, when not nil, is told why a schema that was to admit
// references is offered unchanged.
func mirror(t *mcp.Tool, name string, admit bool, logUnchanged func(why string)) (*mcp.Tool, *values.Schema, error) {
	schema, ok := t.InputSchema.(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("input schema is %T, not a JSON object", t.InputSchema)
	}
	switch typ := schema["type"]; typ {
	case "object":
	case nil:
		// Arguments are always an object; say so, as the SDK requires.
		schema = maps.Clone(schema)
		schema["type"] = "object"
	default:
		return nil, nil, fmt.Errorf(`input schema has type %v, not "object"`, typ)
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, nil, fmt.Errorf("input schema: %w", err)
	}
	compiled, cerr := values.CompileSchema(raw)
	if cerr != nil {
		// A nil schema still refuses unresolved references.
		compiled, cerr = nil, fmt.Errorf("compiling its input schema: %w", cerr)
	}
	advertised := raw
	if admit && compiled != nil {
		// Only a schema that compiled is rewritten, and the rewriting kept
		// only if it compiles too.
		if a, err := values.AdmitReferences(raw); err != nil {
			if logUnchanged != nil {
				logUnchanged(strings.TrimPrefix(err.Error(), values.ErrNotRewritten.Error()+": "))
			}
		} else {
			advertised = a
		}
	}
	desc := referenceNote
	if t.Description != "" {
		desc = t.Description + "\n\n" + referenceNote
	}
	return &mcp.Tool{
		Meta:        t.Meta,
		Annotations: t.Annotations,
		Description: desc,
		InputSchema: json.RawMessage(advertised),
		Name:        name,
		Title:       t.Title,
		Icons:       t.Icons,
	}, compiled, cerr
}
