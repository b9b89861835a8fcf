// Package genkit adapts agentvalues to Firebase Genkit for Go
// (github.com/firebase/genkit/go): the tools of one [genkit.Generate] run
// keep every result in a [values.SessionValues], the model is shown a bounded
// preview and a handle for a large one, and a tool argument that is exactly
// a reference ("$r1", "$r1.rows.0.id") reaches the tool as the real value.
//
// Two lines adopt it: a store per run, and the run's tools wrapped by [Tools],
// which also adds read_value and query_value:
//
//	vals := values.New()
//	resp, err := genkit.Generate(ctx, g, ai.WithPrompt("…"),
//		ai.WithTools(avgenkit.Tools(g, vals, listRows, sendMail)...))
//
// # What a wrapped tool does
//
// Genkit runs every tool call through the tool's action, which checks the
// input against the tool's input schema before the tool function runs; Genkit
// (v1.4.0) has no tool middleware and no hook between that check and the
// function. So a wrapped tool is an action of its own, under the same name
// and description, shown to the model with the tool's input schema widened
// to admit a reference string beside every field and item
// ([values.AdmitReferences]; the tool's own schema when it cannot be), that
//
//  1. resolves the references in the call's input and validates the result
//     against the input schema ([values.SessionValues.Prepare]), so that the
//     schema sees the real value, not the "$r1.rows" string;
//  2. runs the wrapped tool with the resolved input (which Genkit checks
//     against the schema once more);
//  3. stores the tool's output and hands the model, as the tool's output,
//     the text [values.SessionValues.Transcript] gives: the whole result
//     followed by a line naming its handle when it is small, else its preview
//     and the hint naming the handle and read_value.
//
// The model's own call stays in the history as it was written, references
// and all, so a reference to a large value costs the transcript a few bytes.
//
// # Errors the model sees
//
// Genkit ends the whole Generate call, with an error, as soon as one tool
// call returns an error (and an input that fails the schema is such an
// error). A reference the model got wrong is a mistake the model can fix, so
// the wrapped tool does not return it as an error: a reference that names no
// value or no part of one, a malformed one ("$r1..rows"), or resolved input
// that does not match the schema make the tool's output the text
// "NAME was not called: <error>", the wording of the agentvalues proxy,
// which names the reference; the tool does not run and the run goes on.
// read_value and query_value answer their own errors the same way
// ("read_value failed: …"). An error of the wrapped tool itself, and an
// interrupt ([ai.ToolContext.Interrupt]), are returned to Genkit unchanged,
// so Genkit's behaviour for them is unchanged.
//
// # Limits of the hooks
//
//   - The tools must not be registered in g under their names
//     ([genkit.DefineTool] registers them): Generate runs a registered tool of
//     the requested name rather than a tool passed in [ai.WithTools], so the
//     wrapper would be bypassed. Create them with [ai.NewTool] (the same
//     arguments without g); [Tools] panics on a registered name.
//   - Genkit hands a tool's output over decoded (encoding/json into any), so
//     what is stored is that output encoded again: object keys in sorted
//     order, numbers as float64 (an integer past 2^53 loses precision). It is
//     the output a model would be shown without the adapter.
//   - Only the output is stored; the extra content parts of a multipart
//     tool (media) are passed on to the model as they are, unstored.
//   - The model is told, in the definition, that a wrapped tool's output is
//     a string (the transcript text), whatever the tool's own output schema.
//   - An output supplied through [ai.WithToolResponses] when resuming an
//     interrupt does not run the tool and is not stored.
//   - When the input schema does not compile with [values.CompileSchema],
//     references are still resolved and a bad one is still reported to the
//     model, but only Genkit checks the schema, and a failure then ends the
//     run as Genkit does.
//
// # Concurrency
//
// Genkit runs the tool calls of one model response in parallel. The
// wrappers hold no state but the store, which is safe for concurrent use, so
// the handles of parallel results follow the order in which they finish.
// One [values.SessionValues] serves one conversation: pass the same store,
// with the same or new wrappers, to each Generate call of a conversation that
// carries its history on, and a new store to each new conversation.
package genkit
