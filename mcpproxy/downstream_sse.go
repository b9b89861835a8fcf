package mcpproxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A Streamable HTTP server sends what is not the answer to a request (its
// list_changed notifications, log messages, requests of its own) on the
// standalone stream: a GET the client keeps open. The SDK's client opens it
// only for a connection it knows by an unexported method, which the
// proxy's wrapper (rawConn) hides (go-sdk issue #657), so rawConn opens it
// itself: once the session is initialized, for protocol versions before
// 2026-07-28 (which drop the stream), unless the transport sets
// DisableStandaloneSSE, with the transport's HTTP client (and so the
// configured headers). A stream that ends, or a GET the server refuses
// (405: it offers no stream; 409: it still holds an earlier one; 5xx), is
// tried again after 1 s, doubling to 30 s while it keeps failing, resuming
// after the last event ID it saw, until the connection closes; a 404 (the
// session is gone) ends it, and a refusal is logged once. An event over
// maxStandaloneEvent ends the stream for good (logged: a server replaying it
// would only fail again); one that is not a JSON-RPC message is logged and
// skipped.

// maxStandaloneEvent bounds one event of the standalone stream.
const maxStandaloneEvent = 16 << 20

// A standalone is the standalone stream of one Streamable HTTP connection.
type standalone struct {
	endpoint string
	client   *http.Client
	log      io.Writer

	msgs   chan jsonrpc.Message // the stream's messages, for rawConn.Read
	wait   time.Duration        // the first wait before opening the stream again
	ctx    context.Context
	cancel context.CancelFunc
	once   sync.Once
	wg     sync.WaitGroup
}

func newStandalone(t *mcp.StreamableClientTransport, log io.Writer) *standalone {
	s := &standalone{endpoint: t.Endpoint, client: t.HTTPClient, log: log, msgs: make(chan jsonrpc.Message), wait: time.Second}
	if s.client == nil {
		s.client = http.DefaultClient
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s
}

// start opens the stream for the session sessionID, at protocol version
// version, once.
func (s *standalone) start(sessionID, version string) {
	if version == "" || version >= "2026-07-28" {
		return
	}
	s.once.Do(func() {
		s.wg.Go(func() { s.run(sessionID, version) })
	})
}

// close ends the stream and waits for it.
func (s *standalone) close() {
	s.cancel()
	s.wg.Wait()
}

func (s *standalone) run(sessionID, version string) {
	var lastID string
	wait := s.wait
	told := false // a refusal was logged
	for {
		got, err := s.open(sessionID, version, &lastID)
		if s.ctx.Err() != nil {
			return
		}
		var r refused
		switch {
		case errors.As(err, &r) && r.again && !told:
			fmt.Fprintf(s.log, "agentvalues: the standalone stream of %s: %v; trying again\n", s.endpoint, err)
			told = true
		case errors.As(err, &r) && r.again:
		case err != nil:
			fmt.Fprintf(s.log, "agentvalues: the standalone stream of %s: %v\n", s.endpoint, err)
			return
		}
		if got {
			wait = s.wait
		}
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, maxRestartWait)
	}
}

// open makes one GET and reads its events until it ends. It reports
// whether any event came, and an error when the stream must not be tried
// again.
func (s *standalone) open(sessionID, version string, lastID *string) (got bool, err error) {
	req, err := http.NewRequestWithContext(s.ctx, http.MethodGet, s.endpoint, nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", version)
	if sessionID != "" {
		req.Header.Set("Mcp-Session-Id", sessionID)
	}
	if *lastID != "" {
		req.Header.Set("Last-Event-ID", *lastID)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return false, nil // the server may be restarting: tried again
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusMethodNotAllowed:
		return false, nil // no stream offered; trying again costs one request per 30 s
	case resp.StatusCode == http.StatusNotFound:
		return false, refused{resp.Status + ": the session is gone", false}
	case resp.StatusCode != http.StatusOK:
		return false, refused{"the server answered " + resp.Status, true}
	}
	err = readEvents(resp.Body, func(id string, data []byte) bool {
		got = true
		if id != "" {
			*lastID = id
		}
		if len(bytes.TrimSpace(data)) == 0 {
			return true // a keep-alive or priming event
		}
		msg, err := jsonrpc.DecodeMessage(data)
		if err != nil {
			fmt.Fprintf(s.log, "agentvalues: skipping an event of the standalone stream of %s: %v\n", s.endpoint, err)
			return true
		}
		select {
		case s.msgs <- msg:
			return true
		case <-s.ctx.Done():
			return false
		}
	})
	if errors.Is(err, errEventTooLarge) {
		return got, err // ends the stream: a replay would fail again
	}
	if err != nil && s.ctx.Err() == nil {
		fmt.Fprintf(s.log, "agentvalues: the standalone stream of %s: %v\n", s.endpoint, err)
	}
	return got, nil
}

// A refused is a GET the server answered with another status than 200 or
// 405; again says whether to try again.
type refused struct {
	why   string
	again bool
}

func (r refused) Error() string { return r.why }

// errEventTooLarge is wrapped by the error for an event over
// maxStandaloneEvent.
var errEventTooLarge = errors.New("an event of the stream is too large")

// readEvents reads Server-Sent Events from r and calls each with its id
// (the last one set, or "") and data, until r ends, each returns false, or
// an event is over maxStandaloneEvent (an error).
func readEvents(r io.Reader, each func(id string, data []byte) bool) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var id string
	var data []byte
	hasData := false
	for {
		line, err := readLine(br, maxStandaloneEvent-len(data))
		if err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		if len(line) == 0 { // the event ends
			if hasData && !each(id, data) {
				return nil
			}
			data, hasData = data[:0], false
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			data, hasData = append(data, value...), true
		case "id":
			if !bytes.ContainsRune(value, 0) {
				id = string(value)
			}
		}
	}
}

// readLine reads one line of at most limit bytes, without its end (\n,
// \r\n or \r before \n).
func readLine(br *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > limit+2 {
			return nil, fmt.Errorf("%w: over %d bytes", errEventTooLarge, maxStandaloneEvent)
		}
		switch err {
		case nil:
			return bytes.TrimRight(line, "\r\n"), nil
		case bufio.ErrBufferFull:
			continue
		case io.EOF:
			if len(line) > 0 {
				return bytes.TrimRight(line, "\r\n"), nil
			}
		}
		return nil, err
	}
}

// initializeVersion is the protocol version of an initialize result.
func initializeVersion(result json.RawMessage) string {
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(result, &r)
	return r.ProtocolVersion
}
