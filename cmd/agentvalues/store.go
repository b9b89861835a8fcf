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
		session: fs.String("session", "default", "the session `ID` values persist under with -store; a later run with the same ID continues it (its handles stay valid), on this machine or, with Redis, any other"),
	}
}

// open returns the store the flags name, or nil when values stay in memory,
// and the func that closes the durable store. listen says whether the
// command serves HTTP, where each session has its own store in memory.
func (f storeFlags) open(listen bool, opts ...values.Option) (*values.SessionValues, func(), error) {
	spec := *f.spec
	if spec == "" || spec == "memory" {
		return nil, func() {}, nil
	}
	if listen {
		return nil, nil, fmt.Errorf("%w: -store is for stdio; with -listen every HTTP session has a store of its own, in memory", errUsage)
	}
	var d interface {
		values.Durable
		io.Closer
	}
	var err error
	switch {
	case strings.HasPrefix(spec, "dir:"):
		d, err = store.OpenDir(strings.TrimPrefix(spec, "dir:"))
	case strings.HasPrefix(spec, "redis://"), strings.HasPrefix(spec, "rediss://"), strings.HasPrefix(spec, "redis+cluster://"):
		d, err = redisstore.OpenURL(spec)
	default:
		return nil, nil, fmt.Errorf("%w: -store %q: want dir:PATH, redis://HOST:PORT/DB, rediss://… or redis+cluster://…", errUsage, spec)
	}
	if err != nil {
		return nil, nil, err
	}
	vals, err := values.Open(d, *f.session, opts...)
	if err != nil {
		d.Close()
		return nil, nil, err
	}
	return vals, func() { d.Close() }, nil
}

// options returns the mcpproxy.Options of proxy and gateway for their
// store: with listen, a store per HTTP session in memory; else the durable
// store the flags name, or one in memory; each previews within maxPreview
// bytes and tells log of what it could not persist. Close the store with
// the func returned.
func (f storeFlags) options(listen bool, maxPreview int, log io.Writer) (*mcpproxy.Options, func(), error) {
	vals, closeStore, err := f.open(listen, values.WithMaxPreview(maxPreview), storeErrors(log))
	if err != nil {
		return nil, nil, err
	}
	opts := &mcpproxy.Options{Log: log}
	switch {
	case listen:
		opts.PerSession, opts.SessionOptions = true, []values.Option{values.WithMaxPreview(maxPreview)}
	case vals != nil:
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
