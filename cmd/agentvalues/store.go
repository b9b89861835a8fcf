package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/mcpproxy"
	"github.com/agentvalues/values/store"
	"github.com/agentvalues/values/store/redisstore"
)

// storeFlags are the -store and -session flags of proxy and gateway.
type storeFlags struct {
	spec    *string
	session *string
}

func addStoreFlags(fs *flag.FlagSet) storeFlags {
	return storeFlags{
		spec:    fs.String("store", "", "where values persist: `dir:PATH`, redis://HOST:PORT/DB, rediss://…, redis+cluster://HOST:PORT?addr=HOST:PORT; empty: in memory"),
		session: fs.String("session", "default", "the session `ID` values persist under with -store on stdio; a later run with the same ID continues it (its handles stay valid), on this machine or, with Redis, any other (with -listen each HTTP session persists under its own ID)"),
	}
}

// A durable is a durable store the command opened, closed when it ends.
type durable interface {
	values.Durable
	io.Closer
}

// durable opens the durable store -store names, or returns nil when values
// stay in memory.
func (f storeFlags) durable() (durable, error) {
	spec := *f.spec
	switch {
	case spec == "" || spec == "memory":
		return nil, nil
	case strings.HasPrefix(spec, "dir:"):
		return store.OpenDir(strings.TrimPrefix(spec, "dir:"))
	case strings.HasPrefix(spec, "redis://"), strings.HasPrefix(spec, "rediss://"), strings.HasPrefix(spec, "redis+cluster://"):
		return redisstore.OpenURL(spec)
	}
	return nil, fmt.Errorf("%w: -store %q: want dir:PATH, redis://HOST:PORT/DB, rediss://… or redis+cluster://…", errUsage, spec)
}

// options returns the mcpproxy.Options of proxy and gateway for their
// store, each previewing within maxPreview bytes and telling log of what it
// could not persist; close the durable store with the func returned. On
// stdio (listen false): the durable store's session -session, or one store
// in memory. With listen: a store per HTTP session, in the durable store
// under the session's ID when -store names one (so that a session a client
// names again after a restart, or at another process on the same store,
// continues with its values: see mcpproxy.Options.SessionStore), else in
// memory.
func (f storeFlags) options(listen bool, maxPreview int, log io.Writer) (*mcpproxy.Options, func(), error) {
	d, err := f.durable()
	if err != nil {
		return nil, nil, err
	}
	closeStore := func() {}
	if d != nil {
		closeStore = func() { d.Close() }
	}
	opts := &mcpproxy.Options{Log: log}
	switch {
	case listen:
		opts.PerSession, opts.SessionOptions = true, []values.Option{values.WithMaxPreview(maxPreview)}
		if d != nil {
			opts.SessionStore = func(id string, sessionOpts ...values.Option) (*values.SessionValues, error) {
				return values.Open(d, id, append(sessionOpts, storeErrors(log))...)
			}
		}
	case d != nil:
		vals, err := values.Open(d, *f.session, values.WithMaxPreview(maxPreview), storeErrors(log))
		if err != nil {
			d.Close()
			return nil, nil, err
		}
		opts.Values = vals
	default:
		opts.Values = values.New(values.WithMaxPreview(maxPreview))
	}
	return opts, closeStore, nil
}

// storeErrors returns the WithStoreErrors option that reports on log each
// value that could not be persisted (it stays in memory).
func storeErrors(log io.Writer) values.Option {
	return values.WithStoreErrors(func(h string, err error) {
		fmt.Fprintf(log, "agentvalues: %s is kept in memory only: %v\n", h, err)
	})
}
