// Package store keeps value bodies durably: a content-addressed store with
// per-session read grants, retention and a per-session handle table, so a
// session can be reopened with its handles intact. Its backends, [Dir] and
// [Memory], implement [values.Durable] directly: pass one to [values.Open].
//
// A body's key is its SHA-256 in lowercase hex ([KeyOf]). Storing the same
// bytes again, from any session, writes nothing new; it only grants the
// storing session read access. A session reads only bodies it stored
// itself: another session's key is [ErrDenied], an unknown one
// [ErrNotFound], one past its retention [ErrExpired], and bytes that no
// longer hash to their key [ErrIntegrity] (they are never returned).
//
//	st, err := store.OpenDir(dir) // or store.NewMemory()
//	if err != nil { ... }
//	defer st.Close()
//	s, err := values.Open(st, "session-1") // its values persist in st
//	...
//	// Or directly:
//	key, err := st.PutBody("session-1", body)
//	if err != nil { ... } // the value stays usable in memory; show no key
//	err = st.AppendRecord("session-1", values.Record{Handle: "r1", Key: key, Kind: "text", Size: int64(len(body))})
//	recs, err := st.Records("session-1") // after a restart
//	body, err = st.Body("session-1", recs[0].Key)
//
// # Backends
//
// [Dir] is the embedded default: a directory written with atomic,
// fsynced, never-overwriting writes and read back with a digest check.
// [Memory] keeps everything in memory. Both are safe for concurrent use,
// and both give the guarantees below. The package store/redisstore is a
// third backend, on Redis or Redis Cluster, for fleets that share one
// store. All three pass one conformance suite, store/storetest.Run, which
// a new backend runs too; storetest also holds test aids for code that
// persists through a values.Durable, such as a store whose every call
// fails.
//
// # Guarantees
//
// PutBody returns a key only for a body that is durable (for a Dir:
// fsynced and renamed into place) and a grant that is recorded; on any
// error the key is "" and nothing may be assumed granted. Body returns a
// copy the caller may modify, and never bytes that do not hash to the
// key. The handle table of a session is append-only and not interpreted:
// a later record with the same Handle is simply another record. Records
// never drops a record silently: one the store can no longer read back is
// returned as a lost record ([values.Record.Lost]) at its place, and
// [values.Open] gives it the handle number after the highest before it.
// Close releases the store; later calls fail with [ErrClosed], and Close
// itself may be called again and returns nil.
//
// # Retention
//
// A grant lasts [DefaultTTL], or what [WithTTL] sets, from the PutBody
// that made or last renewed it. Expired grants are kept, so that Body can
// say expired rather than not found. Cleanup runs in two phases:
// [Cleaner.Plan] reports what would be deleted (bodies without a live
// grant, temporary files left by interrupted writes) and what will not be
// touched (anything the store does not own, symbolic links);
// [Cleaner.Apply] deletes a planned item only after checking again that
// it still qualifies and has not changed. Nothing runs in the background.
//
// # Damage and tampering
//
// A damaged last record of a session log (torn by a crash during its
// append, or a flipped bit or a cut after it was acknowledged: the bytes
// cannot tell these apart) is never dropped. [Dir.Records] returns it as
// a lost record ([values.Record.Lost]), which [values.Open] takes for a
// lost handle whose number is never handed out again, and a session that
// lost a grant is told [ErrIntegrity], not [ErrDenied], for a key it holds
// no grant on. Damage before the last record fails with [ErrIntegrity].
// [Dir.Body] checks a body's size against its grant before reading it, so
// a tampered body costs no more memory than the real one. A [Dir] works
// through the directories it opened, never follows a symbolic link out of
// them, keeps a second Dir out even if LOCK is removed, and fails a write
// with [ErrReplaced] when its directory, LOCK, bodies/, sessions/ or a
// session log was swapped while it was open.
//
// # Limits
//
// Session ids are 1 to [MaxSessionLen] bytes of A-Z a-z 0-9 . _ - and
// handle records are bounded by [MaxHandleLen], [MaxKindLen] and
// [MaxMetaSize]. Bodies have no size limit other than memory: PutBody
// takes and Body returns the whole body.
package store
