go test -json -count=1 -run 'TestMember|TestParseUint|TestWalker' ./internal/jsontext
