package main

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// waitCount waits until what w has been written holds s at least n times,
// failing after a minute (a bound on a hang, not a timing).
func waitCount(t *testing.T, w *syncWriter, s string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		w.mu.Lock()
		got := strings.Count(w.b.String(), s)
		if got >= n {
			w.mu.Unlock()
			return
		}
		if w.written == nil {
			w.written = make(chan struct{})
		}
		written := w.written
		w.mu.Unlock()
		select {
		case <-written:
		case <-ctx.Done():
			t.Fatalf("stderr said %q %d times, never %d:\n%s", s, got, n, w.String())
		}
	}
}

// fileRoot returns the root of the directory dir, by its file:// URI.
func fileRoot(dir string) *mcp.Root {
	return &mcp.Root{URI: (&url.URL{Scheme: "file", Path: dir}).String(), Name: filepath.Base(dir)}
}

// TestGatewayFilesystemRoots runs the real server-filesystem behind the
// gateway with no directory arguments, so that it takes the directories it
// may touch from its client's roots, as the gateway passes them on: a
// client reaching the gateway over stdio or Streamable HTTP declares one
// root, then adds two, then removes the first. After each change (the
// server says on its standard error that it took the roots, as many as
// the client has) a file inside the roots is read and one outside is
// refused.
func TestGatewayFilesystemRoots(t *testing.T) {
	t.Parallel()
	files := fsServer.command(t)
	for _, over := range []string{"stdio", "http"} {
		t.Run(over, func(t *testing.T) {
			t.Parallel()
			var dirs [3]string
			for i, name := range []string{"alpha", "beta", "gamma"} {
				dirs[i] = filepath.Join(t.TempDir(), name)
				if err := os.Mkdir(dirs[i], 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dirs[i], "f.txt"), []byte("the "+name+" file\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			config := writeConfig(t, map[string]any{
				"files": map[string]any{"command": files[0], "args": files[1:]},
			})
			client := e2eClient(nil)
			client.AddRoots(fileRoot(dirs[0]))
			cs, stderr := connectGateway(t, over, config, client, clientProtocol)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			waitTools(t, cs, "read_text_file")

			// read reads the file of dir i, which the server must allow
			// or refuse as want says.
			read := func(i int, allowed bool) {
				t.Helper()
				path := filepath.Join(dirs[i], "f.txt")
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_text_file", Arguments: json.RawMessage(`{"path":` + quote(path) + `}`)})
				if err != nil {
					t.Fatalf("read_text_file %s: %v", path, err)
				}
				switch got := textOf(res); {
				case allowed && (res.IsError || !strings.Contains(got, "the "+filepath.Base(dirs[i])+" file")):
					t.Errorf("read_text_file %s, inside the roots: %.300s\nstderr:\n%s", path, got, stderr.String())
				case !allowed && (!res.IsError || !strings.Contains(got, "Access denied - path outside allowed directories")):
					t.Errorf("read_text_file %s, outside the roots: %.300s", path, got)
				}
			}
			const took = "Updated allowed directories from MCP roots: "
			waitCount(t, stderr, took+"1 valid directories", 1)
			if strings.Contains(stderr.String(), "Client does not support MCP Roots") {
				t.Errorf("server-filesystem was not told the client has roots:\n%s", stderr.String())
			}
			read(0, true)
			read(1, false)
			read(2, false)

			client.AddRoots(fileRoot(dirs[1]), fileRoot(dirs[2]))
			waitCount(t, stderr, took+"3 valid directories", 1)
			read(0, true)
			read(1, true)
			read(2, true)

			client.RemoveRoots(fileRoot(dirs[0]).URI)
			waitCount(t, stderr, took+"2 valid directories", 1)
			read(0, false)
			read(1, true)
			read(2, true)
		})
	}
}
