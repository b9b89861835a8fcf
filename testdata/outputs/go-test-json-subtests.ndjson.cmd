go test -json -count=1 encoding/json
