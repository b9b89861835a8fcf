package values

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Some clients and model providers enforce a tool's input schema before a
// call is sent, so a model cannot write "$r3" where the schema asks for an
// array. AdmitReferences rewrites an input schema so that a reference
// string is admitted beside every field whose schema would refuse one:
//
//	{"type":"array","items":{"type":"integer"}}
//	→ {"anyOf":[{"type":"array","items":{"type":"integer"}},{"type":"string","pattern":ReferencePattern}]}
//
// The arguments are still to be validated against the original schema,
// after the references are resolved ([SessionValues.Prepare]). The MCP
// proxy and gateway advertise rewritten schemas, as the framework adapters
// that can do.

// ReferenceNote is the sentence a tool's description gains where
// references are admitted, so that the model knows it may write one.
const ReferenceNote = `(Via agentvalues: any argument may be a stored-result reference such as "$r1" or "$r1.items.0.path"; the stored value is substituted before the call.)`

// ErrNotRewritten is wrapped by the error of [AdmitReferences] for a schema
// it leaves as it is.
var ErrNotRewritten = errors.New("schema not rewritten to admit references")

// AdmitReferences returns the JSON of the tool input schema raw in which
// the schema of every property, pattern property, additional property and
// array item, at every depth, also admits a reference string (see
// [ReferencePattern]). The object itself does not (a call's arguments are
// an object), and definitions ($defs, definitions) are left as they are: a
// field whose schema is only a $ref admits a reference, the fields inside
// the definition do not. raw is not modified.
//
// It fails with an error wrapping [ErrNotRewritten] when raw is not a JSON
// object, when it points into its own fields ($ref "#/properties/…", which
// the rewriting would move) or when the rewritten schema does not compile;
// the caller then offers the schema as it is.
func AdmitReferences(raw []byte) ([]byte, error) {
	var s map[string]any
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber() // numbers are kept as written
	if err := dec.Decode(&s); err != nil || s == nil {
		return nil, fmt.Errorf("%w: not a JSON object", ErrNotRewritten)
	}
	if ref := localRef(s); ref != "" {
		return nil, fmt.Errorf("%w: it points into its own fields ($ref %q), which the rewriting would move", ErrNotRewritten, ref)
	}
	out, err := json.Marshal(admitChildren(s))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotRewritten, err)
	}
	if _, err := CompileSchema(out); err != nil {
		return nil, fmt.Errorf("%w: the rewritten schema does not compile: %v", ErrNotRewritten, err)
	}
	return out, nil
}

// refString is the schema of a reference string.
func refString() map[string]any {
	return map[string]any{"type": "string", "pattern": ReferencePattern}
}

// admitChildren returns a copy of the schema s whose subschemas of fields
// and items admit references.
func admitChildren(s map[string]any) map[string]any {
	out := make(map[string]any, len(s))
	for k, v := range s {
		switch k {
		case "properties", "patternProperties":
			if m, ok := v.(map[string]any); ok {
				props := make(map[string]any, len(m))
				for name, sub := range m {
					props[name] = admitValue(sub)
				}
				v = props
			}
		case "additionalProperties", "additionalItems", "unevaluatedProperties", "unevaluatedItems":
			v = admitValue(v)
		case "items", "prefixItems":
			if list, ok := v.([]any); ok { // a tuple (draft 4 to 2019-09 items, prefixItems)
				subs := make([]any, len(list))
				for i, sub := range list {
					subs[i] = admitValue(sub)
				}
				v = subs
			} else {
				v = admitValue(v)
			}
		}
		out[k] = v
	}
	return out
}

// admitValue returns the schema of a field or item, s, admitting a
// reference string beside whatever s admits.
func admitValue(s any) any {
	m, ok := s.(map[string]any)
	if !ok {
		return s // true admits a reference already; false admits nothing, and stays so
	}
	inner := admitChildren(m)
	if admitsAnyString(m) {
		return inner
	}
	out := map[string]any{"anyOf": []any{inner, refString()}}
	for _, k := range []string{"title", "description"} {
		if v, ok := m[k]; ok {
			out[k] = v // shown beside the choice as well
		}
	}
	return out
}

// constrainsString lists the keywords under which a schema that admits
// strings may still refuse "$r3".
var constrainsString = []string{"enum", "const", "pattern", "format", "minLength", "maxLength", "not", "anyOf", "oneOf", "allOf", "$ref", "$dynamicRef", "$recursiveRef", "if", "contentEncoding", "contentMediaType"}

// admitsAnyString reports whether the schema s admits every string, so
// that it needs no alternative.
func admitsAnyString(s map[string]any) bool {
	switch t := s["type"].(type) {
	case nil:
	case string:
		if t != "string" {
			return false
		}
	case []any:
		found := false
		for _, x := range t {
			found = found || x == "string"
		}
		if !found {
			return false
		}
	default:
		return false
	}
	for _, k := range constrainsString {
		if _, ok := s[k]; ok {
			return false
		}
	}
	return true
}

// localRef returns a $ref of the schema s that points into s itself
// outside its definitions ("#/properties/a/items"), or "". Rewriting moves
// the fields such a pointer names, so a schema that has one is offered as
// it is.
func localRef(s any) string {
	switch s := s.(type) {
	case map[string]any:
		for k, v := range s {
			if ref, ok := v.(string); ok && (k == "$ref" || k == "$dynamicRef" || k == "$recursiveRef") &&
				strings.HasPrefix(ref, "#/") && !strings.HasPrefix(ref, "#/$defs/") && !strings.HasPrefix(ref, "#/definitions/") {
				return ref
			}
			if ref := localRef(v); ref != "" {
				return ref
			}
		}
	case []any:
		for _, v := range s {
			if ref := localRef(v); ref != "" {
				return ref
			}
		}
	}
	return ""
}
