package mcpproxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The protocol version spoken downstream. A proxy connects to its server
// before any client connects to it, so it cannot negotiate the client's
// version with the server; it asks the server for Options.ProtocolVersion,
// and the server may answer with another it supports. What the version
// changes for a call: from 2026-07-28 on, every request the proxy sends
// carries the per-request _meta of that version (about 250 bytes a small
// call, which the go-sdk's server reads and checks: 1.4–1.6 times its CPU
// per call), and a server asks for input (sampling, elicitation, roots)
// within a call's result rather than by a request of its own.
//
// The policy: a proxy or gateway serving one client (over standard input
// and output, the command's default) speaks the client's version, read
// from its first message before the servers are started
// ([ClientProtocolVersion]); one serving many clients over Streamable HTTP,
// which share each server, speaks [DefaultProtocolVersion]. Either way
// every combination works: a client newer or older than its server is
// answered by the proxy as its own version asks (see the package
// documentation, The rest of the protocol).

// DefaultProtocolVersion is the protocol version a proxy asks its
// downstream servers for when Options.ProtocolVersion is empty: the newest
// whose requests carry no per-call _meta, and what clients mostly speak.
const DefaultProtocolVersion = "2025-11-25"

// ErrProtocolVersion is returned, wrapped, for an Options.ProtocolVersion
// that the go-sdk does not speak.
var ErrProtocolVersion = errors.New("mcpproxy: a protocol version the SDK does not speak")

// downstreamVersion returns the protocol version to ask the downstream
// servers for under opts, or an error wrapping ErrProtocolVersion.
func downstreamVersion(opts *Options) (string, error) {
	v := opts.ProtocolVersion
	if v == "" {
		return DefaultProtocolVersion, nil
	}
	if !slices.Contains(mcp.SupportedProtocolVersions(), v) {
		return "", fmt.Errorf("%w: %q (it speaks %s)", ErrProtocolVersion, v, strings.Join(mcp.SupportedProtocolVersions(), ", "))
	}
	return v, nil
}

// maxFirstMessage bounds what [ClientProtocolVersion] reads to find the
// client's first message: an initialize request is a few hundred bytes.
// Past it the version is not known ("" is returned) and the bytes read are
// passed on as they came.
const maxFirstMessage = 64 << 10

// ClientProtocolVersion reads the first message of an MCP client from r,
// which carries newline-delimited JSON-RPC (the stdio transport), and
// returns the protocol version the proxy's server will speak with that
// client, for Options.ProtocolVersion, and a reader that yields every byte
// read from r and then the rest of r, for the upstream transport.
//
// The version is, for an initialize request, the version asked for when
// the SDK speaks it and it is older than 2026-07-28, else 2025-11-25 (what
// the SDK's server answers: initialize is the handshake of the versions
// before 2026-07-28); for a request of 2026-07-28 or later (server/discover,
// or any request), the version its _meta names when the SDK speaks it. It
// is "" when it cannot be told: r ended or failed first, the first message
// is not such a request, or it is longer than maxFirstMessage. Blank lines
// and a UTF-8 byte order mark before the message are skipped, as
// [LineTransport] skips them. ClientProtocolVersion returns once it has
// read one line (or maxFirstMessage bytes, or r failed); the error of r,
// if any, is left for the returned reader to report.
func ClientProtocolVersion(r io.Reader) (version string, replay io.Reader) {
	br := bufio.NewReaderSize(r, 4<<10)
	var read []byte
	start := 0 // where the line being read begins in read
	for len(read) < maxFirstMessage {
		chunk, err := br.ReadSlice('\n')
		read = append(read, chunk...)
		if err == bufio.ErrBufferFull {
			continue // a line longer than the buffer: read on
		}
		msg := bytes.TrimSpace(bytes.TrimPrefix(bytes.TrimSpace(read[start:]), bom))
		if len(msg) > 0 {
			if err == nil || err == io.EOF {
				version = messageVersion(msg)
			}
			break
		}
		if err != nil {
			break
		}
		start = len(read)
	}
	return version, io.MultiReader(bytes.NewReader(read), br)
}

// bom is the UTF-8 byte order mark.
var bom = []byte("\xef\xbb\xbf")

// messageVersion returns the protocol version the SDK's server speaks with
// a client whose first message is msg: see ClientProtocolVersion.
func messageVersion(msg []byte) string {
	var m struct {
		Method string
		Params struct {
			ProtocolVersion string                     `json:"protocolVersion"`
			Meta            map[string]json.RawMessage `json:"_meta"`
		}
	}
	if json.Unmarshal(msg, &m) != nil {
		return ""
	}
	supported := mcp.SupportedProtocolVersions()
	if m.Method == "initialize" {
		if v := m.Params.ProtocolVersion; slices.Contains(supported, v) && v < protocolRaw {
			return v
		}
		return DefaultProtocolVersion // as the SDK server answers (its negotiatedVersion)
	}
	var v string
	if json.Unmarshal(m.Params.Meta[mcp.MetaKeyProtocolVersion], &v) == nil && slices.Contains(supported, v) {
		return v
	}
	return ""
}
