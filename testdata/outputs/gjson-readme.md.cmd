cat "$(go env GOMODCACHE)/github.com/tidwall/gjson@v1.18.0/README.md"
