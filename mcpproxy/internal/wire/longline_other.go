//go:build !linux

package wire

// Lines are mapped only on Linux, which can grow a mapping in place.

func mapLine(int) []byte                      { return nil }
func growLine(m []byte, _ int) ([]byte, bool) { return m, false }
func unmapLine([]byte)                        {}
func releasePages([]byte)                     {}
func movePages(_, _ []byte) bool              { return false }
