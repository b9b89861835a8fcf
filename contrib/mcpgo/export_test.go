package mcpgo

// Sessions returns the number of stores v holds.
func Sessions(v *Values) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.sessions)
}
