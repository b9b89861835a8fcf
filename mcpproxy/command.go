package mcpproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/agentvalues/values/mcpproxy/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultTerminateDuration is how long [CommandTransport] waits, after
// closing the server's standard input, for it to exit before it sends
// SIGTERM, and again before SIGKILL. The MCP stdio specification asks a
// client to give the server a reasonable time to exit on its own.
const DefaultTerminateDuration = 5 * time.Second

// A CommandTransport is an [mcp.Transport] that starts a command and speaks
// newline-delimited JSON-RPC with it over its standard input and output.
//
// Unlike [mcp.CommandTransport], it reads messages up to MaxMessage (256 MiB
// by default; mcp.CommandTransport stops at [mcp.DefaultMaxLineLength], 16
// MiB), so a large tool result reaches the proxy, which stores it; and a
// line the command writes that is not JSON-RPC is skipped (and logged)
// rather than ending the connection. The command's standard error is left
// as the caller set it on Command (nil discards it).
//
// Closing the connection closes the command's standard input, waits
// TerminateDuration for it to exit, then sends SIGTERM, waits again, and
// finally kills it.
//
// A CommandTransport is used for at most one connection; the connection it
// returns is safe for concurrent use, as [mcp.Connection] requires.
type CommandTransport struct {
	// Command is the server to run. Its Stdin and Stdout must be nil: the
	// transport connects them.
	Command *exec.Cmd
	// TerminateDuration bounds each wait during Close. Zero or negative
	// means DefaultTerminateDuration.
	TerminateDuration time.Duration
	// MaxMessage bounds the length in bytes of one message from the
	// command. Zero means DefaultMaxMessage; negative means no bound. A
	// longer message is read through without being held; if it answers a
	// pending call, the call fails with an error stating both sizes.
	MaxMessage int
	// Log receives one line for each line of the command's output that is
	// not a JSON-RPC message (a log line written to standard output) or
	// cannot be decoded; such lines are skipped. Nil discards them, except
	// under a [Proxy], which writes them to its Options.Log.
	Log io.Writer

	exited  chan struct{} // closed when the command has been waited for
	waitErr error         // the command's exit status; valid after exited is closed

	// groupWait, set only by the package's tests, bounds the wait for what
	// the command left in its process group to end after SIGTERM; zero
	// means the terminate duration.
	groupWait time.Duration
}

// Connect starts the command and returns the connection to it.
// It fails if the command cannot be started or was already started.
func (t *CommandTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	if t.Command == nil {
		return nil, errors.New("mcpproxy: CommandTransport has no Command")
	}
	if t.exited != nil {
		return nil, errors.New("mcpproxy: CommandTransport used twice")
	}
	if t.Command.Stdin != nil || t.Command.Stdout != nil {
		return nil, errors.New("mcpproxy: CommandTransport needs Command.Stdin and Command.Stdout unset")
	}
	// Pipes of our own, rather than Cmd.StdoutPipe, so the command can be
	// waited for as soon as it exits (Wait does not close our read end) and
	// its exit status is known when the connection breaks.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("mcpproxy: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("mcpproxy: %w", err)
	}
	growPipe(outR)
	t.Command.Stdin = inR
	t.Command.Stdout = outW
	setProcessGroup(t.Command)
	if err := t.Command.Start(); err != nil {
		for _, f := range []*os.File{inR, inW, outR, outW} {
			f.Close()
		}
		return nil, fmt.Errorf("mcpproxy: starting %s: %w", t.Command.Path, err)
	}
	// The child holds its own copies now.
	inR.Close()
	outW.Close()
	t.exited = make(chan struct{})
	go func() {
		t.waitErr = t.Command.Wait()
		close(t.exited)
	}()
	td := t.TerminateDuration
	if td <= 0 {
		td = DefaultTerminateDuration
	}
	gw := t.groupWait
	if gw <= 0 {
		gw = td
	}
	pc := &processCloser{stdin: inW, in: wire.NewPipe(inW), stdout: outR, out: wire.NewPipe(outR), t: t, wait: td, groupWait: gw}
	var out io.Reader = outR
	if pc.out != nil {
		out = pc.out
	}
	return wire.NewConn(out, pc, pc, maxMessage(t.MaxMessage), false, t.Log), nil
}

// exitStatus describes how the command ended, waiting up to d for it to be
// reaped. It returns "" if the command is still running.
func (t *CommandTransport) exitStatus(d time.Duration) string {
	if t.exited == nil {
		return ""
	}
	select {
	case <-t.exited:
	case <-time.After(d):
		return ""
	}
	if t.waitErr == nil {
		return "exit status 0"
	}
	return t.waitErr.Error()
}

// processCloser is the write side of the connection: writes go to the
// command's standard input, and Close shuts the command down. It closes the
// read end of the output pipe only after the command has exited, so the
// server never sees a broken pipe while it is still shutting down.
type processCloser struct {
	stdin  *os.File
	in     *wire.Pipe // stdin written raw; nil where it cannot be (see wire.Pipe)
	stdout *os.File
	out    *wire.Pipe // stdout, which the connection reads raw; nil where it cannot
	t      *CommandTransport
	wait   time.Duration // bounds each wait for the command to exit

	groupWait time.Duration // bounds endGroup's wait

	once sync.Once
	err  error
}

func (p *processCloser) Write(b []byte) (int, error) {
	if p.in != nil {
		return p.in.Write(b)
	}
	return p.stdin.Write(b)
}

func (p *processCloser) Close() error {
	p.once.Do(func() { p.err = p.shutdown() })
	return p.err
}

func (p *processCloser) shutdown() error {
	defer p.stdout.Close() // unblocks a read still waiting on a stray grandchild
	// Processes the command started in its group may outlive it (a shell
	// that ran a helper in the background): once it has exited, end them too.
	defer p.endGroup()
	p.stdin.Close()
	exited := func() bool {
		select {
		case <-p.t.exited:
			return true
		case <-time.After(p.wait):
			return false
		}
	}
	if exited() {
		return nil
	}
	if signalProcess(p.t.Command, syscall.SIGTERM) == nil && exited() {
		return nil
	}
	signalProcess(p.t.Command, syscall.SIGKILL)
	if exited() {
		return nil
	}
	return fmt.Errorf("mcpproxy: %s did not exit after SIGKILL", p.t.Command.Path)
}

// endGroup ends what is left of the command's process group after the
// command itself has exited: SIGTERM, then, after groupWait, SIGKILL.
func (p *processCloser) endGroup() {
	select {
	case <-p.t.exited:
	default:
		return // still running: signalling the group again would not help
	}
	if !groupAlive(p.t.Command) {
		return
	}
	signalProcess(p.t.Command, syscall.SIGTERM)
	for deadline := time.Now().Add(p.groupWait); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if !groupAlive(p.t.Command) {
			return
		}
	}
	signalProcess(p.t.Command, syscall.SIGKILL)
}
