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

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/internal/jsontext"
)

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

// Every backend of this package is a values.Durable and a Cleaner.
var (
	_ values.Durable = (*Dir)(nil)
	_ values.Durable = (*Memory)(nil)
	_ Cleaner        = (*Dir)(nil)
	_ Cleaner        = (*Memory)(nil)
)

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
	// ErrInvalidRecord means a [values.Record] given to AppendRecord breaks
	// one of its limits: see [MaxHandleLen], [MaxKindLen], [MaxMetaSize].
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
)

// Limits. Each bounds what one call may write so that reading a session
// back (on reopen) has a known worst case.
const (
	// KeyLen is the length of a key: a SHA-256 digest in lowercase hex.
	KeyLen = 2 * sha256.Size
	// MaxSessionLen is the longest session id, in bytes. Longer ids fail
	// with ErrInvalidSession.
	MaxSessionLen = 128
	// MaxHandleLen is the longest values.Record Handle, in bytes; handles
	// such as "r12" are short because a model types them. A longer one, or
	// an empty one, fails AppendRecord with ErrInvalidRecord.
	MaxHandleLen = 64
	// MaxKindLen is the longest values.Record Kind, in bytes; past it
	// AppendRecord fails with ErrInvalidRecord.
	MaxKindLen = 64
	// MaxMetaSize is the largest values.Record Meta, in bytes. It bounds the
	// memory one record needs when a session is read back; past it
	// AppendRecord fails with ErrInvalidRecord.
	MaxMetaSize = 32 << 20
)

// DefaultTTL is how long a grant lasts unless [WithTTL] sets another: long
// enough for a session to be reopened days later, short enough that an
// abandoned session's bodies are eventually reclaimed.
const DefaultTTL = 30 * 24 * time.Hour

// TempPrefix starts the name of every temporary file a [Dir] creates. A
// file with this prefix that no write of the open store is using is left
// over from an interrupted write (a crash or kill mid-PutBody); [Dir.Plan]
// lists it for deletion and [Dir.Apply] removes it. Such files are never
// read as bodies: their names are not keys.
const TempPrefix = ".tmp-"

// Option configures [NewMemory] and [OpenDir]. Without options a store
// has the defaults each option documents; a later option overrides an
// earlier one of the same kind, and a nil Option is ignored.
type Option func(*config)

// WithTTL sets how long a grant lasts, counted from the PutBody that made
// or last renewed it: Body succeeds strictly before grant time + d and
// fails with [ErrExpired] from then on. 0 means the default, [DefaultTTL];
// a negative d means grants never expire. The expiry is fixed when the
// grant is recorded, so reopening a [Dir] with another TTL does not change
// existing grants.
func WithTTL(d time.Duration) Option { return func(c *config) { c.ttl = d } }

// WithClock sets the clock used for grant times and expiry checks. nil
// means the default, time.Now. The store never calls it while holding a
// lock.
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

type config struct {
	ttl time.Duration // < 0: never expires
	now func() time.Time
}

// Settings are the options of a store after the defaults are applied: a
// backend outside this package (such as the Redis one) takes the same
// Options as [Dir] and [Memory] and reads them with [ResolveOptions].
type Settings struct {
	TTL time.Duration // how long a grant lasts; negative: forever
	Now func() time.Time
}

// ResolveOptions applies opts to the defaults ([DefaultTTL], time.Now).
func ResolveOptions(opts ...Option) Settings {
	c := newConfig(opts)
	return Settings{TTL: c.ttl, Now: c.now}
}

// newConfig applies opts to the defaults. A nil Option is ignored.
func newConfig(opts []Option) config {
	var c config
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.ttl == 0 {
		c.ttl = DefaultTTL
	}
	if c.now == nil {
		c.now = time.Now
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
		return fmt.Errorf("%w: %q is %d bytes, want %d lowercase hex digits", ErrInvalidKey, jsontext.ClipString(key), len(key), KeyLen)
	}
	return fmt.Errorf("%w: %q holds a byte other than 0-9 a-f", ErrInvalidKey, jsontext.ClipString(key))
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
		return fmt.Errorf("%w: %q is %d bytes, want 1 to %d", ErrInvalidSession, jsontext.ClipString(id), len(id), MaxSessionLen)
	}
	if id == "." || id == ".." {
		return fmt.Errorf("%w: %q", ErrInvalidSession, id)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: %q has %s at byte %d, want A-Z a-z 0-9 . _ -", ErrInvalidSession, jsontext.ClipString(id), quoteCharAt(id, i), i)
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

// CheckRecord reports whether r may be appended to a handle table: its
// Handle 1 to [MaxHandleLen] bytes (so a lost record, whose Handle is
// empty, is never appended and never mistaken for a real one), its Kind
// at most [MaxKindLen] bytes, its Size not negative, its Meta at most
// [MaxMetaSize] bytes, and its Key "" or a valid key ([CheckKey]; the
// store does not check that the session holds a grant on it). Every other
// field is opaque to the store. Any other record fails with an error
// matching [ErrInvalidRecord].
//
// Every backend enforces it on AppendRecord, so that all of them refuse the
// same records with the same errors.
func CheckRecord(r values.Record) error {
	switch {
	case len(r.Handle) == 0 || len(r.Handle) > MaxHandleLen:
		return fmt.Errorf("%w: handle %q is %d bytes, want 1 to %d", ErrInvalidRecord, jsontext.ClipString(r.Handle), len(r.Handle), MaxHandleLen)
	case len(r.Kind) > MaxKindLen:
		return fmt.Errorf("%w: kind %q is %d bytes, want at most %d", ErrInvalidRecord, jsontext.ClipString(r.Kind), len(r.Kind), MaxKindLen)
	case r.Size < 0:
		return fmt.Errorf("%w: size %d is negative", ErrInvalidRecord, r.Size)
	case len(r.Meta) > MaxMetaSize:
		return fmt.Errorf("%w: meta is %d bytes, want at most %d", ErrInvalidRecord, len(r.Meta), MaxMetaSize)
	}
	if r.Key != "" {
		if CheckKey(r.Key) != nil {
			return fmt.Errorf("%w: key %q is not %d lowercase hex digits", ErrInvalidRecord, jsontext.ClipString(r.Key), KeyLen)
		}
	}
	return nil
}

// cloneRecord returns r with its own copy of Meta (nil when empty).
func cloneRecord(r values.Record) values.Record {
	if len(r.Meta) == 0 {
		r.Meta = nil
	} else {
		r.Meta = append([]byte(nil), r.Meta...)
	}
	return r
}
