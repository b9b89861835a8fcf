package mcpgo

import values "github.com/agentvalues/values"

// Sessions returns the number of stores v holds.
func Sessions(v *Values) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.sessions)
}

// Stores returns the stores v holds.
func Stores(v *Values) []*values.SessionValues {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []*values.SessionValues
	for _, vals := range v.sessions {
		out = append(out, vals)
	}
	return out
}
