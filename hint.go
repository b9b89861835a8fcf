package values

// ReferenceHint returns the line an agent loop appends after a preview
// (it begins with a newline). It names the exact forms the model types to
// pass the value, or a part of it, as a tool argument, and the read_value
// tool ([ReadValueTool]) that pages its bytes; register that tool, or
// write your own hint.
func ReferenceHint(handle string) string {
	h := string(appendHandle(nil, handle))
	return "\n[" + h + " holds the full value for this run: pass \"$" + h +
		"\" as a tool argument to use all of it, \"$" + h + ".<field>\" or \"$" + h +
		".0\" for a part (\"$" + h + ".-1\" is the last item); read_value {\"ref\":\"" + h +
		"\"} pages its bytes]"
}
