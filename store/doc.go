// Package store keeps value bodies durably: a content-addressed store with
// per-session read grants, retention and a per-session handle table, so a
// session can be reopened with its handles intact.
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
//	key, err := st.Put("session-1", body)
//	if err != nil { ... } // the value stays usable in memory; show no key
//	err = st.AppendHandle("session-1", store.HandleRecord{Handle: "r1", Key: key, Kind: "text", Size: int64(len(body))})
//	...
//	recs, err := st.Handles("session-1")      // after a restart
//	body, err = st.Get("session-1", recs[0].Key)
//
// # Backends
//
// [Dir] is the embedded default: a directory written with atomic,
// fsynced, never-overwriting writes and read back with a digest check.
// [Memory] keeps everything in memory. [Failing] is a test aid whose
// every call fails. All three are safe for concurrent use; a networked
// backend can implement [Store] too.
//
// # Retention
//
// A grant lasts [Options.TTL] ([DefaultTTL] by default) from the Put that
// made or last renewed it. Expired grants are kept, so that Get can say
// expired rather than not found. Cleanup runs in two phases: [Cleaner.Plan]
// reports what would be deleted (bodies without a live grant, temporary
// files left by interrupted writes) and what will not be touched (anything
// the store does not own, symbolic links); [Cleaner.Apply] deletes a
// planned item only after checking again that it still qualifies and has
// not changed. Nothing runs in the background.
//
// # Damage and tampering
//
// A damaged last record of a session log (torn by a crash during its
// append, or a flipped bit or a cut after it was acknowledged: the bytes
// cannot tell these apart) is never dropped. [Store.Handles] returns it
// as a lost record ([HandleRecord.Lost]), which [ForValues] turns into a
// lost handle whose number is never handed out again, and a session that
// lost a grant is told [ErrIntegrity], not [ErrDenied], for a key it holds
// no grant on. Damage before the last record fails with [ErrIntegrity].
// [Dir.Get] checks a body's size against its grant before reading it, so
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
// [MaxMetaSize]. Bodies have no size limit other than memory: Put takes
// and Get returns the whole body.
package store
