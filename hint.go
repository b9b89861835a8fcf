package values

// ReferenceHint returns the line an agent loop appends after a preview
// (it begins with a newline). It names the exact forms the model types to
// pass the value, or a part of it, as a tool argument, and the read_value
// tool ([ReadValueTool]) that pages its bytes; register that tool, or
// write your own hint.
func ReferenceHint(handle string) string {
	return string(appendReferenceHint(nil, handle))
}

// appendReferenceHint appends ReferenceHint(handle) to dst.
func appendReferenceHint(dst []byte, handle string) []byte {
	dst = append(dst, "\n["...)
	h := len(dst)
	dst = appendHandle(dst, handle)
	hb := string(dst[h:]) // the handle as shown; short
	for _, part := range [...]string{
		" holds the full value for this run: pass \"$", hb,
		"\" as a tool argument to use all of it, \"$", hb, ".<field>\" or \"$", hb,
		".0\" for a part (\"$", hb, ".-1\" is the last item); read_value {\"ref\":\"", hb,
		"\"} pages its bytes]",
	} {
		dst = append(dst, part...)
	}
	return dst
}

// hintLen is the length of ReferenceHint's text without its handle.
var hintLen = len(ReferenceHint(""))
