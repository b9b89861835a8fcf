package values

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
)

// This file holds the ready-made query_value tool that offers
// [SessionValues.Query] to a model.

// QueryValueTool returns the definition of the query_value tool, which
// [SessionValues.HandleQueryValue] serves. Its input is {"ref": string,
// "jq": string}, both required. Its description tells the model that a
// query is bounded in time, memory and output, and to narrow a query that
// passes a bound (the errors of [SessionValues.Query] say which bound, its
// size and how). Each call returns a new copy.
func QueryValueTool() Tool {
	return Tool{
		Name: "query_value",
		Description: "Ask a question of a stored value (a tool result kept under a handle such as r3) without reading it: " +
			"run a jq program over it. The result is stored under a new handle and shown (whole when small, else previewed); " +
			"pass it on to another tool as \"$rN\". Examples: {\"ref\":\"r3\",\"jq\":\"length\"}, " +
			"{\"ref\":\"r3\",\"jq\":\"[.[] | select(.status == 500) | .id]\"}, {\"ref\":\"$r3.rows\",\"jq\":\"max_by(.size)\"}. " +
			"Text is a string (JSON Lines: the array of records). No input, env or modules; bounded in time, memory and output size: " +
			"if a query passes a bound, narrow it (select, limit, first, or a part such as \"$r3.rows\").",
		InputSchema: json.RawMessage(queryValueSchema),
	}
}

const queryValueSchema = `{"type":"object","properties":{` +
	`"ref":{"type":"string","description":"handle or reference to query: \"r3\", \"$r3\", \"$r3.rows\""},` +
	`"jq":{"type":"string","description":"a jq program, such as \"[.[] | select(.path | endswith(\\\"_test.go\\\"))] | length\""}},` +
	`"required":["ref","jq"],"additionalProperties":false}`

// HandleQueryValue serves one query_value call: args is the call's raw
// JSON arguments, {"ref": string, "jq": string} (see [QueryValueTool]),
// never resolved (its ref is a reference). It returns what
// [SessionValues.Query] returns: the new handle and the text for the
// transcript. Its error is meant for the model: arguments that are not
// such an object wrap [ErrReadArgs]; the others are those of Query. It
// never panics on any args.
func (s *SessionValues) HandleQueryValue(ctx context.Context, args []byte) (Observation, error) {
	var in struct {
		Ref *string `json:"ref"`
		JQ  *string `json:"jq"`
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil || in.Ref == nil || in.JQ == nil {
		return Observation{}, fmt.Errorf(`values: query_value: %w: want a JSON object such as {"ref":"r3","jq":"length"}, with no other fields`, ErrReadArgs)
	}
	return s.Query(ctx, *in.Ref, *in.JQ)
}
