package mcpproxy

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Bearer-token authentication (HTTPOptions.Token). When a token is set,
// every request, GET and DELETE included, must carry it as
// "Authorization: Bearer <token>" (the scheme's name in any case, as RFC
// 7235 has it); one that does not is answered 401 with
// "WWW-Authenticate: Bearer" (RFC 6750: with error="invalid_token" when a
// token was sent but is not the one) and a JSON-RPC error body saying
// which, before anything else of the handler reads it: it takes no place
// under MaxRequests or MaxSessions and its body is not read. The tokens
// are compared in constant time, through their SHA-256 digests, so that
// neither the token's bytes nor its length can be learnt by timing.
//
// One static token is what a gateway on a host or in a cluster needs in
// front of its clients; a server that needs users, scopes or OAuth wraps
// the handler in the SDK's auth.RequireBearerToken instead (the session
// layer then binds each session to the user who opened it).

// ErrBadToken is returned by [CheckToken] for a token that cannot be sent
// in an Authorization header.
var ErrBadToken = errors.New("mcpproxy: bad bearer token")

// CheckToken reports whether token can serve as HTTPOptions.Token: it is
// not empty and is printable ASCII without spaces (what an Authorization
// header carries as it is). Its error wraps [ErrBadToken].
func CheckToken(token string) error {
	if token == "" {
		return fmt.Errorf("%w: it is empty", ErrBadToken)
	}
	for i := 0; i < len(token); i++ {
		if c := token[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("%w: byte %d is %q: a token is printable ASCII without spaces", ErrBadToken, i, c)
		}
	}
	return nil
}

// tokenAuth checks the bearer token of requests; the zero value (no
// token) admits every request.
type tokenAuth struct {
	digest [sha256.Size]byte // of the token
	on     bool
}

func newTokenAuth(token string) tokenAuth {
	if token == "" {
		return tokenAuth{}
	}
	return tokenAuth{digest: sha256.Sum256([]byte(token)), on: true}
}

// refusal returns why req is refused, and the WWW-Authenticate challenge to
// answer it with, or "" when it carries the token (or none is required).
func (a tokenAuth) refusal(req *http.Request) (why, challenge string) {
	if !a.on {
		return "", ""
	}
	const challengeMissing = `Bearer realm="mcp"`
	got := req.Header.Values("Authorization")
	if len(got) == 0 {
		return "Unauthorized: the request has no Authorization header: this server requires Authorization: Bearer <token>", challengeMissing
	}
	scheme, token, _ := strings.Cut(strings.TrimSpace(got[0]), " ")
	if len(got) > 1 || !strings.EqualFold(scheme, "Bearer") {
		return "Unauthorized: the Authorization header is not one Bearer token: this server requires Authorization: Bearer <token>", challengeMissing
	}
	d := sha256.Sum256([]byte(strings.TrimSpace(token)))
	if subtle.ConstantTimeCompare(d[:], a.digest[:]) != 1 {
		return "Unauthorized: the bearer token is not this server's", `Bearer realm="mcp", error="invalid_token"`
	}
	return "", ""
}

// refuseUnauthorized answers a request without the token: 401 with the
// challenge and a JSON-RPC error saying why.
func refuseUnauthorized(w http.ResponseWriter, why, challenge string) {
	refuseUnread(w)
	w.Header().Set("WWW-Authenticate", challenge)
	writeHTTPError(w, http.StatusUnauthorized, nil, codeUnauthorized, why, 0)
}

// codeUnauthorized is the JSON-RPC error code of a request refused for its
// missing or wrong bearer token, in the range JSON-RPC reserves for
// implementation-defined server errors.
const codeUnauthorized = -32052

// RequireToken returns h behind the bearer token token, checked as
// [Proxy.HTTPHandler] checks HTTPOptions.Token: a request without it is
// answered 401 with the same challenge and body, and h never sees it. An
// empty token returns h itself. It is for the other routes of a listener
// that serves MCP (the gateway's /metrics), so that one token guards all.
func RequireToken(token string, h http.Handler) http.Handler {
	a := newTokenAuth(token)
	if !a.on {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if why, challenge := a.refusal(req); why != "" {
			refuseUnauthorized(w, why, challenge)
			return
		}
		h.ServeHTTP(w, req)
	})
}
