//go:build !linux

package mcpproxy

// Lines are mapped only on Linux, which can grow a mapping in place.

func mapLine(int) []byte              { return nil }
func growLine(m []byte, _ int) []byte { return m }
func unmapLine([]byte)                {}
