package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentvalues/values/mcpproxy"
)

// listenOptions parses args as proxy's HTTP flags do and returns the
// options for -listen addr, with the environment env.
func listenOptions(t *testing.T, addr string, env map[string]string, args ...string) (*mcpproxy.HTTPOptions, error) {
	t.Helper()
	fs := flag.NewFlagSet("proxy", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := addHTTPFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return f.options(addr, -1, func(k string) string { return env[k] })
}

// TestListenNeedsToken: without a bearer token, -listen refuses an
// address that other machines may reach (every interface, a LAN address,
// a host name other than localhost) with a usage error saying how to set
// one, and serves a loopback one; with a token (from AGENTVALUES_TOKEN or
// -token-file, the file first) or -insecure-no-auth it serves any.
func TestListenNeedsToken(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	os.WriteFile(tokenFile, []byte("  from-file\n"), 0o600)
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte("\n"), 0o600)
	spaced := filepath.Join(dir, "spaced")
	os.WriteFile(spaced, []byte("two words\n"), 0o600)
	env := map[string]string{tokenEnv: "from-env"}

	for _, addr := range []string{"0.0.0.0:8080", "[::]:8080", "192.168.1.10:8080", "[fe80::1]:8080", "example.com:8080", "myhost:0"} {
		_, err := listenOptions(t, addr, nil)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "no bearer token is set: set AGENTVALUES_TOKEN to a secret (or pass -token-file FILE)") ||
			!strings.Contains(err.Error(), "pass -insecure-no-auth") {
			t.Errorf("-listen %s without a token: %v, want a usage error saying how to set one", addr, err)
		}
	}
	if _, err := listenOptions(t, "0.0.0.0:8080", nil); err == nil || !strings.Contains(err.Error(), "-listen 0.0.0.0:8080 serves every network interface") {
		t.Errorf("-listen 0.0.0.0:8080: %v, want it to say every interface", err)
	}
	for _, tc := range []struct {
		name, addr string
		env        map[string]string
		args       []string
		token      string
	}{
		{"port", "8080", nil, nil, ""},
		{"colon port", ":8080", nil, nil, ""},
		{"127.0.0.1", "127.0.0.1:8080", nil, nil, ""},
		{"127.0.0.2", "127.0.0.2:0", nil, nil, ""},
		{"localhost", "localhost:8080", nil, nil, ""},
		{"::1", "[::1]:8080", nil, nil, ""},
		{"env", "0.0.0.0:8080", env, nil, "from-env"},
		{"file", "192.168.1.10:8080", nil, []string{"-token-file", tokenFile}, "from-file"},
		{"file over env", "0.0.0.0:8080", env, []string{"-token-file", tokenFile}, "from-file"},
		{"env on loopback", "8080", env, nil, "from-env"},
		{"insecure", "0.0.0.0:8080", nil, []string{"-insecure-no-auth"}, ""},
	} {
		opts, err := listenOptions(t, tc.addr, tc.env, tc.args...)
		if err != nil || opts.Token != tc.token {
			t.Errorf("%s: %+v %v, want token %q", tc.name, opts, err, tc.token)
		}
	}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
		bad  bool // wraps mcpproxy.ErrBadToken
	}{
		{"missing file", []string{"-token-file", filepath.Join(dir, "none")}, nil, "-token-file: open", false},
		{"empty file", []string{"-token-file", empty}, nil, "is empty: it should hold the bearer token", false},
		{"spaced file", []string{"-token-file", spaced}, nil, "the token of -token-file " + spaced, true},
		{"spaced env", nil, map[string]string{tokenEnv: "a b"}, "the token of $AGENTVALUES_TOKEN", true},
	} {
		_, err := listenOptions(t, "8080", tc.env, tc.args...)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.want) || errors.Is(err, mcpproxy.ErrBadToken) != tc.bad {
			t.Errorf("%s: %v, want a usage error with %q", tc.name, err, tc.want)
		}
	}
	if opts, err := listenOptions(t, "", nil, "-token-file", filepath.Join(dir, "none")); opts != nil || err != nil {
		t.Errorf("without -listen: %v %v, want nothing", opts, err)
	}
}

// TestListenNeedsTokenCommand: proxy and gateway refuse -listen 0.0.0.0
// without a token before they start anything, exiting 2 with the error.
func TestListenNeedsTokenCommand(t *testing.T) {
	t.Setenv(tokenEnv, "")
	for _, args := range [][]string{
		{"proxy", "--listen", "0.0.0.0:0", "--", "false"},
		{"gateway", "--config", filepath.Join(t.TempDir(), "none.json"), "--listen", "[::]:0"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(args, strings.NewReader(""), &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), "serves every network interface, which other machines may reach, and no bearer token is set: set AGENTVALUES_TOKEN") {
			t.Errorf("%s: exit %d\n%s", args, code, stderr.String())
		}
	}
}
