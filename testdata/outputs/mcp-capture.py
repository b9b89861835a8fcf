#!/usr/bin/env python3
"""Capture real MCP tool results from @modelcontextprotocol/server-filesystem.

Run from /work/lib:  python3 testdata/outputs/mcp-capture.py

It starts the server the project's CI installs (.ci/run:
npm install --prefix "$HOME/.cache/agentvalues/npm"
@modelcontextprotocol/server-filesystem@2026.8.31) over stdio with /work/lib
as its one allowed directory, speaks raw newline-delimited JSON-RPC to it, and
writes beside this script:

  mcp-transcript.ndjson              every line the server printed on stdout, as is
  mcp-tools-list-result.json         `result` of tools/list
  mcp-read-file-result.json          `result` of tools/call read_text_file README.md
  mcp-list-directory-result.json     `result` of tools/call list_directory /work/lib
  mcp-directory-tree-result.json     `result` of tools/call directory_tree /work/lib
  mcp-directory-tree-text.json       that result's content[0].text (JSON inside a string)

Each `result` file holds the exact bytes the server sent for that member: the
script re-encodes it compactly (as JavaScript's JSON.stringify does) and checks
the bytes occur verbatim in the server's line, so nothing is reformatted.
"""
import json
import os
import subprocess
import sys

ROOT = "/work/lib"
OUT = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(os.environ["HOME"], ".cache/agentvalues/npm/node_modules/.bin/mcp-server-filesystem")


def main():
    proc = subprocess.Popen([SERVER, ROOT], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=ROOT)
    transcript = []

    def send(msg):
        proc.stdin.write((json.dumps(msg) + "\n").encode())
        proc.stdin.flush()

    def recv(want_id):
        while True:
            raw = proc.stdout.readline()
            if not raw:
                sys.exit("server closed stdout; stderr: " + proc.stderr.read().decode(errors="replace"))
            transcript.append(raw)
            msg = json.loads(raw)
            if msg.get("id") == want_id:
                if "error" in msg:
                    sys.exit("JSON-RPC error: " + raw.decode())
                return raw, msg["result"]

    def save_result(name, raw, result):
        data = json.dumps(result, ensure_ascii=False, separators=(",", ":")).encode()
        if b'"result":' + data not in raw:
            sys.exit(name + ": re-encoded result differs from the server's bytes")
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)

    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "agentvalues-capture", "version": "0"}}})
    recv(1)
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    send({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
    save_result("mcp-tools-list-result.json", *recv(2))

    calls = [
        ("mcp-read-file-result.json", "read_text_file", {"path": ROOT + "/README.md"}),
        ("mcp-list-directory-result.json", "list_directory", {"path": ROOT}),
        ("mcp-directory-tree-result.json", "directory_tree",
         {"path": ROOT, "excludePatterns": [".git", "testdata/outputs"]}),
    ]
    tree = None
    for i, (name, tool, args) in enumerate(calls, start=3):
        send({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": tool, "arguments": args}})
        raw, result = recv(i)
        save_result(name, raw, result)
        if tool == "directory_tree":
            tree = result["content"][0]["text"]

    proc.stdin.close()
    proc.wait(timeout=10)

    json.loads(tree)  # the text block is itself JSON
    with open(os.path.join(OUT, "mcp-directory-tree-text.json"), "wb") as f:
        f.write(tree.encode())
    with open(os.path.join(OUT, "mcp-transcript.ndjson"), "wb") as f:
        f.write(b"".join(transcript))


if __name__ == "__main__":
    main()
