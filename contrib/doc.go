// Package contrib holds no code of its own: each directory under it is
// the adapter of agentvalues to one Go agent framework, a Go module of its
// own (so that the core module's dependencies stay small), with its own
// README, example and tests driving the framework's own loop. The test of
// this package runs every adapter module's vet and tests, each module on
// its own with only its declared dependencies, so that `go test ./...` at
// the root of the repository covers them.
package contrib
