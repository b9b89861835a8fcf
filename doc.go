// Package values keeps every tool result of an agent run live under a short
// handle, puts a bounded, typed preview of it in the transcript, and lets
// the model pass the value back by reference.
//
// A tool result that is larger than the model's context is usually cut down
// before it enters the transcript, and the cut part is gone. With this
// package the loop stores the whole result in a [SessionValues], shows the
// model a preview such as
//
//	r1 = array(len=100, [:3]=[{id:1,name:"a", …}, …], [-2:]=[…])
//
// and, when the model later calls a tool with the argument "$r1.57.name",
// hands the tool the real value before the tool's schema is checked.
//
//	vals := values.New()
//	obs := vals.Observe(toolOutput) // store, then preview + hint for the transcript
//	transcript = append(transcript, obs.Text)
//	// ... the model answers with a call whose arguments say "$r1.rows.0.id"
//	args, refs, err := vals.Prepare(schema, call.Arguments)
//
// # Values
//
// A value is immutable once stored and is kept as its raw bytes: the JSON as
// received, the UTF-8 text, or the binary bytes. It is validated once, at
// Put, in the same pass that computes the small index previews need, so a
// preview costs time proportional to the preview, never to the value. No
// decoded tree of a value is kept. A JSON array of 4 MiB or more is
// validated by two goroutines, one for each half; both have ended when Put
// returns.
//
// # Previews
//
// [RenderPreview] describes a value in one line (a text head or tail may
// carry escaped newlines) that is never longer than the store's preview
// bound, whatever the value: for an array, how many items, the keys and
// value kinds of its items over every item, and its first and last items;
// for an object, its fields, with the part that holds most of its bytes
// previewed as a value of its own; for a text, its size and lines and its
// ends, or the JSON, JSON stream or table it holds. See the function for
// the grammar. [ReferenceHint] is the line that tells the model how to
// reach the rest.
//
// # References
//
// A tool argument that is exactly a string of the form
//
//	ref     = "$" handle *("." segment)
//	handle  = "r" digit1-9 *digit          ; r0, r01 are not handles
//	segment = 1*(char / "\." / "\\")       ; "\." is a literal dot inside a key
//
// names a stored value or a part of one: a segment is an object key or an
// array index (0, 1, …; -1 is the last item). [SessionValues.Resolve]
// replaces each such string with the JSON of what it names; a string that
// merely contains one is left alone, "$$r1" passes the literal "$r1", and a
// reference that names nothing is left as written and reported.
// [SessionValues.Prepare] resolves, then validates against the tool's
// [Schema], and explains every violation by JSON pointer and reference.
// [SessionValues.Read] and the read_value tool ([ReadValueTool]) page any
// value's bytes.
//
// # Limits
//
// Every limit is an [Option] or constant with a documented default: the
// preview bound ([WithMaxPreview], 2 KiB), the size up to which
// [SessionValues.Observe] shows a result whole ([WithInlineLimit], the
// preview bound), the size of resolved arguments ([WithMaxResolved],
// 64 MiB), the page size of reads ([DefaultReadLimit], 32 KiB, at most
// [MaxReadLimit]), what schema validation accepts and how long it may
// take ([Schema.Validate]) and, with durability, the size
// above which values live only in the durable store ([WithMemoryLimit],
// 4 MiB).
//
// # Durability
//
// A store made by [Open] persists every value to a [Durable] (the package
// store has a directory and a memory one), keeps values above a memory
// limit ([WithMemoryLimit], 4 MiB) only there, and continues a session in
// a new process with its handles, previews, references and reads intact.
// A store failure never fails a Put ([WithStoreErrors],
// [SessionValues.Persisted]).
//
// # Cost
//
// Put validates and indexes a value in one pass over its bytes (a JSON
// array of 4 MiB or more by two goroutines) and keeps the slice it is
// given, not a copy, and an index: a description of its first and last
// children, and where one item in 512 bytes of a large array starts and a
// 32-byte filter of the keys of every 1 KiB of a large object's fields,
// for the value and for the part of it that dominates its preview, which
// take at most 1/25 of its size plus a few hundred bytes. The index is not
// stored durably: a value read back from a [Durable] is indexed again on its
// first lookup. A preview costs time proportional to the preview.
// Resolve makes one pass over the arguments, looks up each distinct
// reference once per call (a path starts from what Put recorded of a
// large array or object, item marks and key blocks, and scans the stored
// JSON from there, skipping what it does not name, without decoding; see
// [SessionValues.Resolve] for what a call may scan), and copies each
// substituted value once, with one allocation for the result: 1 KiB of
// arguments holding three references to small values resolves in a few
// microseconds with 7 allocations (the result, the list of references,
// the three reference strings and two to plan the splice). A read page
// costs time and memory proportional to the page, except for a path to a
// JSON string, whose raw bytes each page scans. Validation decodes the
// arguments once and runs the schema within a budget ([Schema.Validate]).
package values
