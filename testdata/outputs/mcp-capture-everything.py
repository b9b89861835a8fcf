#!/usr/bin/env python3
"""Capture a real MCP image result from @modelcontextprotocol/server-everything.

Run from the repository's root:  python3 testdata/outputs/mcp-capture-everything.py

It starts the server the project's CI installs (.ci/run:
npm install --prefix "$HOME/.cache/agentvalues/npm"
@modelcontextprotocol/server-everything@2026.8.31) over stdio, speaks raw
newline-delimited JSON-RPC to it, and writes beside this script:

  mcp-tiny-image-result.json    `result` of tools/call get-tiny-image: a text
                                block, an image block (base64 PNG, its
                                mimeType), and a text block
  mcp-gzip-resource-result.json `result` of tools/call gzip-file-as-resource
                                of /usr/share/common-licenses/GPL-3, passed as
                                a data URI, outputType "resource": one
                                embedded resource whose blob is base64 gzip

As mcp-capture.py does, it re-encodes the result compactly and checks that the
bytes occur verbatim in the server's line, so nothing is reformatted.
"""
import base64
import json
import os
import subprocess
import sys

OUT = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(os.environ["HOME"], ".cache/agentvalues/npm/node_modules/.bin/mcp-server-everything")


def main():
    proc = subprocess.Popen([SERVER, "stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)

    def send(msg):
        proc.stdin.write((json.dumps(msg) + "\n").encode())
        proc.stdin.flush()

    def recv(want_id):
        while True:
            raw = proc.stdout.readline()
            if not raw:
                sys.exit("server closed stdout; stderr: " + proc.stderr.read().decode(errors="replace"))
            msg = json.loads(raw)
            if msg.get("id") == want_id:
                if "error" in msg:
                    sys.exit("JSON-RPC error: " + raw.decode())
                return raw, msg["result"]

    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "agentvalues-capture", "version": "0"}}})
    recv(1)
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    with open("/usr/share/common-licenses/GPL-3", "rb") as f:
        license_uri = "data:text/plain;base64," + base64.b64encode(f.read()).decode()
    calls = [
        ("mcp-tiny-image-result.json", "get-tiny-image", {}),
        ("mcp-gzip-resource-result.json", "gzip-file-as-resource",
         {"name": "GPL-3.gz", "data": license_uri, "outputType": "resource"}),
    ]
    for i, (name, tool, args) in enumerate(calls, start=2):
        send({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": tool, "arguments": args}})
        raw, result = recv(i)
        data = json.dumps(result, ensure_ascii=False, separators=(",", ":")).encode()
        if b'"result":' + data not in raw:
            sys.exit(name + ": re-encoded result differs from the server's bytes")
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    proc.stdin.close()
    proc.wait(timeout=10)


if __name__ == "__main__":
    main()
