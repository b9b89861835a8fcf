package mcpproxy

import (
	"context"
	"errors"
	"io"
	"os"

	"github.com/agentvalues/values/mcpproxy/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxMessage is the largest JSON-RPC message, in bytes, a
// [LineTransport] or [CommandTransport] reads. A message is held in memory
// several times over while the SDK decodes it, so the bound is what keeps
// one oversized result or argument from exhausting memory; 256 MiB is well
// past any result a model can use whole and leaves room for large values
// passed by reference.
//
// A longer line is never held: it is read through and dropped, and the
// request or call it belongs to, when its id can be found, is answered with
// an error that states both sizes.
const DefaultMaxMessage = 256 << 20

// A LineTransport is an [mcp.Transport] that serves one client over
// newline-delimited JSON-RPC on Reader and Writer: the stdio transport of
// MCP, for the proxy command's standard input and output.
//
// Unlike [mcp.IOTransport], one bad line never ends the connection. A line
// that is not JSON is answered with a -32700 parse error; a message that is
// not a single JSON-RPC 2.0 request object (a batch, "jsonrpc":"1.0", an
// object id, two messages on one line, nesting past the 1000 levels the SDK
// decodes) with -32600 (or -32602 for a request whose params cannot be
// decoded), carrying the request's id when it has a usable one; malformed
// notifications and responses, which cannot be answered, go to Log. A UTF-8
// byte order mark and blank lines are skipped. A line longer than
// MaxMessage is read through without being held and answered with -32600.
//
// A pipe is read or written with raw system calls, which cost less per
// message, when it is given as [RawPipe] returns it.
//
// A LineTransport is used for one connection; the connection is safe for
// concurrent use, as [mcp.Connection] requires.
type LineTransport struct {
	// Reader carries the client's messages, one per line.
	Reader io.Reader
	// Writer receives the messages for the client, one per line.
	Writer io.Writer
	// MaxMessage bounds the length in bytes of one inbound line. Zero means
	// DefaultMaxMessage; negative means no bound.
	MaxMessage int
	// Log receives one line for each inbound message that could not be
	// answered (a malformed notification or response). Nil discards them.
	Log io.Writer

	raw rawCaller // set by Proxy.Run and Gateway.Run on their copy: see call_rawcall.go
}

// Connect returns the connection over Reader and Writer. Closing it does not
// close them.
func (t *LineTransport) Connect(context.Context) (mcp.Connection, error) {
	if t.Reader == nil || t.Writer == nil {
		return nil, errors.New("mcpproxy: LineTransport needs a Reader and a Writer")
	}
	c := wire.NewConn(t.Reader, t.Writer, nil, maxMessage(t.MaxMessage), true, t.Log)
	if t.raw != nil {
		u := newRawUpstream(t.raw, c)
		c.SetHooks(wire.Hooks{Take: u.take, Wrote: u.wrote, ReadEnded: u.readEnded, Closing: u.wait})
	}
	return c, nil
}

// RawPipe returns f read and written with raw system calls when it is a
// pipe the runtime polls without blocking, else f. Its descriptor never
// blocks, so a system call on it need not enter the scheduler's system
// call state, whose first entry after the process has been idle wakes the
// runtime's monitor thread: about a fifth of the proxy's CPU per small
// call at one call in flight. It waits, and fails, as f would. f's open
// file must be the caller's own and stay non-blocking (nothing may call
// f.Fd(), which makes it blocking): the standard descriptors, whose open
// files other processes share, are returned as they are; open the pipe
// anew without blocking (/dev/stdin, say) to read it raw. A
// [CommandTransport] reads and writes its server's pipes raw itself.
func RawPipe(f *os.File) io.ReadWriteCloser {
	if p := wire.NewPipe(f); p != nil {
		return p
	}
	return f
}

// maxMessage is the bound on a line that a MaxMessage of n sets: zero
// means DefaultMaxMessage.
func maxMessage(n int) int {
	if n == 0 {
		return DefaultMaxMessage
	}
	return n
}
