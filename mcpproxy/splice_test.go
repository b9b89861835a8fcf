package mcpproxy

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestLargeArgumentSpliced passes a large argument by reference through the
// proxy's line connection and the SDK's: the downstream server must get
// exactly the resolved arguments, spliced in where the placeholder was, and
// no placeholder may be left behind.
func TestLargeArgumentSpliced(t *testing.T) {
	for _, line := range []bool{true, false} {
		t.Run(fmt.Sprintf("line=%v", line), func(t *testing.T) {
			server, _ := newTestServer()
			sr, pw := io.Pipe()
			pr, sw := io.Pipe()
			ctx := context.Background()
			ss, err := server.Connect(ctx, &mcp.IOTransport{Reader: sr, Writer: sw, MaxLineLength: -1}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ss.Close()
			var down mcp.Transport = &mcp.IOTransport{Reader: pr, Writer: pw, MaxLineLength: -1}
			if line {
				down = lineDownstream{pr, pw}
			}
			f := newFixture(t, down, nil)
			big := strings.Repeat("ab\"\\é\n", spliceMin/4)
			h, err := f.proxy.Values().Put(big)
			if err != nil {
				t.Fatal(err)
			}
			res := f.call(t, "echo", fmt.Sprintf(`{"path":"$%s","value":[1,"$%s"]}`, h, h))
			if f.proxy.splices.Count() == 0 {
				t.Error("the arguments were not spliced")
			}
			if res.IsError {
				t.Fatalf("echo: %.300s", text(res))
			}
			v, _ := f.proxy.Values().Get(handle(t, res))
			q := fmt.Sprintf("%q", big) // the string as JSON: no character here needs \u
			if want := `{"path":` + q + `,"value":[1,` + q + `]}`; string(v.JSON()) != want {
				t.Errorf("the server got %d bytes: %.200s…, want %d", len(v.JSON()), v.JSON(), len(want))
			}
			if n := f.proxy.splices.Len(); n != 0 {
				t.Errorf("%d placeholders are still held after their call", n)
			}
		})
	}
}
