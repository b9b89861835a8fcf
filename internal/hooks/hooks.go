// Package hooks lets the module's internal packages call what the values
// package does for them alone, without exporting it: the values package
// sets each hook as it is initialized, so a hook is never nil in a program
// that imports values.
package hooks

// PutUTF8Output is values.SessionValues.PutOutput (s is a
// *values.SessionValues) of out that the caller knows to be valid UTF-8,
// because it decoded out from valid JSON: the check every other output
// costs (a pass over it) is not made. Output that is not valid UTF-8
// would be stored as text holding invalid bytes rather than as a binary
// value, so nothing else may call it.
var PutUTF8Output func(s any, out []byte) string
