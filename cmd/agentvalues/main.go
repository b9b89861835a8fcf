// Command agentvalues brings the values library to people who do not write
// Go.
//
// Usage:
//
//	agentvalues demo [DIR]
//	agentvalues preview [-max-input N] [FILE|-]
//	agentvalues proxy [flags] -- COMMAND [ARGS...]
//	agentvalues gateway [flags] --config FILE
//	agentvalues version
//	agentvalues help [COMMAND]
//
// Every command takes -h (or --help): it prints the command's usage and
// flags on standard output and exits 0. A command line that cannot be run
// (an unknown command or flag, a missing argument) exits 2 with the reason
// and the usage on standard error.
//
// version (also --version or -version) prints the main module's version,
// the git revision the binary was built from (with its time, and
// "modified" when the checkout had changes not committed) and the Go
// version, from the build information the go command writes into the
// binary; "(devel)" and "revision unknown" where it has none.
//
// demo runs a scripted agent loop over real tools on DIR (default: the Go
// installation's src directory) and shows, turn by turn, what the model
// sends, what the tool receives and what enters the transcript, then how
// many bytes the transcript saved.
//
// preview prints the preview and hint of FILE (or standard input) as
// [values.SessionValues.PutOutput] would store it. It reads at most
// -max-input bytes (default 1 GiB; 0: no cap): larger input, or endless
// input such as /dev/zero, is not previewed at all; reading stops at the cap
// and the command exits with status 1 and a line on standard error giving
// the cap and how to raise it.
//
// proxy is an MCP server on standard input and output that starts COMMAND as
// the downstream MCP server and puts handles, previews, $r references and
// read_value in front of its tools (see package mcpproxy). Flags:
//
//	-threshold N        results larger than N bytes come back as a preview (default 8192; 0 previews all)
//	-max-preview N      bound on a preview's length in bytes (default 2048)
//	-max-message N      largest JSON-RPC message read, in bytes (default 256 MiB; 0: no bound)
//	-original-schemas   offer the input schemas unchanged, without admitting "$r" references
//	-listen ADDR        serve MCP over Streamable HTTP at http://ADDR/mcp, a store per HTTP session
//	-allow-origin O     with -listen: a browser origin allowed besides the server's own (repeatable; * for any)
//	-max-sessions N     with -listen: most sessions open at once; an ended one frees its place (default 1000; 0: no bound)
//	-session-idle D     with -listen: a session idle this long ends, its calls cancelled (default 1h; 0: never)
//	-max-requests N     with -listen: most requests handled at once, event streams aside (default 256)
//	-max-body-bytes N   with -listen: most bytes of request bodies held at once (default 512 MiB)
//	-max-conns N        with -listen: most connections open at once (default 2000)
//	-read-timeout D     with -listen: time for a request's headers, and its body before 64 KiB/s (default 30s)
//	-store SPEC         persist values: dir:PATH, redis://HOST:PORT/DB, rediss://…, redis+cluster://…
//	-session ID         the session they persist under (default "default"); a later run continues it
//
// gateway is the proxy for every server of an mcpServers file (the JSON
// Claude Desktop, Claude Code and Cursor read: "command", "args", "env"
// and "cwd" for a stdio server, "url" and "headers" for a Streamable HTTP
// one, or an SSE one with "type": "sse"). It serves all their tools as one
// MCP server with one store, so a handle from one server is an argument to
// any other's tools; a tool is offered as SERVER__TOOL. Flags as for
// proxy, and --config FILE.
//
// In "command", "args", "env" values, "url" and "headers" values,
// ${VAR} is the gateway's environment variable VAR and ${VAR:-default}
// is VAR when it is set, default when it is not, as in Claude Code's
// .mcp.json. A server name outside ASCII letters, digits, '.', '-' and
// '_' ("My Server") is offered with each run of other characters as one
// '_' (My_Server__TOOL); the gateway says so on standard error. An entry
// the gateway cannot use (an unknown "type", no "command" or "url", a URL
// that is not http or https, a variable with no value and no default) is
// left out with one line on standard error, and the others are served;
// the gateway refuses to start only over a file that is not JSON or has
// no entry it can use.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

const usage = `usage:
  agentvalues demo [DIR]                      scripted agent loop over real tools on DIR
  agentvalues preview [-max-input N] [FILE|-]
                                              preview and hint of a file or stdin; input past
                                              N bytes (default 1 GiB; 0: no cap) is refused
                                              and nothing is previewed
  agentvalues proxy [flags] -- COMMAND [ARGS...]
                                              MCP proxy (stdio, or HTTP with -listen) in
                                              front of COMMAND
  agentvalues gateway [flags] --config FILE   one MCP server (stdio, or HTTP with -listen) for
                                              all the servers of an mcpServers file
  agentvalues version                         the version and git revision of this binary
  agentvalues help [COMMAND]                  this text, or COMMAND's usage and flags

Every command takes -h: its usage and flags.
`

// commands holds, for each command, its usage line and what it does, as
// its -h prints them.
var commands = map[string]struct{ synopsis, summary string }{
	"demo":    {"demo [DIR]", "Runs a scripted agent loop over real tools on DIR (default: the Go installation's src\ndirectory) and shows what the model sends, what the tools receive and what the\ntranscript keeps."},
	"preview": {"preview [-max-input N] [FILE|-]", "Prints the preview and hint of FILE (default: standard input) as the library would\nstore it."},
	"proxy":   {"proxy [flags] -- COMMAND [ARGS...]", "An MCP server on standard input and output (or Streamable HTTP with -listen) that\nstarts COMMAND as the downstream MCP server and puts handles, previews, $r\nreferences and read_value in front of its tools."},
	"gateway": {"gateway [flags] --config FILE", "The proxy for every server of an mcpServers file (Claude Desktop's, Claude Code's,\nCursor's): all their tools as one MCP server with one store."},
	"version": {"version", "Prints the module version, the git revision and the Go version this binary was\nbuilt with."},
}

// errHelp is returned by a command that printed its usage because -h asked
// for it; the command exits 0.
var errHelp = errors.New("help shown")

// newFlagSet returns the flag set of command name, whose Usage prints the
// command's usage line, what it does and its flags to the set's output.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		c := commands[name]
		fmt.Fprintf(fs.Output(), "usage: agentvalues %s\n\n%s\n", c.synopsis, c.summary)
		hasFlags := false
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprintf(fs.Output(), "\nflags:\n")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parseFlags parses args with fs. For -h, -help or --help it prints the
// usage to stdout and returns errHelp; for a flag it does not know or a
// bad value, an error wrapping errUsage (the flag package prints nothing:
// run prints the error and the usage line to stderr).
func parseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
	fs.SetOutput(io.Discard)
	defer fs.SetOutput(stderr)
	err := fs.Parse(args)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		fs.Usage()
		return errHelp
	}
	return fmt.Errorf("%w: %v", errUsage, err)
}

// errUsage reports a command line that cannot be run; main prints the usage.
var errUsage = errors.New("bad usage")

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is main without the process: it returns the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "demo":
		err = demoCommand(args[1:], stdout, stderr)
	case "preview":
		err = previewCommand(args[1:], stdin, stdout, stderr)
	case "proxy":
		err = proxyCommand(args[1:], stdin, stdout, stderr)
	case "gateway":
		err = gatewayCommand(args[1:], stdin, stdout, stderr)
	case "version", "-version", "--version":
		err = versionCommand(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		if len(args) == 2 && args[0] == "help" {
			if _, ok := commands[args[1]]; ok {
				return run([]string{args[1], "-h"}, stdin, stdout, stderr)
			}
			fmt.Fprintf(stderr, "agentvalues: %v: help: unknown command %q\n%s", errUsage, args[1], usage)
			return 2
		}
		fmt.Fprint(stdout, usage)
		return 0
	default:
		err = fmt.Errorf("%w: unknown command %q", errUsage, args[0])
	}
	switch {
	case err == nil, errors.Is(err, errHelp):
		return 0
	case errors.Is(err, errUsage):
		if c, ok := commands[args[0]]; ok {
			fmt.Fprintf(stderr, "agentvalues: %v\nusage: agentvalues %s\n(agentvalues %s -h lists its flags)\n", err, c.synopsis, args[0])
			return 2
		}
		fmt.Fprintf(stderr, "agentvalues: %v\n%s", err, usage)
		return 2
	default:
		fmt.Fprintf(stderr, "agentvalues: %v\n", err)
		return 1
	}
}
