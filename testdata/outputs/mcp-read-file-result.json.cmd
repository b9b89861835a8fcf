python3 testdata/outputs/mcp-capture.py
