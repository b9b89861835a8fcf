python3 testdata/outputs/mcp-capture-everything.py
