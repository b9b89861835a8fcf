go test -json -count=1 -timeout=300ms encoding/json
