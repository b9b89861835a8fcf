package mcpproxy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// The connection bound of ServeHTTP. Every connection takes a file
// descriptor, a goroutine and buffers while it is open, and one that
// trickles its request, or never sends one, is open until a timeout ends
// it: without a bound, enough of them take every descriptor the process
// may open, and the next client is not even accepted. At MaxConns the
// listener still accepts a connection, answers it 503 with Retry-After and
// a JSON-RPC error body saying so, and closes it, so that a client learns
// at once why it is refused; at most refuseAtOnce such answers are under
// way at once, and past that a connection is closed without one.

// refuseAtOnce bounds the connections being answered 503 at once.
const refuseAtOnce = 64

// refuseWait bounds how long answering a refused connection may take.
const refuseWait = time.Second

// capConns returns ln bounded to cfg.maxConns open connections, or ln
// when there is no bound.
func capConns(ln net.Listener, cfg httpConfig) net.Listener {
	if cfg.maxConns < 0 {
		return ln
	}
	return &connCap{Listener: ln, max: int64(cfg.maxConns), log: newRefusals(cfg.log)}
}

// A connCap is a listener that bounds its open connections.
type connCap struct {
	net.Listener
	max      int64
	log      *refusals
	open     atomic.Int64
	refusing atomic.Int64 // connections being answered 503
	full     atomic.Bool  // a connection was refused since a place last freed
}

func (l *connCap) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			return &cappedConn{Conn: c, l: l}, nil
		}
		l.open.Add(-1)
		l.full.Store(true)
		l.log.refused("connections", fmt.Sprintf("%d connections are open, the most this server keeps (MaxConns)", l.max))
		if l.refusing.Add(1) > refuseAtOnce {
			l.refusing.Add(-1)
			c.Close()
			continue
		}
		go l.refuse(c)
	}
}

// refuse answers c 503 and closes it. It reads the request's headers
// first (a client does not take an answer that comes before its request),
// and what the client sends after it until it closes, so that closing
// with unread bytes does not reset the connection under the answer.
func (l *connCap) refuse(c net.Conn) {
	defer l.refusing.Add(-1)
	defer c.Close()
	c.SetDeadline(time.Now().Add(refuseWait))
	br := bufio.NewReader(io.LimitReader(c, 64<<10))
	for {
		line, err := br.ReadSlice('\n')
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
		if len(bytes.TrimRight(line, "\r\n")) == 0 && err == nil {
			break
		}
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":null,"error":{"code":%d,"message":"mcpproxy: the server is busy: %d connections are open, the most it keeps; try again in a moment"}}`, codeBusy, l.max)
	fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	if tc, ok := c.(interface{ CloseWrite() error }); ok {
		tc.CloseWrite()
	}
	io.Copy(io.Discard, br)
	io.Copy(io.Discard, io.LimitReader(c, 1<<20))
}

// A cappedConn gives its place back when it is closed.
type cappedConn struct {
	net.Conn
	l    *connCap
	once sync.Once
}

// CloseWrite half-closes the connection, as the server does before it
// closes one it answered.
func (c *cappedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// Close gives the connection's place back; the first place freed after a
// refusal is logged, so that an operator (and a test) sees the server take
// connections again.
func (c *cappedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.open.Add(-1)
		if c.l.full.CompareAndSwap(true, false) {
			fmt.Fprintf(c.l.log.w, "agentvalues: a connection closed, and a place under MaxConns (%d) is free again\n", c.l.max)
		}
	})
	return err
}
