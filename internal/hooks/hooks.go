// Package hooks lets the module's internal packages call what the values
// package does for them alone, without exporting it: the values package
// sets each hook as it is initialized, so a hook is never nil in a program
// that imports values.
package hooks

import "github.com/agentvalues/values/internal/jsontext"

// PutUTF8Output is values.SessionValues.PutOutput (s is a
// *values.SessionValues) of out that the caller knows to be valid UTF-8,
// because it decoded out from valid JSON: the check every other output
// costs (a pass over it) is not made. Output that is not valid UTF-8
// would be stored as text holding invalid bytes rather than as a binary
// value, so nothing else may call it.
var PutUTF8Output func(s any, out []byte) string

// ScanLimits is what values.SessionValues.Put has jsontext.Scan record of
// a JSON array or object it stores: the Limits of a Shape PutScannedJSON
// takes. Nothing may change it.
var ScanLimits *jsontext.Limits

// PutScannedJSON is values.SessionValues.Put (s is a *values.SessionValues)
// of json.RawMessage(b), where b is a valid JSON array or object with no
// white space around it and sh its Shape as jsontext.Scan with ScanLimits
// records it, its offsets base more than those in b (a scan of a document
// b was in: see jsontext.Limits.Inner). b is not scanned again. Anything
// else (b invalid, a Shape of other bytes or limits) would store an index
// that does not match its value, so nothing else may call it; a Shape is
// used once (its offsets are made b's in place).
var PutScannedJSON func(s any, b []byte, sh *jsontext.Shape, base int) string
