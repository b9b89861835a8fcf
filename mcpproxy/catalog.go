package mcpproxy

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"sync"
	"time"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/internal/mcpresult"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Prompts and resources are offered upstream as the downstream server lists
// them, and followed through its list_changed notifications like its
// tools. A prompt is named as a tool is (its own name, or SERVER__PROMPT
// in a gateway where two servers offer it: gateway_names.go). A resource keeps its URI, which names what
// it is; when two servers of a gateway list the same URI, the one added to
// the gateway first keeps it and the other's is left out with a line in
// the log. A resource read is stored like a tool result: each text or
// blob under a handle, named in the contents' _meta, and a text over the
// threshold comes back as its preview and hint. Resource templates are
// offered the same way, each keeping its URI template; a read of a URI that
// two servers' templates match goes to the server the SDK's server picks
// (the first template that matches, in no documented order), so a gateway
// over servers with overlapping templates should give them distinct URI
// schemes.

// uriOwners records which proxy of a gateway offers each resource URI.
type uriOwners struct {
	mu    sync.Mutex
	byURI map[string]*Proxy
}

// claim gives uri to p unless another proxy has it, and reports whether p
// has it now.
func (o *uriOwners) claim(uri string, p *Proxy) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.byURI == nil {
		o.byURI = make(map[string]*Proxy)
	}
	if owner, ok := o.byURI[uri]; ok && owner != p {
		return false
	}
	o.byURI[uri] = p
	return true
}

// release takes uri back from p, if p has it.
func (o *uriOwners) release(uri string, p *Proxy) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.byURI[uri] == p {
		delete(o.byURI, uri)
	}
}

// syncCatalog makes the upstream prompts and resources match those the
// downstream server lists, for the capabilities it declared. Like
// syncTools, only one runs at a time.
func (p *Proxy) syncCatalog(ctx context.Context) error {
	init := p.current().down.InitializeResult()
	if init == nil || init.Capabilities == nil {
		return nil
	}
	if init.Capabilities.Prompts != nil {
		if err := p.syncPrompts(ctx); err != nil {
			return err
		}
	}
	if init.Capabilities.Resources != nil {
		return p.syncResources(ctx)
	}
	return nil
}

func (p *Proxy) syncPrompts(ctx context.Context) error {
	listed := map[string]*mcp.Prompt{}
	keys := map[string]string{}
	for pr, err := range p.current().down.Prompts(ctx, nil) {
		if err != nil {
			return fmt.Errorf("mcpproxy: listing the downstream prompts: %w", err)
		}
		if pr == nil || listed[pr.Name] != nil {
			continue
		}
		key, _ := json.Marshal(pr)
		listed[pr.Name], keys[pr.Name] = pr, string(key)
	}
	p.names.setPrompts(p, listed, keys)
	return nil
}

// addPrompt offers the downstream prompt pr upstream under the name up.
// The SDK panics on a prompt it rejects; a downstream server's list is
// input, so that becomes an error.
func (p *Proxy) addPrompt(pr *mcp.Prompt, up string) (err error) {
	defer func() {
		if e := recover(); e != nil {
			err = fmt.Errorf("%v", e)
		}
	}()
	def := *pr
	def.Name = up
	name := pr.Name
	p.server.AddPrompt(&def, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		if err := p.downstreamErr(); err != nil {
			return nil, err
		}
		params := *req.Params
		params.Name = name
		params.Meta = p.requestMeta(params.Meta) // the protocol's own keys are each side's
		ctx, end := p.begin(ctx, req.Session)
		defer end()
		res, err := p.current().down.GetPrompt(ctx, &params)
		if err == nil && res != nil {
			res.Meta = forwardMeta(res.Meta) // and the proxy's (ownMetaPrefix) its own
			for _, m := range res.Messages {
				if m != nil {
					dropOwnKeys([]mcp.Content{m.Content})
				}
			}
		}
		return res, err
	})
	return nil
}

func (p *Proxy) syncResources(ctx context.Context) error {
	err := syncByURI(p, "resource", p.resources, p.current().down.Resources(ctx, nil),
		func(r *mcp.Resource) string { return r.URI }, p.addResource, p.server.RemoveResources)
	if err != nil {
		return err
	}
	return syncByURI(p, "resource template", p.templates, p.current().down.ResourceTemplates(ctx, nil),
		func(t *mcp.ResourceTemplate) string { return t.URITemplate }, p.addResourceTemplate, p.server.RemoveResourceTemplates)
}

// syncByURI makes the upstream resources (or resource templates) of p
// match those the downstream server lists: have maps the URI of each one
// listed so far to its JSON, or to "" for one left out; add offers one
// upstream, remove takes some away. A URI another server of the gateway
// offers is left out, and said so once.
func syncByURI[T any](p *Proxy, kind string, have map[string]string, listed iter.Seq2[T, error], uriOf func(T) string, add func(T) error, remove func(...string)) error {
	seen := map[string]bool{}
	for r, err := range listed {
		if err != nil {
			return fmt.Errorf("mcpproxy: listing the downstream %ss: %w", kind, err)
		}
		key, _ := json.Marshal(r)
		if string(key) == "null" {
			continue
		}
		uri := uriOf(r)
		if seen[uri] {
			continue
		}
		seen[uri] = true
		if have[uri] == string(key) {
			continue
		}
		if !p.stores.owners.claim(kind+" "+uri, p) {
			if _, logged := have[uri]; !logged {
				fmt.Fprintf(p.log, "agentvalues: not offering the %s %q of %s: another server offers the same URI\n", kind, uri, p.serverName())
			}
			have[uri] = "" // left out, and said so once
			continue
		}
		if err := add(r); err != nil {
			fmt.Fprintf(p.log, "agentvalues: not offering the %s %q of %s: %v\n", kind, uri, p.serverName(), err)
			p.stores.owners.release(kind+" "+uri, p)
			have[uri] = ""
			continue
		}
		have[uri] = string(key)
	}
	var removed []string
	for uri, key := range have {
		if !seen[uri] {
			if key != "" {
				removed = append(removed, uri)
				p.stores.owners.release(kind+" "+uri, p)
			}
			delete(have, uri)
		}
	}
	if len(removed) > 0 {
		remove(removed...)
	}
	return nil
}

// addResource offers r upstream. The SDK panics on a URI it rejects; a
// downstream server's list is input, so that becomes an error.
func (p *Proxy) addResource(r *mcp.Resource) (err error) {
	defer func() {
		if e := recover(); e != nil {
			err = fmt.Errorf("%v", e)
		}
	}()
	up := *r
	p.server.AddResource(&up, p.readResource)
	return nil
}

// addResourceTemplate offers t upstream, as addResource does a resource.
func (p *Proxy) addResourceTemplate(t *mcp.ResourceTemplate) (err error) {
	defer func() {
		if e := recover(); e != nil {
			err = fmt.Errorf("%v", e)
		}
	}()
	up := *t
	p.server.AddResourceTemplate(&up, p.readResource)
	return nil
}

// readResource reads a resource from the downstream server and presents
// the result.
func (p *Proxy) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (out *mcp.ReadResourceResult, err error) {
	ctx, o := p.observe(ctx, "resources/read", req.Params.URI, req.Params.Meta) // telemetry.go
	vals := p.stores.of(req.Session)
	defer func() { o.endRead(ctx, vals, out, err) }()
	if err := p.downstreamErr(); err != nil {
		return nil, err
	}
	params := *req.Params
	downCtx, meta := o.sending(ctx, p.requestMeta(params.Meta))
	params.Meta = meta
	res, err := p.current().down.ReadResource(downCtx, &params)
	o.answered(err)
	if err != nil {
		return nil, err
	}
	return p.presentResource(vals, res, p.noteServer(p.current())), nil

}

// presentResource stores each text and blob of a resource read, names its
// handle in the contents' _meta, and puts the preview and hint in place of
// a text over the threshold (a blob over it is dropped from the result,
// its preview given as text: the bytes stay in the store).
func (p *Proxy) presentResource(vals *values.SessionValues, res *mcp.ReadResourceResult, server string) *mcp.ReadResourceResult {
	out := *res
	out.Meta = forwardMeta(res.Meta)
	out.Contents = make([]*mcp.ResourceContents, 0, len(res.Contents))
	for _, c := range res.Contents {
		if c == nil {
			continue
		}
		rc := *c
		var h string
		switch {
		case len(c.Blob) > 0:
			h = vals.PutOutput(c.Blob)
			if p.threshold < 0 || len(c.Blob) > p.threshold {
				rc.Blob, rc.Text, rc.MIMEType = nil, mcpresult.Preview(vals, h, ""), "text/plain"
			}
		default:
			h = vals.PutOutput([]byte(c.Text))
			if p.threshold < 0 || len(c.Text) > p.threshold {
				rc.Text, rc.MIMEType = mcpresult.Preview(vals, h, ""), "text/plain"
			}
		}
		rc.Meta = forwardMeta(c.Meta)
		if rc.Meta == nil {
			rc.Meta = mcp.Meta{}
		}
		rc.Meta[MetaHandle] = h
		out.Contents = append(out.Contents, &rc)
		p.stores.note(vals, Note{Handle: h, Tool: "resources/read " + c.URI, Server: server, Time: time.Now(),
			Previewed: rc.Text != c.Text || len(c.Blob) > 0 && rc.Blob == nil, Returned: valueSize(vals, h), Shown: len(rc.Text) + len(rc.Blob)})
	}
	return &out
}
