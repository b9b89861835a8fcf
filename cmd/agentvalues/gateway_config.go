package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/agentvalues/values/mcpproxy"
)

// maxConfig bounds the config file a gateway reads.
const maxConfig = 4 << 20

// A serverConfig is one entry of mcpServers: a command to start (stdio),
// or the URL of a Streamable HTTP or SSE server.
type serverConfig struct {
	Type     string            `json:"type"` // "stdio", "http" (or "streamable-http") or "sse"; empty: by command or url
	Command  string            `json:"command"`
	Args     []string          `json:"args"`
	Env      map[string]string `json:"env"`
	Cwd      string            `json:"cwd"`
	URL      string            `json:"url"`
	Headers  map[string]string `json:"headers"`
	Disabled bool              `json:"disabled"`
	// Prefix offers every tool and prompt of this server as SERVER__NAME
	// (mcpproxy.Downstream.PrefixNames); by default only names that two
	// servers offer are.
	Prefix bool `json:"prefix"`
}

// A gatewayServer is an entry of the config file the gateway can use: its
// variables expanded, its kind known.
type gatewayServer struct {
	name   string // what its tools are offered under: NAME__TOOL (see serverNames)
	config string // its name in the file
	kind   string // "stdio", "http" or "sse"
	serverConfig
}

// readGatewayConfig reads the mcpServers file that Claude Desktop, Claude
// Code, Cursor and other clients read, and returns the entries the gateway
// can use, in the order of their names in the file. Members the gateway
// does not know are ignored, as those clients ignore each other's, and so
// are entries with "disabled": true.
//
// An entry the gateway cannot use is left out, with one line on log
// naming it and saying why: one that is not an object of the expected
// fields, a variable without a value (see expandVars), an unknown "type",
// a stdio entry without "command", an HTTP or SSE one without an http or
// https "url". The file itself is an error only when it cannot be read, is
// over maxConfig, is not JSON, has no "mcpServers" object, or has no entry
// the gateway can use. lookup is os.LookupEnv but in tests.
func readGatewayConfig(path string, lookup func(string) (string, bool), log io.Writer) ([]gatewayServer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfig+1))
	if err != nil {
		return nil, fmt.Errorf("gateway: reading %s: %w", path, err)
	}
	if len(data) > maxConfig {
		return nil, fmt.Errorf("gateway: %s is over %d bytes; is it the config file?", path, maxConfig)
	}
	var file struct {
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		return nil, fmt.Errorf("gateway: %s is not an mcpServers config: %w", path, err)
	}
	if file.MCPServers == nil {
		return nil, fmt.Errorf(`gateway: %s has no "mcpServers" object`, path)
	}
	var servers []gatewayServer
	for _, name := range slices.Sorted(maps.Keys(file.MCPServers)) {
		s, err := configEntry(file.MCPServers[name], lookup)
		switch {
		case err != nil:
			fmt.Fprintf(log, "agentvalues: gateway: server %q left out: %v\n", name, err)
		case !s.Disabled:
			servers = append(servers, *s)
			servers[len(servers)-1].config = name
		}
	}
	if len(servers) == 0 {
		return nil, fmt.Errorf("gateway: %s names no server the gateway can start", path)
	}
	for i, name := range serverNames(serverConfigNames(servers)) {
		if servers[i].name = name; name != servers[i].config {
			fmt.Fprintf(log, "agentvalues: gateway: server %q is offered as %s (its tools as %s%sTOOL)\n", servers[i].config, name, name, mcpproxy.ToolSeparator)
		}
	}
	return servers, nil
}

func serverConfigNames(servers []gatewayServer) []string {
	names := make([]string, len(servers))
	for i, s := range servers {
		names[i] = s.config
	}
	return names
}

// configEntry decodes one entry of mcpServers, expands its variables and
// checks it; the error says why the gateway cannot use it. A disabled
// entry is returned as it is, unchecked.
func configEntry(raw json.RawMessage, lookup func(string) (string, bool)) (*gatewayServer, error) {
	var s serverConfig
	if err := json.Unmarshal(raw, &s); err != nil {
		if bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
			return nil, fmt.Errorf("not a server entry: %w", err)
		}
		return nil, fmt.Errorf("not a server entry: want an object")
	}
	if s.Disabled {
		return &gatewayServer{serverConfig: s}, nil
	}
	x := expander{lookup: lookup}
	s.Command = x.expand(s.Command)
	s.Args = slices.Clone(s.Args)
	for i := range s.Args {
		s.Args[i] = x.expand(s.Args[i])
	}
	s.Env, s.Headers = x.expandValues(s.Env), x.expandValues(s.Headers)
	s.URL = x.expand(s.URL)
	if err := x.err(); err != nil {
		return nil, err
	}
	kind, err := s.kind()
	if err != nil {
		return nil, err
	}
	switch kind {
	case "stdio":
		if s.Command == "" {
			return nil, fmt.Errorf(`a stdio server needs "command"`)
		}
	default:
		if s.URL == "" {
			return nil, fmt.Errorf(`%s server needs "url"`, kindName[kind])
		}
		u, err := url.Parse(s.URL)
		if err != nil {
			return nil, fmt.Errorf(`"url": %w`, err)
		}
		if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
			return nil, fmt.Errorf(`"url" %q: want an http:// or https:// URL`, u.Redacted())
		}
	}
	return &gatewayServer{kind: kind, serverConfig: s}, nil
}

// kindName names a server's kind in messages.
var kindName = map[string]string{"stdio": "a stdio", "http": "a Streamable HTTP", "sse": "an SSE"}

// kind is "stdio", "http" or "sse", or an error saying why the entry names
// none of them.
func (s serverConfig) kind() (string, error) {
	switch strings.ToLower(s.Type) {
	case "stdio":
		return "stdio", nil
	case "http", "streamable-http", "streamablehttp", "streamable_http":
		return "http", nil
	case "sse":
		return "sse", nil
	case "":
		switch {
		case s.Command != "" && s.URL != "":
			return "", fmt.Errorf(`it has both "command" and "url"; say which with "type"`)
		case s.Command != "":
			return "stdio", nil
		case s.URL != "":
			return "http", nil
		}
		return "", fmt.Errorf(`it has neither "command" nor "url"`)
	}
	return "", fmt.Errorf(`unknown "type" %q: want "stdio", "http" or "sse"`, s.Type)
}

// An expander expands the variables of an entry's fields (see expandVars),
// remembering the variables that have no value.
type expander struct {
	lookup  func(string) (string, bool)
	missing []string
}

func (x *expander) expand(s string) string {
	out, missing := expandVars(s, x.lookup)
	for _, m := range missing {
		if !slices.Contains(x.missing, m) {
			x.missing = append(x.missing, m)
		}
	}
	return out
}

func (x *expander) expandValues(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = x.expand(v)
	}
	return out
}

// err names the variables without a value, or is nil.
func (x *expander) err() error {
	if len(x.missing) == 0 {
		return nil
	}
	slices.Sort(x.missing)
	vars := make([]string, len(x.missing))
	for i, m := range x.missing {
		vars[i] = "${" + m + "}"
	}
	return fmt.Errorf("%s not set in the gateway's environment, with no default (give one as ${%s:-default})", strings.Join(vars, ", "), x.missing[0])
}

// expandVars expands the variables of s as Claude Code does those of
// .mcp.json: ${VAR} is the value of the environment variable VAR, and
// ${VAR:-default} is VAR's value when VAR is set (even to ""), default
// when it is not. The name is what stands between "${" and the first "}"
// or ":-"; the default runs to the first "}", so it holds no "}" and is
// not itself expanded (${A:-${B}} is "${B" and a "}" when A is unset).
// What expands is not expanded again; $VAR without braces, "${}" and a
// "${" without its "}" are left as they are. missing names the variables
// without a value or a default, in the order met; each is left in the
// result as written.
func expandVars(s string, lookup func(string) (string, bool)) (out string, missing []string) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			break
		}
		end := strings.IndexByte(s[i+2:], '}')
		if end < 0 {
			break
		}
		inner := s[i+2 : i+2+end]
		b.WriteString(s[:i])
		s = s[i+2+end+1:]
		if inner == "" {
			b.WriteString("${}")
			continue
		}
		name, def, hasDef := strings.Cut(inner, ":-")
		if v, ok := lookup(name); ok {
			b.WriteString(v)
		} else if hasDef {
			b.WriteString(def)
		} else {
			missing = append(missing, name)
			b.WriteString("${" + inner + "}")
		}
	}
	b.WriteString(s)
	return b.String(), missing
}

// serverNames returns the names the servers of the config names (in their
// order) are offered under, each one that [mcpproxy.ValidServerName]
// accepts: a name it accepts as it is stays; in another, each run of
// characters other than ASCII letters, digits, '.', '-' and '_' becomes
// one '_' (as does a run of '_', so that "__" stands only between a server
// and its tool), what comes before the first letter or digit is dropped,
// and so is a final '_' ("My Server" is My_Server, "files (old)" is
// files_old, "my__srv" is my_srv); a name with no letter or digit is
// "server". A name taken already, by a name that was valid as it was or
// by an earlier one, gets the first free suffix _2, _3, … ("My_Server"
// stays, and "My Server" after it is My_Server_2).
func serverNames(names []string) []string {
	out := make([]string, len(names))
	taken := make(map[string]bool, len(names))
	for i, n := range names {
		if mcpproxy.ValidServerName(n) == nil {
			out[i], taken[n] = n, true
		}
	}
	for i, n := range names {
		if out[i] != "" {
			continue
		}
		base := sanitizeServerName(n)
		name := base
		for k := 2; taken[name]; k++ {
			name = fmt.Sprintf("%s_%d", base, k)
		}
		out[i], taken[name] = name, true
	}
	return out
}

// sanitizeServerName maps name to one ValidServerName accepts (see
// serverNames).
func sanitizeServerName(name string) string {
	var b strings.Builder
	underscore := true // no '_' first, nor after another
	for _, r := range name {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9', r == '.', r == '-':
			b.WriteRune(r)
			underscore = false
		case !underscore:
			b.WriteByte('_')
			underscore = true
		}
	}
	s := strings.TrimLeftFunc(b.String(), func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	})
	s = strings.TrimRight(s, "_")
	if s == "" {
		return "server"
	}
	return s
}
