cat "$(go env GOMODCACHE)/github.com/modelcontextprotocol/go-sdk@v1.8.0/README.md"
