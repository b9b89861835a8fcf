package mcpproxy

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestClientProtocolVersion reads the version from clients' first
// messages, and passes on every byte it read.
func TestClientProtocolVersion(t *testing.T) {
	initialize := func(v string) string {
		return `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + v + `","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	}
	long := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"pad":"` + strings.Repeat("x", maxFirstMessage) + `","protocolVersion":"2025-06-18"}}`
	for _, tc := range []struct{ name, in, want string }{
		{"2025-06-18", initialize("2025-06-18") + "\n", "2025-06-18"},
		{"2025-11-25", initialize("2025-11-25") + "\n", "2025-11-25"},
		{"2024-11-05", initialize("2024-11-05") + "\n", "2024-11-05"},
		// initialize is the handshake before 2026-07-28: the SDK's server
		// answers a newer or unknown version with 2025-11-25.
		{"initialize at 2026-07-28", initialize("2026-07-28") + "\n", "2025-11-25"},
		{"initialize at an unknown version", initialize("2031-01-01") + "\n", "2025-11-25"},
		{"discover", `{"jsonrpc":"2.0","id":0,"method":"server/discover","params":{"_meta":` + v2Meta + `}}` + "\n", "2026-07-28"},
		{"a call at 2026-07-28", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}` + "\n", "2026-07-28"},
		{"a call at an unknown version", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2031-01-01"}}}` + "\n", ""},
		{"blank lines and a byte order mark first", "\n  \r\n\xef\xbb\xbf" + initialize("2025-06-18") + "\n", "2025-06-18"},
		{"no newline before the end", initialize("2025-06-18"), "2025-06-18"},
		{"a notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" + initialize("2025-06-18") + "\n", ""},
		{"not JSON", "hello\n" + initialize("2025-06-18") + "\n", ""},
		{"nothing", "", ""},
		{"longer than maxFirstMessage", long + "\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range []io.Reader{strings.NewReader(tc.in), iotest.OneByteReader(strings.NewReader(tc.in))} {
				got, replay := ClientProtocolVersion(r)
				if got != tc.want {
					t.Errorf("version %q, want %q", got, tc.want)
				}
				all, err := io.ReadAll(replay)
				if err != nil || string(all) != tc.in {
					t.Errorf("replayed %d bytes (%v), want the %d read", len(all), err, len(tc.in))
				}
			}
		})
	}
	// A reader's error is left for the replay to report.
	boom := errors.New("boom")
	got, replay := ClientProtocolVersion(io.MultiReader(strings.NewReader("{"), iotest.ErrReader(boom)))
	if _, err := io.ReadAll(replay); got != "" || !errors.Is(err, boom) {
		t.Errorf("a failing reader: %q, %v", got, err)
	}
}

// TestProtocolVersionOption: a version the SDK does not speak is refused
// before anything starts.
func TestProtocolVersionOption(t *testing.T) {
	if _, err := Connect(t.Context(), lineDownstream{strings.NewReader(""), nopCloser{io.Discard}}, &Options{ProtocolVersion: "2031-01-01", Log: io.Discard}); !errors.Is(err, ErrProtocolVersion) {
		t.Errorf("Connect: %v", err)
	}
	if _, err := ConnectGateway(t.Context(), nil, &Options{ProtocolVersion: "1.0", Log: io.Discard}); !errors.Is(err, ErrProtocolVersion) {
		t.Errorf("ConnectGateway: %v", err)
	}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
