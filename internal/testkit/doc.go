// Package testkit holds what the tests of several packages of this module
// share: a pager that reads a stored value through from its first byte to
// its last, as an agent does with read_value, and a harness that runs the
// test binary again as a child process (a server or command to talk to, or
// a writer to kill in the middle of its work), and the payloads of the
// benchmarks' blob server (AppendRows, AppendLog).
//
// It is for tests only; nothing outside a _test.go file imports it.
package testkit
