package mcpproxy

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/agentvalues/values/mcpproxy/internal/wire"
)

// The Origin header. Browsers send it; other clients do not. The MCP
// transport specification asks a server to validate it on every request,
// and to answer 403 to an invalid one: a page that a browser loaded from
// anywhere can otherwise reach a server on the user's machine or network
// by DNS rebinding (its own host name, re-resolved to the server's
// address, makes the server same-origin to it). The SDK's handler refuses
// a request that reached a loopback address with another Host than a
// loopback one; on any other address Host is whatever the page's name is,
// and proves nothing.
//
// A request without Origin is served. One with Origin is served when the
// origin is the listener itself — scheme http (https over TLS), the port
// the request reached, and as host the address it reached, written as an
// IP address, or, for a loopback address, any loopback address or
// "localhost" — or is one of HTTPOptions.AllowedOrigins (compared without
// case and without the scheme's default port; "*" admits all). A host
// name other than localhost is never the listener's own: a page served
// under a name must be allowed by name.

// badOrigin returns why req's Origin is refused, or "" when it is not.
func (h *httpBounds) badOrigin(req *http.Request) string {
	origin := req.Header.Get("Origin")
	if origin == "" && len(req.Header.Values("Origin")) == 0 {
		return ""
	}
	if slices.Contains(h.cfg.origins, "*") {
		return ""
	}
	norm, ok := normalizeOrigin(origin)
	if ok {
		for _, a := range h.cfg.origins {
			if n, ok := normalizeOrigin(a); ok && n == norm {
				return ""
			}
		}
		if isOwnOrigin(req, norm) {
			return ""
		}
	} else if slices.Contains(h.cfg.origins, origin) { // "null", say
		return ""
	}
	return fmt.Sprintf("Forbidden: the Origin %s is not allowed: a browser page may call this server only from the server's own origin or from an origin it is told to allow (DNS rebinding protection)", wire.ClipText(origin))
}

// normalizeOrigin returns origin as scheme://host[:port] in lower case,
// without the scheme's default port, or false if it is not of that form.
func normalizeOrigin(origin string) (string, bool) {
	u, err := url.Parse(strings.TrimSpace(origin))
	if err != nil || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return "", false
	}
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host, true
}

// isOwnOrigin reports whether the normalized origin is the address req
// reached (see the top of this file).
func isOwnOrigin(req *http.Request, origin string) bool {
	local, ok := req.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil {
		return false
	}
	at, err := netip.ParseAddrPort(local.String())
	if err != nil {
		return false
	}
	u, _ := url.Parse(origin)
	scheme := "http"
	if req.TLS != nil {
		scheme = "https"
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	if u.Scheme != scheme || port != fmt.Sprint(at.Port()) {
		return false
	}
	ip := at.Addr().Unmap()
	host := u.Hostname()
	if ip.IsLoopback() && host == "localhost" {
		return true
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	addr = addr.Unmap()
	return addr == ip || (ip.IsLoopback() && addr.IsLoopback())
}
