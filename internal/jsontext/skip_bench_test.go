package jsontext

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/agentvalues/values/internal/testkit"
	"github.com/tidwall/gjson"
)

// benchStrings returns five texts of about 16 MiB as JSON strings: JSON
// held in a string, dense with escaped quotes (as an MCP text block holding
// a tool's JSON), the same with a field of text that is not ASCII in each
// row, a log whose lines each quote one field, a plain log, and the blob
// server's log (mixedLog). raw is the JSON the first one holds.
func benchStrings(b *testing.B) (cases []struct{ name, text, quoted string }, raw string) {
	var rows strings.Builder
	rows.WriteByte('[')
	for i := 0; rows.Len() < 16<<20; i++ {
		if i > 0 {
			rows.WriteByte(',')
		}
		rows.WriteString(`{"id":` + strings.Repeat("7", i%5+1) + `,"path":"/usr/local/go/src/internal/x.go","ok":true}`)
	}
	rows.WriteByte(']')
	var utf8Rows strings.Builder
	utf8Rows.WriteByte('[')
	for i := 0; utf8Rows.Len() < 16<<20; i++ {
		if i > 0 {
			utf8Rows.WriteByte(',')
		}
		utf8Rows.WriteString(`{"id":` + strings.Repeat("7", i%5+1) + `,"name":"Zoë Ångström","city":"Köln","ok":true}`)
	}
	utf8Rows.WriteByte(']')
	quotedLog := strings.Repeat(`2025-03-01T08:00:00.000Z INFO  [worker-3] req=0a1b2c3d GET /api/v1/items/42 status=200 user="alice"`+"\n", 16<<20/100)
	logText := strings.Repeat("2025-03-01T08:00:00Z INFO served /api/v1/items in 12ms\n", 16<<20/56)
	for _, c := range []struct{ name, text string }{{"json-in-string", rows.String()}, {"json-utf8-in-string", utf8Rows.String()}, {"quoted-log", quotedLog}, {"log", logText}, {"log-mixed", mixedLog(16 << 20)}} {
		quoted, err := json.Marshal(c.text)
		if err != nil {
			b.Fatal(err)
		}
		cases = append(cases, struct{ name, text, quoted string }{c.name, c.text, string(quoted)})
	}
	return cases, rows.String()
}

// mixedLog returns a log of at most limit bytes as cmd/agentvalues' blob
// server writes it (testkit.AppendLog): lines of about 100 bytes, most
// with a quoted user name, many names and messages not ASCII.
func mixedLog(limit int) string {
	return string(testkit.AppendLog(nil, rand.New(rand.NewPCG(13, uint64(limit))), limit))
}

// BenchmarkSkipString skips a 16 MiB string (see benchStrings). The
// baseline is bytes.IndexByte over the same bytes, the floor of any scan
// for the closing quote.
func BenchmarkSkipString(b *testing.B) {
	cases, _ := benchStrings(b)
	for _, c := range cases {
		quoted := []byte(c.quoted)
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

// BenchmarkStringWork does what the proxy does to a large text block once
// it is read, to the strings of benchStrings: validates it (Scan), decodes
// it (AppendUnquoted, into a buffer of its size as the proxy's is) and, for
// the JSON one, compares it with the JSON it holds (SameJSONString), as a
// result's structured content with its text copy. The baseline is one copy
// of the same bytes, the floor of any of them. Scan-without-kernel and
// AppendUnquoted-without-kernel are Scan and AppendUnquoted with their own
// loops only, where the machine has the kernels (strscan.go).
func BenchmarkStringWork(b *testing.B) {
	cases, raw := benchStrings(b)
	for _, c := range cases {
		quoted := []byte(c.quoted)
		b.Run(c.name+"/Scan", func(b *testing.B) {
			b.SetBytes(int64(len(quoted)))
			for b.Loop() {
				if _, _, err := Scan(quoted, Limits{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		if haveStringBlocks {
			b.Run(c.name+"/Scan-without-kernel", func(b *testing.B) {
				b.SetBytes(int64(len(quoted)))
				useStringBlocks = false
				defer func() { useStringBlocks = true }()
				for b.Loop() {
					if _, _, err := Scan(quoted, Limits{}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		b.Run(c.name+"/AppendUnquoted", func(b *testing.B) {
			b.SetBytes(int64(len(quoted)))
			dst := make([]byte, 0, len(quoted))
			for b.Loop() {
				if got := AppendUnquoted(dst[:0], quoted); len(got) != len(c.text) {
					b.Fatal("wrong length")
				}
			}
		})
		if haveStringBlocks {
			b.Run(c.name+"/AppendUnquoted-without-kernel", func(b *testing.B) {
				b.SetBytes(int64(len(quoted)))
				useStringBlocks = false
				defer func() { useStringBlocks = true }()
				dst := make([]byte, 0, len(quoted))
				for b.Loop() {
					if got := AppendUnquoted(dst[:0], quoted); len(got) != len(c.text) {
						b.Fatal("wrong length")
					}
				}
			})
		}
		if c.name == "json-in-string" {
			b.Run(c.name+"/SameJSONString", func(b *testing.B) {
				b.SetBytes(int64(len(quoted)))
				v := []byte(raw)
				for b.Loop() {
					if !SameJSONString(v, quoted) {
						b.Fatal("not the same")
					}
				}
			})
		}
		b.Run(c.name+"/baseline-copy", func(b *testing.B) {
			b.SetBytes(int64(len(quoted)))
			dst := make([]byte, len(quoted))
			for b.Loop() {
				copy(dst, quoted)
			}
		})
	}
}

// BenchmarkSkipValue skips 16 MiB of JSON rows, as parseRaw skips a
// result's structured content, beside a validating Scan of them; and
// validates them with Valid, as the proxy validates a large result,
// beside gjson.ValidBytes. Run Valid with -cpu=1 and -cpu=2 in processes
// of their own (golang/go#49980): on more than one GOMAXPROCS, it splits
// the array between two goroutines.
//
//	go test -run='^$' -bench='SkipValue/rows/(Valid|gjson)' -cpu=1 ./internal/jsontext
func BenchmarkSkipValue(b *testing.B) {
	_, raw := benchStrings(b)
	d := []byte(raw)
	b.Run("rows", func(b *testing.B) {
		b.SetBytes(int64(len(d)))
		for b.Loop() {
			if SkipValue(d, 0) != len(d) {
				b.Fatal("wrong end")
			}
		}
	})
	b.Run("rows/Scan", func(b *testing.B) {
		b.SetBytes(int64(len(d)))
		for b.Loop() {
			if _, _, err := Scan(d, Limits{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("rows/Valid", func(b *testing.B) {
		b.SetBytes(int64(len(d)))
		for b.Loop() {
			if err := Valid(d); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("rows/gjson", func(b *testing.B) {
		b.SetBytes(int64(len(d)))
		for b.Loop() {
			if !gjson.ValidBytes(d) {
				b.Fatal("invalid")
			}
		}
	})
}

// BenchmarkValidSmall validates the request of a small tools/call, as the
// proxy does for every message: Valid (which tallies it) against Scan with
// no Limits (what Valid was).
//
//	go test -run='^$' -bench=ValidSmall -benchmem ./internal/jsontext
func BenchmarkValidSmall(b *testing.B) {
	msg := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ping","arguments":{"query":"select the rows","limit":20}}}`)
	b.Run("Valid", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := Valid(msg); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Scan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := Scan(msg, Limits{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkTally validates a small tool result, an object with a short
// list of rows as Observe gets it (200 B and 2 KiB, shown whole), with
// Tally, against gjson.ValidBytes, the floor of Observe's benchmarks.
//
//	go test -run='^$' -bench=Tally ./internal/jsontext
func BenchmarkTally(b *testing.B) {
	for _, n := range []int{200, 2048} {
		doc := testkit.SmallResult(n)
		b.Run(fmt.Sprintf("%dB/Tally", n), func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				if _, _, _, err := Tally(doc); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("%dB/gjson", n), func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				if !gjson.ValidBytes(doc) {
					b.Fatal("invalid")
				}
			}
		})
	}
}
