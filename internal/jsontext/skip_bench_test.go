package jsontext

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// BenchmarkSkipString skips a 16 MiB string: JSON held in a string, dense
// with escaped quotes (as an MCP text block holding a tool's JSON), a log
// whose lines each quote one field, and a plain log. The baseline is bytes.IndexByte over the same bytes, the floor
// of any scan for the closing quote.
func BenchmarkSkipString(b *testing.B) {
	var rows strings.Builder
	for i := 0; rows.Len() < 16<<20; i++ {
		rows.WriteString(`{"id":` + strings.Repeat("7", i%5+1) + `,"path":"/usr/local/go/src/internal/x.go","ok":true},`)
	}
	quotedLog := strings.Repeat(`2025-03-01T08:00:00.000Z INFO  [worker-3] req=0a1b2c3d GET /api/v1/items/42 status=200 user="alice"`+"\n", 16<<20/100)
	logText := strings.Repeat("2025-03-01T08:00:00Z INFO served /api/v1/items in 12ms\n", 16<<20/56)
	for _, c := range []struct{ name, text string }{{"json-in-string", rows.String()}, {"quoted-log", quotedLog}, {"log", logText}} {
		quoted, err := json.Marshal(c.text)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(quoted)))
			for b.Loop() {
				if SkipString(quoted, 0) != len(quoted) {
					b.Fatal("wrong end")
				}
			}
		})
		b.Run(c.name+"/baseline-IndexByte", func(b *testing.B) {
			b.SetBytes(int64(len(quoted)))
			for b.Loop() {
				bytes.IndexByte(quoted[1:], 0xff)
			}
		})
	}
}
