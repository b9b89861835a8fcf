go list -json net/... encoding/... crypto/... | jq -s .
