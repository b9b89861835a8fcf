package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// Store holds immutable bodies under their content key and remembers which
// session may read which body, plus an append-only handle table per session.
//
// A body is stored once whatever the number of sessions or Puts that name it.
// Reads are scoped: a session reads only what it stored itself.
// The implementations in this package ([Memory], [Dir] and the value returned
// by [Failing]) are safe for concurrent use.
type Store interface {
	// Put stores body and grants session read access to it for the store's
	// TTL, counted from now. It returns the body's key, [KeyOf](body).
	// Storing bytes that are already stored writes no second copy; it only
	// records the grant (a Put by a session that already holds a grant on the
	// body renews it). An empty body is a valid body. On any error the key is
	// "" and the caller must assume nothing was granted: a key is only ever
	// returned for a body that is durable (for [Dir]: fsynced and renamed
	// into place) and a grant that is recorded.
	Put(session string, body []byte) (key string, err error)

	// Get returns a copy of the body stored under key, which the caller may
	// modify. It fails with an error matching [ErrInvalidSession] or
	// [ErrInvalidKey] for a malformed argument, [ErrNotFound] when no body
	// and no grant exist for key, [ErrDenied] when key exists but session
	// never stored it, [ErrExpired] when session's grant has run out (whether
	// or not the body is still on disk), and [ErrIntegrity] when the stored
	// bytes do not hash to key; a body that fails its check is never returned.
	Get(session, key string) ([]byte, error)

	// AppendHandle appends rec to session's handle table. The table is
	// append-only; the store does not interpret records, so a later record
	// with the same Handle is simply another record. An invalid rec fails
	// with [ErrInvalidRecord] and appends nothing.
	AppendHandle(session string, rec HandleRecord) error

	// Handles returns session's handle records in append order, nil for a
	// session that never appended one. A record is never dropped silently:
	// one the store can no longer read back (for [Dir], the last record of
	// the log torn by a crash during its append or damaged later; the two
	// cannot be told apart) is returned as a lost record, whose
	// [HandleRecord.Lost] is true, at its place in the order. Damage
	// anywhere before the last record fails the call with [ErrIntegrity]
	// and returns no records.
	Handles(session string) ([]HandleRecord, error)

	// Close releases the store. Later calls fail with [ErrClosed]; Close
	// itself may be called more than once and returns nil after the first.
	Close() error
}

// Cleaner is the two-phase retention cleanup of a store: [Cleaner.Plan]
// looks and reports, [Cleaner.Apply] deletes what a plan listed after
// checking each item again. [Memory] and [Dir] implement it.
type Cleaner interface {
	// Plan reports, without changing anything, which bodies and files a
	// cleanup at time now would delete and which it refuses to touch.
	Plan(now time.Time) (Plan, error)
	// Apply deletes at most the items of p.Delete, each only if it still
	// qualifies, and reports what it did with each.
	Apply(p Plan) (Report, error)
}

// Errors callers branch on. Every error returned by this package that
// matches one of them wraps it with %w, so use [errors.Is].
var (
	// ErrNotFound means no body is stored under the key and no session
	// holds a grant on it.
	ErrNotFound = errors.New("store: not found")
	// ErrDenied means the key exists but the asking session never stored it.
	// Keys are SHA-256 digests, so learning that a key exists requires
	// already knowing the body's bytes.
	ErrDenied = errors.New("store: access denied")
	// ErrExpired means the session once held a grant on the key and the
	// grant is past its retention.
	ErrExpired = errors.New("store: expired")
	// ErrIntegrity means stored bytes do not match their key or the size
	// recorded with their grant, a body the session holds a live grant on
	// is missing, a session log is damaged before its last record, or a
	// session asks for a key it holds no grant on while its grant log has
	// lost a record (which may have been that grant).
	ErrIntegrity = errors.New("store: integrity check failed")
	// ErrInvalidKey means a key is not exactly [KeyLen] lowercase hex digits.
	ErrInvalidKey = errors.New("store: invalid key")
	// ErrInvalidSession means a session id breaks the rules of [CheckSession].
	ErrInvalidSession = errors.New("store: invalid session id")
	// ErrInvalidRecord means a [HandleRecord] breaks one of its limits.
	ErrInvalidRecord = errors.New("store: invalid handle record")
	// ErrClosed means the store was closed.
	ErrClosed = errors.New("store: closed")
	// ErrLocked means another open [Dir] (in this or another process) holds
	// the directory.
	ErrLocked = errors.New("store: directory is in use by another store")
	// ErrReplaced means a file or directory an open [Dir] writes through
	// (the store directory, its LOCK file, bodies/, sessions/, a session
	// directory or log) was removed, moved, replaced or turned into a
	// symbolic link since the Dir opened it. The write that noticed fails
	// and is not durable in the store. Later writes check again: a swapped
	// store directory, LOCK, bodies/ or sessions/ fails them until it is
	// put back or the directory is opened again; a session log or
	// directory is looked at afresh, so a symbolic link keeps failing and
	// a regular log of the session is used.
	ErrReplaced = errors.New("store: store file replaced while open")
	// ErrUnavailable is the error a [Failing] store wraps when given none.
	ErrUnavailable = errors.New("store: unavailable")
)

// Limits. Each bounds what one call may write so that reading a session
// back (on reopen) has a known worst case.
const (
	// KeyLen is the length of a key: a SHA-256 digest in lowercase hex.
	KeyLen = 2 * sha256.Size
	// MaxSessionLen is the longest session id, in bytes. Longer ids fail
	// with ErrInvalidSession.
	MaxSessionLen = 128
	// MaxHandleLen is the longest HandleRecord.Handle, in bytes; handles
	// such as "r12" are short because a model types them.
	MaxHandleLen = 64
	// MaxKindLen is the longest HandleRecord.Kind, in bytes.
	MaxKindLen = 64
	// MaxMetaSize is the largest HandleRecord.Meta, in bytes. It bounds the
	// memory one record needs when a session is read back; past it
	// AppendHandle fails with ErrInvalidRecord.
	MaxMetaSize = 32 << 20
)

// DefaultTTL is how long a grant lasts when [Options.TTL] is zero: long
// enough for a session to be reopened days later, short enough that an
// abandoned session's bodies are eventually reclaimed.
const DefaultTTL = 30 * 24 * time.Hour

// TempPrefix starts the name of every temporary file a [Dir] creates. A
// file with this prefix that no write of the open store is using is left
// over from an interrupted write (a crash or kill mid-Put); [Dir.Plan]
// lists it for deletion and [Dir.Apply] removes it. Such files are never
// read as bodies: their names are not keys.
const TempPrefix = ".tmp-"

// Options configures [NewMemory] and [OpenDir]. The zero value means the
// defaults given for each field.
type Options struct {
	// TTL is how long a grant lasts, counted from the Put that made or last
	// renewed it: Get succeeds strictly before grant time + TTL and fails
	// with ErrExpired from then on. Zero means DefaultTTL; a negative TTL
	// means grants never expire. The expiry is fixed when the grant is
	// recorded, so reopening a Dir with another TTL does not change
	// existing grants.
	TTL time.Duration
	// Now is the clock, used for grant times and expiry checks. Nil means
	// time.Now. It is never called while the store holds a lock.
	Now func() time.Time
}

type config struct {
	ttl time.Duration // < 0: never expires
	now func() time.Time
}

// resolve turns the optional Options argument of the constructors into a
// config. More than one Options is programmer misuse.
func resolve(opts []Options) config {
	if len(opts) > 1 {
		panic("store: more than one Options")
	}
	c := config{ttl: DefaultTTL, now: time.Now}
	if len(opts) == 1 {
		if opts[0].TTL != 0 {
			c.ttl = opts[0].TTL
		}
		if opts[0].Now != nil {
			c.now = opts[0].Now
		}
	}
	return c
}

// never is the expiry of a grant that does not expire.
const never = math.MaxInt64

// grant is one session's right to read one body. Times are Unix nanoseconds.
type grant struct {
	granted int64
	expires int64 // never: does not expire
	size    int64 // the body's size in bytes; unknownSize for a grant recorded without it
}

// unknownSize is the size of a grant read from a log record written before
// grants recorded the body's size.
const unknownSize = -1

// newGrant returns a grant made at now on a body of size bytes.
func (c config) newGrant(now time.Time, size int) grant {
	t := now.UnixNano()
	g := grant{granted: t, expires: never, size: int64(size)}
	if c.ttl >= 0 && t <= never-int64(c.ttl) {
		g.expires = t + int64(c.ttl)
	}
	return g
}

// live reports whether a grant expiring at expires is still readable at t.
func live(expires, t int64) bool { return t < expires }

// merge combines two grants on the same body: the later grant time and the
// later expiry win, so a renewal never shortens a grant, and a known size
// wins over unknownSize (two known sizes are equal: same key, same bytes).
func (g grant) merge(h grant) grant {
	return grant{granted: max(g.granted, h.granted), expires: max(g.expires, h.expires), size: max(g.size, h.size)}
}

// KeyOf returns the key of body: its SHA-256 digest in lowercase hex,
// [KeyLen] bytes long. The same bytes always give the same key.
func KeyOf(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

// CheckKey reports whether key is well formed: exactly [KeyLen] characters
// from 0-9 and a-f. Anything else, including uppercase hex, path
// separators and dots, fails with an error matching [ErrInvalidKey]; a
// valid key therefore names a file in the store directory and nothing else.
func CheckKey(key string) error {
	if isKey(key) {
		return nil
	}
	if len(key) != KeyLen {
		return fmt.Errorf("%w: %q is %d bytes, want %d lowercase hex digits", ErrInvalidKey, clip(key), len(key), KeyLen)
	}
	return fmt.Errorf("%w: %q holds a byte other than 0-9 a-f", ErrInvalidKey, clip(key))
}

// isKey reports whether k is KeyLen lowercase hex digits.
func isKey[T string | []byte](k T) bool {
	if len(k) != KeyLen {
		return false
	}
	for i := range KeyLen {
		if !keyDigits[k[i]] {
			return false
		}
	}
	return true
}

// keyDigits marks the bytes a key is made of. It is never modified.
var keyDigits = [256]bool{
	'0': true, '1': true, '2': true, '3': true, '4': true, '5': true, '6': true, '7': true,
	'8': true, '9': true, 'a': true, 'b': true, 'c': true, 'd': true, 'e': true, 'f': true,
}

// CheckSession reports whether id is a valid session id: 1 to
// [MaxSessionLen] bytes from A-Z, a-z, 0-9, '.', '_' and '-', and neither
// "." nor "..". Anything else fails with an error matching
// [ErrInvalidSession]. Ids are case-sensitive: "A" and "a" are different
// sessions, also on a case-insensitive file system, because [Dir] never
// uses an id as a file name.
//
// The error names the first offending character as it is: a UTF-8
// character quoted whole ('é', '\u200b' for one that does not print), a
// byte that is not part of valid UTF-8 as '\xNN'; and the byte offset
// where it starts. The message itself is always valid UTF-8.
func CheckSession(id string) error {
	if len(id) == 0 || len(id) > MaxSessionLen {
		return fmt.Errorf("%w: %q is %d bytes, want 1 to %d", ErrInvalidSession, clip(id), len(id), MaxSessionLen)
	}
	if id == "." || id == ".." {
		return fmt.Errorf("%w: %q", ErrInvalidSession, id)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: %q has %s at byte %d, want A-Z a-z 0-9 . _ -", ErrInvalidSession, clip(id), quoteCharAt(id, i), i)
		}
	}
	return nil
}

// quoteCharAt quotes the character that starts at byte i of s: the whole
// UTF-8 sequence as a Go rune literal, or '\xNN' for a byte that does not
// start a valid one.
func quoteCharAt(s string, i int) string {
	r, n := utf8.DecodeRuneInString(s[i:])
	if r == utf8.RuneError && n <= 1 {
		return fmt.Sprintf(`'\x%02x'`, s[i])
	}
	return strconv.QuoteRune(r)
}

// clip shortens s for an error message, never inside a UTF-8 sequence.
func clip(s string) string {
	const n = 80
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > n-utf8.UTFMax && cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// HandleRecord is one entry of a session's handle table: which handle the
// root package gave a value, where its body is and what it needs to show it
// again without reading the body. The store validates the limits below and
// otherwise treats every field as opaque.
type HandleRecord struct {
	// Handle names the value within its session, such as "r3": 1 to
	// MaxHandleLen bytes. It is empty only in a lost record (see Lost).
	Handle string
	// Key is the value's body key, or "" for a handle without a stored
	// body. A non-empty Key must pass CheckKey; the store does not check
	// that the session holds a grant on it.
	Key string
	// Kind is the value's kind, such as "array": at most MaxKindLen bytes.
	Kind string
	// Size is the value's size in bytes; it must not be negative.
	Size int64
	// Meta is opaque data, such as a preview index: at most MaxMetaSize
	// bytes. An empty Meta reads back as nil.
	Meta []byte
}

// check reports whether r fits the limits documented on HandleRecord.
func (r HandleRecord) check() error {
	switch {
	case len(r.Handle) == 0 || len(r.Handle) > MaxHandleLen:
		return fmt.Errorf("%w: handle %q is %d bytes, want 1 to %d", ErrInvalidRecord, clip(r.Handle), len(r.Handle), MaxHandleLen)
	case len(r.Kind) > MaxKindLen:
		return fmt.Errorf("%w: kind %q is %d bytes, want at most %d", ErrInvalidRecord, clip(r.Kind), len(r.Kind), MaxKindLen)
	case r.Size < 0:
		return fmt.Errorf("%w: size %d is negative", ErrInvalidRecord, r.Size)
	case len(r.Meta) > MaxMetaSize:
		return fmt.Errorf("%w: meta is %d bytes, want at most %d", ErrInvalidRecord, len(r.Meta), MaxMetaSize)
	}
	if r.Key != "" {
		if CheckKey(r.Key) != nil {
			return fmt.Errorf("%w: key %q is not %d lowercase hex digits", ErrInvalidRecord, clip(r.Key), KeyLen)
		}
	}
	return nil
}

// Lost reports whether r is a lost record: the place of a record that
// [Store.Handles] could not read back (see there), with every field zero.
// Its Handle is empty, which AppendHandle never accepts, so a lost record
// is never mistaken for a real one; the handle it held is unknown.
// [ForValues] turns it into a record without a key under the next handle
// number, which a session reopened with values.Open treats as a lost
// handle.
func (r HandleRecord) Lost() bool { return r.Handle == "" }

// clone returns r with its own copy of Meta (nil when empty).
func (r HandleRecord) clone() HandleRecord {
	if len(r.Meta) == 0 {
		r.Meta = nil
	} else {
		r.Meta = append([]byte(nil), r.Meta...)
	}
	return r
}
