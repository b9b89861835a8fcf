// Package browse is the value browser: a read-only web page, served by
// the proxy or gateway itself at /values beside its MCP endpoint, that
// lists the live sessions and the values each stored, and shows one value
// beside the text the model got for it.
//
//	mux.Handle("/values", browse.Handler(gateway, &browse.Options{Token: token}))
//	mux.Handle("/values/", browse.Handler(gateway, &browse.Options{Token: token}))
//
// The files:
//
//   - browse.go: the handler, its authentication and the headers every
//     answer carries;
//   - api.go: the JSON endpoints the page reads (sessions, handles, a
//     value's description and the text the model saw, its pages, its
//     children, jq queries, downloads);
//   - rows.go: an array of objects paged and sorted by rows;
//   - static/: the page itself (HTML, CSS, JavaScript), embedded: no
//     network, no build step.
//
// # Authentication
//
// With a token (the -listen server's bearer token), every request must
// carry it: as "Authorization: Bearer <token>", as the MCP endpoint takes
// it, or as the cookie a browser gets by opening /values?token=<token>
// once. That request is answered with a redirect to /values (so the token
// leaves the address bar and the history) and sets the cookie: HttpOnly
// (no script reads it), SameSite=Strict (no other site's page sends it),
// Path=/values, Secure over TLS, for the browser's session. The cookie
// holds an HMAC of the token, not the token: it opens the browser, never
// the MCP endpoint. A request without either is answered 401. Without a
// token, as the MCP endpoint, the page is open to whoever can connect;
// then a request must name the listener in its Host header (an IP, or
// localhost, and the listener's port), so that a page of another site
// cannot read it through a DNS name pointed at 127.0.0.1.
//
// # Safety
//
// Values are data. The page builds every element from the value's text
// with textContent (never innerHTML); every answer carries a
// Content-Security-Policy that allows only the page's own script and
// style files (no inline script, no eval, no other origin, no frames) and
// X-Content-Type-Options: nosniff; JSON answers are application/json and
// downloads are attachments of type application/octet-stream.
//
// # Bounds
//
// The page never holds a whole large value: it is paged on the server,
// through the store's own paging ([values.SessionValues.Read],
// [values.SessionValues.Items]): text and JSON in pages of at most
// [PageBytes], a table in pages of at most [MaxRows] rows, a tree in
// pages of [MaxChildren] children, a child of more than [InlineChild]
// bytes opened on demand. A table is sorted on the server over all its
// rows when it has at most [MaxSortRows] (see rows.go); a query's result
// is shown up to [QueryShown] bytes. Queries run as query_value runs them,
// with the same bounds, and store nothing.
package browse

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"io/fs"
	"net"
	"net/http"
	"strings"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/mcpproxy"
)

//go:embed static
var static embed.FS

// A Source is what the browser shows: a [mcpproxy.Proxy] or a
// [mcpproxy.Gateway].
type Source interface {
	Sessions() []mcpproxy.SessionInfo
	Notes(*values.SessionValues) []mcpproxy.Note
	Totals() mcpproxy.Stats
}

// Options configures [Handler]. A nil *Options means no token.
type Options struct {
	// Token, when not empty, is the bearer token every request must carry
	// (see the package documentation): the MCP endpoint's.
	Token string
}

// CookieName is the cookie that /values?token=… sets.
const CookieName = "agentvalues_browse"

// securityHeaders are set on every answer (see Safety in the package
// documentation).
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
		"base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
	"X-Content-Type-Options": "nosniff",
	"Referrer-Policy":        "no-referrer",
	"X-Frame-Options":        "DENY",
	"Cache-Control":          "no-store",
}

// Handler returns the value browser over src, to be mounted at "/values"
// and "/values/". It is read-only and safe for concurrent use.
func Handler(src Source, opts *Options) http.Handler {
	if opts == nil {
		opts = &Options{}
	}
	h := &handler{src: src, sorts: newSortCache()}
	if opts.Token != "" {
		h.token = sha256.Sum256([]byte(opts.Token))
		h.cookie = cookieValue(opts.Token)
		h.auth = true
	}
	files, _ := fs.Sub(static, "static")
	h.files = http.FileServer(http.FS(files))
	return h
}

type handler struct {
	src    Source
	auth   bool
	token  [sha256.Size]byte // of the token
	cookie string            // the cookie's value for the token
	files  http.Handler
	sorts  *sortCache
}

// cookieValue is the value of the cookie for token: an HMAC of a fixed
// label under the token, so that the cookie does not carry the token.
func cookieValue(token string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("agentvalues value browser cookie"))
	return hex.EncodeToString(m.Sum(nil))
}

func (h *handler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	for k, v := range securityHeaders {
		w.Header().Set(k, v)
	}
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "the value browser is read-only: GET only", http.StatusMethodNotAllowed)
		return
	}
	if !h.auth && !hostIsListener(req) {
		http.Error(w, "the value browser serves requests that name this listener in their Host header (its address, or localhost)", http.StatusForbidden)
		return
	}
	if h.auth {
		if tok := req.URL.Query().Get("token"); tok != "" && req.URL.Path == "/values" {
			h.login(w, req, tok)
			return
		}
		if !h.authorized(req) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="mcp"`)
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte("401 Unauthorized: the value browser requires the server's bearer token.\n" +
				"Open /values?token=<token> once in this browser (it sets a cookie and takes the token out of the address), " +
				"or send Authorization: Bearer <token>.\n"))
			return
		}
	}
	path := strings.TrimPrefix(req.URL.Path, "/values")
	switch {
	case path == "" || path == "/":
		h.serveFile(w, req, "/")
	case strings.HasPrefix(path, "/api/"):
		h.api(w, req, strings.TrimPrefix(path, "/api/"))
	case strings.HasPrefix(path, "/static/"):
		h.serveFile(w, req, strings.TrimPrefix(path, "/static"))
	default:
		http.NotFound(w, req)
	}
}

// serveFile serves the embedded file at name ("/" for the page).
func (h *handler) serveFile(w http.ResponseWriter, req *http.Request, name string) {
	r := req.Clone(req.Context())
	r.URL.Path = name
	h.files.ServeHTTP(w, r)
}

// login answers /values?token=tok: with the token, a redirect to /values
// that sets the cookie; else 401.
func (h *handler) login(w http.ResponseWriter, req *http.Request, tok string) {
	d := sha256.Sum256([]byte(tok))
	if subtle.ConstantTimeCompare(d[:], h.token[:]) != 1 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="mcp", error="invalid_token"`)
		http.Error(w, "401 Unauthorized: the token is not this server's", http.StatusUnauthorized)
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: h.cookie, Path: "/values",
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: req.TLS != nil,
	})
	http.Redirect(w, req, "/values", http.StatusSeeOther)
}

// authorized reports whether req carries the bearer token or the cookie.
func (h *handler) authorized(req *http.Request) bool {
	if a := req.Header.Get("Authorization"); a != "" {
		scheme, tok, _ := strings.Cut(strings.TrimSpace(a), " ")
		d := sha256.Sum256([]byte(strings.TrimSpace(tok)))
		return strings.EqualFold(scheme, "Bearer") && subtle.ConstantTimeCompare(d[:], h.token[:]) == 1
	}
	c, err := req.Cookie(CookieName)
	return err == nil && subtle.ConstantTimeCompare([]byte(c.Value), []byte(h.cookie)) == 1
}

// hostIsListener reports whether the Host of req names the address it
// came in on, or localhost at its port.
func hostIsListener(req *http.Request) bool {
	local, ok := req.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return false
	}
	_, port, err := net.SplitHostPort(local.String())
	if err != nil {
		return false
	}
	host, hport, err := net.SplitHostPort(req.Host)
	if err != nil {
		host, hport = req.Host, "80"
	}
	if hport != port {
		return false
	}
	lhost, _, _ := net.SplitHostPort(local.String())
	return strings.EqualFold(host, "localhost") || strings.Trim(host, "[]") == lhost
}
