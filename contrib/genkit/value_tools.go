package genkit

import (
	"context"
	"encoding/json"
	"fmt"

	values "github.com/agentvalues/values"
	"github.com/firebase/genkit/go/ai"
)

// ReadValue returns the read_value tool over vals ([values.ReadValueTool]),
// a dynamic tool for [ai.WithTools]: it pages the bytes of a stored value,
// each page ending with the call for the next one. Its input is never
// resolved (its ref is itself a reference). An error, such as an unknown
// ref or a bad offset, is its output, "read_value failed: <error>", not an
// error of the run.
func ReadValue(vals *values.SessionValues) ai.Tool {
	def := values.ReadValueTool()
	return newValueTool(def.Name, def.Description, schemaMap(def.InputSchema), false,
		func(_ context.Context, input []byte) (*ai.MultipartToolResponse, error) {
			page, err := vals.HandleReadValue(input)
			if err != nil {
				return &ai.MultipartToolResponse{Output: fmt.Sprintf("%s failed: %v", def.Name, err)}, nil
			}
			return &ai.MultipartToolResponse{Output: page}, nil
		})
}

// QueryValue returns the query_value tool over vals ([values.QueryValueTool]),
// a dynamic tool for [ai.WithTools]: it runs a jq program over a stored value
// and stores the result under a new handle, shown as any tool result is. Its
// input is never resolved. An error of the query (a parse error, a time or
// size bound) is its output, "query_value failed: <error>"; only a run whose
// context is done gets the context's error, which ends it.
func QueryValue(vals *values.SessionValues) ai.Tool {
	def := values.QueryValueTool()
	return newValueTool(def.Name, def.Description, schemaMap(def.InputSchema), false,
		func(ctx context.Context, input []byte) (*ai.MultipartToolResponse, error) {
			obs, err := vals.HandleQueryValue(ctx, input)
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				return &ai.MultipartToolResponse{Output: fmt.Sprintf("%s failed: %v", def.Name, err)}, nil
			}
			return &ai.MultipartToolResponse{Output: obs.Text}, nil
		})
}

// schemaMap decodes one of the library's tool schemas, which are valid JSON.
func schemaMap(raw json.RawMessage) map[string]any {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		panic("genkit: the library's tool schema is not a JSON object: " + err.Error())
	}
	return m
}
