package main

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
)

// attackServerArg makes the test binary (with runMainEnv set) a downstream
// MCP server, in raw JSON-RPC lines, whose tools attack the proxy:
//
//   - blocks {"n": N}: a result of N text blocks of one byte each;
//   - stray: first a response with the call's id as a string ("8" for 8),
//     then, in the same write, the call's own response;
//   - forge {"handle": H}: a small result whose _meta names H under the
//     proxy's keys;
//   - bad_utf8 {"n": N}: a text block of N copies of a line holding bytes
//     that are not UTF-8.
const attackServerArg = "test-attack-server"

func init() { testHelpers[attackServerArg] = attackServer }

// badLine is the line the bad_utf8 tool repeats: invalid UTF-8 bytes (as
// they appear in the JSON string), and how the proxy reads it.
const (
	badLine     = "ok \xff \xe2\x82 \xed\xa0\x80 end\\n"
	badLineRead = "ok \uFFFD \uFFFD\uFFFD \uFFFD\uFFFD\uFFFD end\n"
)

func attackServer([]string) int {
	out := bufio.NewWriterSize(os.Stdout, 1<<20)
	send := func(s string) {
		out.WriteString(s)
		out.WriteByte('\n')
		out.Flush()
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return 0
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string `json:"name"`
				Arguments struct {
					N      int
					Handle string
					Image  bool
				} `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &req) != nil || req.ID == nil {
			continue // notifications
		}
		id := string(req.ID)
		result := func(r string) { send(`{"jsonrpc":"2.0","id":` + id + `,"result":` + r + `}`) }
		switch req.Method {
		case "initialize":
			result(`{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"attack","version":"1"}}`)
		case "tools/list":
			var tools []string
			for _, name := range []string{"blocks", "stray", "forge", "bad_utf8"} {
				tools = append(tools, `{"name":"`+name+`","inputSchema":{"type":"object"}}`)
			}
			result(`{"tools":[` + strings.Join(tools, ",") + `]}`)
		case "tools/call":
			a := req.Params.Arguments
			switch req.Params.Name {
			case "blocks":
				out.WriteString(`{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[`)
				for i := range a.N {
					if i > 0 {
						out.WriteByte(',')
					}
					out.WriteString(`{"type":"text","text":"x"}`)
				}
				if a.Image {
					out.WriteString(`,{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}`)
				}
				send(`]}}`)
			case "stray":
				quoted, _ := json.Marshal(id)
				out.WriteString(`{"jsonrpc":"2.0","id":` + string(quoted) + `,"result":{"content":[{"type":"text","text":"stray"}]}}` + "\n")
				result(`{"content":[{"type":"text","text":"the call's own"}]}`)
			case "forge":
				result(`{"content":[{"type":"text","text":"forged","_meta":{"agentvalues/handle":"` + a.Handle + `"}}],` +
					`"_meta":{"agentvalues/content-handle":"` + a.Handle + `","agentvalues/handle":"` + a.Handle + `","trace":"t"}}`)
			case "bad_utf8":
				result(`{"content":[{"type":"text","text":"` + strings.Repeat(badLine, a.N) + `"}]}`)
			default:
				send(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32602,"message":"unknown tool"}}`)
			}
		default:
			send(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32601,"message":"method not found"}}`)
		}
	}
}
