package values

import (
	"encoding/json"
)

// This file holds Tool, the definition of a ready-made tool: read_value
// (tool_read.go) and query_value (query.go).

// Tool is the definition of a tool an agent loop registers with a model:
// its name, a description for the model, and the JSON Schema of its input.
// [ReadValueTool] and [QueryValueTool] return the package's two.
type Tool struct {
	Name        string
	Description string
	InputSchema json.RawMessage
}
