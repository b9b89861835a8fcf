cd "$(go env GOMODCACHE)/github.com/dustin" && diff -ru go-humanize@v1.0.0 go-humanize@v1.0.1   # after: go mod download github.com/dustin/go-humanize@v1.0.0 github.com/dustin/go-humanize@v1.0.1
