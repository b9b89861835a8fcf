package values

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/agentvalues/values/internal/jsontext"
)

// This file holds the ready-made read_value tool that offers
// [SessionValues.Read] to a model.

// ReadValueTool returns the definition of the read_value tool, which
// [SessionValues.HandleReadValue] serves. Its input is
// {"ref": string, "offset": integer ≥ 0, "limit": integer}, with ref
// required. Each call returns a new copy.
func ReadValueTool() Tool {
	return Tool{
		Name: "read_value",
		Description: "Read the bytes of a stored value (a tool result kept under a handle such as r3), one page at a time. " +
			"Text values and string fields are read as text, JSON values as their JSON, binary values as base64. " +
			"Start at offset 0; a page that is not the last ends with a line giving the exact read_value call for the next page. " +
			"Pass a path to read only a part: \"$r3.content\" reads the text of field content, \"$r3.rows.-1\" the last row.",
		InputSchema: json.RawMessage(readValueSchema),
	}
}

var readValueSchema = `{"type":"object","properties":{` +
	`"ref":{"type":"string","description":"handle or reference to read: \"r3\", \"$r3\", \"$r3.content\", \"$r3.rows.0\""},` +
	`"offset":{"type":"integer","minimum":0,"default":0,"description":"byte offset to start at; 0 for the first page, then the offset the previous page names"},` +
	`"limit":{"type":"integer","minimum":0,"description":"most bytes to return, continuation line included; default ` +
	strconv.Itoa(DefaultReadLimit) + `, at most ` + strconv.Itoa(MaxReadLimit) + ` (larger values are lowered)"}},` +
	`"required":["ref"],"additionalProperties":false}`

// HandleReadValue serves one read_value call: args is the call's raw JSON
// arguments, {"ref": string, "offset": integer, "limit": integer} with ref
// required (see [ReadValueTool]). It returns [Page.String] of
// [SessionValues.Read]. Its error is a tool-level error whose message is
// meant for the model: it wraps [ErrReadArgs] for arguments that are
// not such an object (unknown fields and fractional numbers included), and
// otherwise the error of Read. It never panics on any args.
func (s *SessionValues) HandleReadValue(args []byte) (string, error) {
	var in map[string]json.RawMessage
	if err := json.Unmarshal(args, &in); err != nil || in == nil {
		return "", fmt.Errorf(`values: read_value: %w: want a JSON object such as {"ref":"r3","offset":0}`, ErrReadArgs)
	}
	for _, k := range slices.Sorted(maps.Keys(in)) {
		if k != "ref" && k != "offset" && k != "limit" {
			return "", fmt.Errorf(`values: read_value: %w: unknown field %s; the fields are "ref", "offset" and "limit"`, ErrReadArgs, jsontext.QuoteClipped(k))
		}
	}
	var ref string
	v, ok := in["ref"]
	if !ok {
		return "", fmt.Errorf(`values: read_value: %w: "ref" is missing; pass the handle to read, such as {"ref":"r3"}`, ErrReadArgs)
	}
	if v[0] != '"' || json.Unmarshal(v, &ref) != nil {
		return "", fmt.Errorf(`values: read_value: %w: "ref" must be a string such as "r3", got %s`, ErrReadArgs, jsontext.AppendClipped(nil, v, 40))
	}
	offset, err := intArg(in, "offset")
	if err != nil {
		return "", err
	}
	limit, err := intArg(in, "limit")
	if err != nil {
		return "", err
	}
	p, err := s.Read(ref, offset, limit)
	if err != nil {
		return "", err
	}
	return p.String(), nil
}

// intArg parses the integer argument name of in. A missing one or null is
// 0, the default; an integral number in another form (1e3, 2.0) is
// accepted, and one beyond the int range is clamped (so a huge offset reads
// past the end).
func intArg(in map[string]json.RawMessage, name string) (int, error) {
	v, ok := in[name]
	if !ok || string(v) == "null" {
		return 0, nil
	}
	bad := fmt.Errorf("values: read_value: %w: %q must be an integer, got %s", ErrReadArgs, name, jsontext.AppendClipped(nil, v, 40))
	if len(v) == 0 || !(v[0] == '-' || '0' <= v[0] && v[0] <= '9') {
		return 0, bad
	}
	if n, err := strconv.ParseInt(string(v), 10, 0); err == nil {
		return int(n), nil
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) || f != math.Trunc(f) {
		return 0, bad
	}
	switch {
	case f >= math.MaxInt:
		return math.MaxInt, nil
	case f <= math.MinInt:
		return math.MinInt, nil
	}
	return int(f), nil
}
