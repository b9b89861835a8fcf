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
// A [Value] (values.go) is immutable once stored and is kept as its raw
// bytes: the JSON as received, the UTF-8 text, or the binary bytes. A
// [SessionValues] (store.go) is the store of one run: its values under
// the handles r1, r2, …, and its options. [SessionValues.Put] and
// [SessionValues.PutOutput] (put.go) validate a value once, in the same
// pass that computes the small index previews need (index.go; index_text.go
// for the JSON a text holds, index_table.go for a table (with
// index_table_delimited.go and index_table_aligned.go), index_diff.go,
// index_yaml.go (with index_yaml_line.go), index_xml.go, index_html.go and
// index_markdown.go for a unified diff, YAML, XML, HTML and Markdown), so a
// preview costs time proportional to the preview, never to the value. No
// decoded tree of a value is kept. [SessionValues.Observe] and
// [SessionValues.Transcript] (observe.go) give what enters the transcript
// for a result: the result whole when small, else its preview and hint.
//
// # Previews
//
// [RenderPreview] (render.go, and render_array.go, render_object.go,
// render_text.go and render_doc.go for each shape) describes a value in
// one line (a text head or tail may carry escaped newlines) that is never
// longer than the store's preview bound, whatever the value: for an
// array, how many items, the keys and value kinds of its items over every
// item, and its first and last items; for an object, its fields, with the
// part that holds most of its bytes previewed as a value of its own; for a
// text, its size and lines and its ends, or the JSON, JSON stream or table
// it holds (a table's header, or numbered columns when it has none, and
// what each column's cells take over every row), or the structure of a
// document in a data format before its ends: of a unified diff, its files
// (the first and the last by name), the lines added and removed and its
// hunks; of YAML, its top-level keys with what each holds (a scalar, or
// how many keys or items and which first), or its items with the keys they
// have; of XML, its root element and how many children it has of each
// name, the first and the last with their attributes; of HTML, its title,
// the outline of its headings, how many tables and links, and the head of
// its body; of Markdown, its headings, its tables and its code blocks by
// language. See the function for the grammar. The rules by which each
// part is cut to its budget are in clip.go. [ReferenceHintFor] (hint.go)
// is the line that tells the model how to reach the rest, in the forms
// that fit the value's kind, and [StoredLine] the line after a result
// shown whole: what it is (kind, size, keys, items, lines, rows; an
// envelope's text) and how to pass it.
//
// # References
//
// A tool argument that is exactly a string of the form (ref.go)
//
//	ref     = "$" handle *("." segment)
//	handle  = "r" digit1-9 *digit          ; r0, r01 are not handles
//	segment = 1*(char / "\." / "\\")       ; "\." is a literal dot inside a key
//
// names a stored value or a part of one: a segment is an object key or an
// array index (0, 1, …; -1 is the last item). [SessionValues.Resolve]
// (resolve.go) replaces each such string with the JSON of what it names,
// found as lookup.go says (lookup_cache.go holds what one call
// remembers); a string that merely contains one is left alone, "$$r1"
// passes the literal "$r1", and a reference that names nothing is left
// as written and reported. [SessionValues.Prepare] resolves, then
// validates against the tool's [Schema] (schema.go; schema_limits.go for
// what validation accepts, schema_violation.go for how it reports), and
// explains every violation by JSON pointer and reference; [AdmitReferences]
// (schema_admit.go) widens a schema for clients that enforce it.
// [SessionValues.Read] (read.go) and the read_value tool ([ReadValueTool],
// tool_read.go) page any value's bytes; [SessionValues.Query] (query.go,
// with its memory gate in query_gate.go) and the query_value tool
// ([QueryValueTool], tool_query.go) run a jq program over a value and
// store its result. [Tool] (tool.go) is the definition of either tool.
//
// # Limits
//
// Every limit is an [Option] or constant with a documented default: the
// preview bound ([WithMaxPreview], 2 KiB), the size up to which
// [SessionValues.Observe] shows a result whole ([WithInlineLimit], the
// preview bound), the size of resolved arguments ([WithMaxResolved],
// 64 MiB), the page size of reads ([DefaultReadLimit], 32 KiB, at most
// [MaxReadLimit]), the bounds of a query ([WithQueryLimits]), what schema
// validation accepts and how many steps it may take ([Schema.Validate])
// and, with durability, the size above which values live only in the
// durable store ([WithMemoryLimit], 4 MiB).
//
// # Durability
//
// A store made by [Open] (durable_open.go) persists every value to a
// [Durable] (durable.go; the package store has a directory and a memory
// one), keeps values above a memory limit ([WithMemoryLimit], 4 MiB) only
// there (durable_disk.go), and continues a session in a new process with
// its handles, previews, references and reads intact, from the records
// it appended (durable_meta.go). A store failure never fails a Put
// ([WithStoreErrors], [SessionValues.Persisted]).
//
// # Cost
//
// Put validates and indexes a value in one pass over its bytes (a JSON
// array of 4 MiB or more by two goroutines, one for each half; both have
// ended when Put returns) and keeps the slice it is given, not a copy, and
// an index: a description of its first and last children, and where one
// item in 512 bytes of a large array starts and a 32-byte filter of the
// keys of every 1 KiB of a large object's fields, for the value and for
// the part of it that dominates its preview, which take at most 1/25 of
// its size plus a few hundred bytes; and, for an array, the keys of its
// object items (up to 256), each with a summary of its values of a fixed
// size (some 200 bytes: up to 8 short strings as spans, the smallest and
// largest number, the booleans), whatever the number of items. The index is not stored durably: a
// value read back from a [Durable] is indexed again on its first lookup.
// A preview costs time proportional to the preview.
//
// [SessionValues.Resolve] makes one pass over the arguments, looks up each
// distinct reference once per call, and copies each substituted value once,
// with one allocation for the result: 1 KiB of arguments holding three
// references to small values resolves in a few microseconds with 7
// allocations (the result, the list of references, the three reference
// strings and two to plan the splice). A lookup starts from what Put
// recorded and scans the stored JSON from there, skipping what it does not
// name, without decoding; it is charged, against the call's budget of 4
// times [WithMaxResolved], what it scans:
//   - nothing for a child that the index answers (the first three and last
//     two items of an array, every field of an object of up to 24 keys, an
//     index out of range of an array whose length it knows);
//   - for any other item of an array Put indexed (a stored array, a stream
//     of JSON values in a text, the part of a value that dominates its
//     preview, such as the rows of {"rows":[…]}, or the JSON a string holds
//     when it is that part), the walk to it from the item marked before it,
//     less than 512 bytes, and the item when the path ends there or goes on
//     into it;
//   - for a key of an object Put indexed (likewise), a test of 32 bytes per
//     block of about 1 KiB of its fields, from the last block back, and a
//     scan of each block whose test admits the key, stopping at the last
//     block that holds it, so that the last of duplicate keys is found
//     without scanning the fields before its block;
//   - an array Put did not index walked up to the item, and an object
//     scanned whole;
//   - the JSON a string holds that Put did not index, decoded and
//     validated, twice its size;
//   - a value kept only in the durable store read back whole.
//
// Within one call, a value read back and every container reached by
// scanning at least 4 KiB are remembered, so that other paths through them
// do not read or scan them again: a walk through such an array starts from
// the nearest item an earlier walk marked (one item in 512 bytes) or from
// where the walks reached, and the first key looked up in such an object
// indexes its keys in blocks for the rest of the call. Row ids from one
// large result ("$r1.rows.0.id", "$r1.rows.1.id", … or "$r1.0.id",
// "$r1.1.id", …) thus cost, in any order, about 600 bytes each: 10,000 of
// them from a 10 MB array resolve in less time than one validating pass
// over it.
//
// [SessionValues.Read] finds a path as a lookup of Resolve does, within the
// same budget. Then a page costs time and memory proportional to the
// page, whatever the size of the value, with no copy of it; a value kept
// only in the durable store is read back whole, its digest verified,
// unless the store holds it ([WithMemoryLimit]: the one read back last).
// The exception is a path to a JSON string: its escapes make decoded
// offsets unknowable without reading, so each page of it scans the
// string's raw bytes (all of them for Total, and again up to the page),
// still without copying or allocating beyond the page.
//
// Validation decodes the arguments once and runs the schema within a
// budget of steps ([Schema.Validate]).
package values
