go test -json -count=1 strings
