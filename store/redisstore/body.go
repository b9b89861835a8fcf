package redisstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/store"
)

// This file holds the reads of a body. Every size Redis states (a grant's,
// a manifest's) is checked against what the store can know independently
// of it before anything of that size is allocated: the size the handle
// record gives (BodySized), the lengths of the strings Redis really holds
// (STRLEN, cheap: one integer per chunk), and every string is read with
// GETRANGE bounded by the length it should have, so that a string grown
// or replaced since it was measured is refused at that length. A tampered
// body therefore costs no more memory than the real one.

var _ values.SizedDurable = (*Store)(nil)

// Body returns the bytes stored under key for session, verified against
// the key. It fails with an error matching [store.ErrInvalidSession] or
// [store.ErrInvalidKey] for a malformed argument, [store.ErrNotFound],
// [store.ErrDenied] or [store.ErrExpired] as the package doc says,
// [store.ErrIntegrity] when the session holds a live grant and the body
// is missing, torn, of another size than granted, or does not hash to the
// key, [store.ErrClosed] after Close, or wrapping Redis's error.
//
// Memory: the body's size, once the strings holding it are measured at
// that size, and no more than the chunk size before that; a grant or
// manifest claiming more than Redis holds fails before the claimed size is
// allocated. Without the size of the handle record (see BodySized), a body
// whose grant, manifest and chunks were all rewritten costs what Redis
// holds for it before it fails the digest check.
func (s *Store) Body(session, key string) ([]byte, error) {
	return s.body(session, key, -1)
}

// BodySized is Body of a body recorded as size bytes (the size a handle
// record gives): a grant or body of another size fails with
// [store.ErrIntegrity] before any of it is read, so a body that Redis
// claims or holds at another size never costs more than size bytes. A
// negative size is an error matching [store.ErrIntegrity] too.
func (s *Store) BodySized(session, key string, size int64) ([]byte, error) {
	if size < 0 {
		return nil, fmt.Errorf("%w: body %s asked for with the negative size %d", store.ErrIntegrity, key, size)
	}
	return s.body(session, key, size)
}

// maxManifest is the longest body key of a chunked body: "c" and three
// decimal numbers of at most 19 digits, two spaces.
const maxManifest = 1 + 3*19 + 2

// body reads the body of key for session; want is its size as recorded,
// or -1 when unknown.
func (s *Store) body(session, key string, want int64) ([]byte, error) {
	if err := store.CheckSession(session); err != nil {
		return nil, err
	}
	if err := store.CheckKey(key); err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	// One round trip for the grant, the body key's length and its head (a
	// small inline body whole, a chunked body's manifest); on a cluster,
	// one to each slot at once, so that each server's breaker sees its
	// own. The head is read no further than the recorded size allows or,
	// without one, than the chunk size.
	head := int64(max(s.chunk+2, maxManifest))
	if want >= 0 {
		head = max(want+2, maxManifest) // 'i', the body and one byte more: a longer key shows
	}
	gk, bk := s.grantKey(session, key), s.bodyKey(key)
	var gcmd, hcmd *redis.StringCmd
	var ncmd *redis.IntCmd
	var err, gerr error
	if _, cluster := s.rdb.(*redis.ClusterClient); cluster {
		granted := make(chan struct{})
		go func() {
			defer close(granted)
			gerr = s.do(gk, func(ctx context.Context) error {
				gcmd = s.rdb.Get(ctx, gk)
				return gcmd.Err()
			})
		}()
		err = s.do(bk, func(ctx context.Context) error {
			_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				ncmd = p.StrLen(ctx, bk)
				hcmd = p.GetRange(ctx, bk, 0, head-1)
				return nil
			})
			return err
		})
		<-granted
	} else {
		err = s.do(bk, func(ctx context.Context) error {
			_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				gcmd = p.Get(ctx, gk)
				ncmd = p.StrLen(ctx, bk)
				hcmd = p.GetRange(ctx, bk, 0, head-1)
				return nil
			})
			return err
		})
		if err == nil || answered(err) {
			err, gerr = nil, gcmd.Err()
		} else {
			gerr = err
		}
	}
	if err != nil && !isWrongType(err) {
		return nil, fmt.Errorf("redisstore: body %s: %w", key, err)
	}
	if gerr != nil && !answered(gerr) {
		return nil, fmt.Errorf("redisstore: grant of %q on %s: %w", session, key, gerr)
	}
	g := gcmd.Val()
	stored, nerr := ncmd.Result() // 0 for a missing key
	if errors.Is(gerr, redis.Nil) {
		if stored > 0 || isWrongType(nerr) {
			return nil, fmt.Errorf("%w: session %q did not store %s", store.ErrDenied, session, key)
		}
		return nil, fmt.Errorf("%w: %s", store.ErrNotFound, key)
	}
	if isWrongType(gerr) {
		return nil, fmt.Errorf("%w: grant of session %q on %s is not a string", store.ErrIntegrity, session, key)
	}
	if gerr != nil {
		return nil, fmt.Errorf("redisstore: grant of %q on %s: %w", session, key, gerr)
	}
	expires, size, ok := parseGrant(g)
	if !ok {
		return nil, fmt.Errorf("%w: grant of session %q on %s is malformed: %q", store.ErrIntegrity, session, key, clip([]byte(g)))
	}
	if s.cfg.Now().UnixNano() >= expires {
		return nil, fmt.Errorf("%w: grant of session %q on %s ran out at %s", store.ErrExpired, session, key, time.Unix(0, expires).UTC().Format(time.RFC3339))
	}
	if want >= 0 && size != want {
		return nil, fmt.Errorf("%w: the grant of session %q on %s says %d bytes, the handle record %d", store.ErrIntegrity, session, key, size, want)
	}
	if isWrongType(nerr) {
		return nil, fmt.Errorf("%w: body %s is not a string", store.ErrIntegrity, key)
	}
	if nerr != nil {
		return nil, fmt.Errorf("redisstore: body %s: %w", key, nerr)
	}
	if stored == 0 {
		return nil, fmt.Errorf("%w: body %s is missing", store.ErrIntegrity, key)
	}
	h, herr := hcmd.Bytes()
	if herr != nil {
		return nil, fmt.Errorf("redisstore: body %s: %w", key, herr)
	}
	if len(h) == 0 { // deleted between the two commands
		return nil, fmt.Errorf("%w: body %s is missing", store.ErrIntegrity, key)
	}
	var body []byte
	switch h[0] {
	case 'i':
		if stored-1 != size {
			return nil, fmt.Errorf("%w: body %s is %d bytes, granted %d", store.ErrIntegrity, key, stored-1, size)
		}
		if int64(len(h)) == stored {
			body = h[1:]
			break
		}
		// Larger than the head: read it whole, no further than its size
		// (a key grown since it was measured is cut, and fails the digest).
		err = s.do(bk, func(ctx context.Context) (err error) {
			body, err = s.rdb.GetRange(ctx, bk, 1, size).Bytes()
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("redisstore: body %s: %w", key, err)
		}
		if int64(len(body)) != size {
			return nil, fmt.Errorf("%w: body %s is %d bytes, granted %d", store.ErrIntegrity, key, len(body), size)
		}
	case 'c':
		if stored > maxManifest || int64(len(h)) != stored {
			return nil, fmt.Errorf("%w: body %s: malformed manifest %q", store.ErrIntegrity, key, clip(h))
		}
		msize, chunk, chunks, err := parseManifest(h)
		if err != nil {
			return nil, fmt.Errorf("%w: body %s: %v", store.ErrIntegrity, key, err)
		}
		if int64(msize) != size {
			return nil, fmt.Errorf("%w: body %s is %d bytes, granted %d", store.ErrIntegrity, key, msize, size)
		}
		// Redis must hold every chunk at its length before the body's size
		// is allocated: a manifest and grant rewritten to claim more than
		// is stored fail here.
		if err := s.measureChunks(key, msize, chunk, chunks); err != nil {
			return nil, err
		}
		body = make([]byte, msize)
		err = s.eachChunk(key, msize, chunk, chunks, func(i int, part []byte) bool {
			copy(body[i*chunk:], part)
			return true
		})
		if err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%w: body %s: unknown body format %q", store.ErrIntegrity, key, clip(h[:1]))
	}
	if sum := sha256.Sum256(body); hex.EncodeToString(sum[:]) != key {
		return nil, fmt.Errorf("%w: body %s does not match its key", store.ErrIntegrity, key)
	}
	return body, nil
}

// isWrongType reports whether err is Redis's answer to a command on a key
// of another type (a body or grant key turned into a list, say).
func isWrongType(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.HasPrefix(re.Error(), "WRONGTYPE")
}

// chunkLen is the length of chunk i of a body of size bytes in chunks of
// chunk bytes.
func chunkLen(i, size, chunk int) int { return min(chunk, size-i*chunk) }

// Chunks per round trip. Measuring costs one integer per chunk; reading
// holds a batch in memory besides the body, so a batch of reads is
// bounded in bytes too.
const (
	measureBatch = 1024
	readBatch    = 16
	readBytes    = 16 << 20 // at least one chunk per round trip
)

// measureChunks checks that every chunk of a body of size bytes in chunks
// of chunk bytes is stored at its length, without reading any: a missing
// or resized chunk fails with [store.ErrIntegrity].
func (s *Store) measureChunks(key string, size, chunk, chunks int) error {
	bk := s.bodyKey(key)
	for first := 0; first < chunks; first += measureBatch {
		var cmds []redis.Cmder
		err := s.do(bk, func(ctx context.Context) (err error) {
			cmds, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				for i := first; i < min(first+measureBatch, chunks); i++ {
					p.StrLen(ctx, s.chunkKey(key, chunk, i))
				}
				return nil
			})
			return err
		})
		if err != nil && !isWrongType(err) {
			return fmt.Errorf("redisstore: body %s: %w", key, err)
		}
		for j, c := range cmds {
			i := first + j
			n, err := c.(*redis.IntCmd).Result()
			switch {
			case isWrongType(err):
				return fmt.Errorf("%w: chunk %d of body %s is not a string", store.ErrIntegrity, i, key)
			case err != nil:
				return fmt.Errorf("redisstore: body %s: %w", key, err)
			case n == 0:
				return fmt.Errorf("%w: chunk %d of body %s is missing (a torn chunk set)", store.ErrIntegrity, i, key)
			case n != int64(chunkLen(i, size, chunk)):
				return fmt.Errorf("%w: chunk %d of body %s is %d bytes, want %d", store.ErrIntegrity, i, key, n, chunkLen(i, size, chunk))
			}
		}
	}
	return nil
}

// eachChunk reads the chunks of a body of size bytes in order and calls f
// with each, which returns false to stop. Each chunk is read no further
// than one byte past its length, so a chunk replaced by a larger string
// costs no more than its own length: a chunk of another length, or a
// missing one, fails with [store.ErrIntegrity]. part is valid only during
// the call.
func (s *Store) eachChunk(key string, size, chunk, chunks int, f func(i int, part []byte) bool) error {
	bk := s.bodyKey(key)
	batch := max(1, min(readBatch, readBytes/chunk))
	for first := 0; first < chunks; first += batch {
		var cmds []redis.Cmder
		err := s.do(bk, func(ctx context.Context) (err error) {
			cmds, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				for i := first; i < min(first+batch, chunks); i++ {
					p.GetRange(ctx, s.chunkKey(key, chunk, i), 0, int64(chunkLen(i, size, chunk)))
				}
				return nil
			})
			return err
		})
		if err != nil && !isWrongType(err) {
			return fmt.Errorf("redisstore: body %s: %w", key, err)
		}
		for j, c := range cmds {
			i := first + j
			part, err := c.(*redis.StringCmd).Bytes()
			switch {
			case isWrongType(err):
				return fmt.Errorf("%w: chunk %d of body %s is not a string", store.ErrIntegrity, i, key)
			case err != nil:
				return fmt.Errorf("redisstore: body %s: %w", key, err)
			case len(part) == 0:
				return fmt.Errorf("%w: chunk %d of body %s is missing (a torn chunk set)", store.ErrIntegrity, i, key)
			case len(part) != chunkLen(i, size, chunk):
				return fmt.Errorf("%w: chunk %d of body %s is %s bytes, want %d", store.ErrIntegrity, i, key, lenAtLeast(len(part), chunkLen(i, size, chunk)), chunkLen(i, size, chunk))
			}
			if !f(i, part) {
				return nil
			}
		}
	}
	return nil
}

// lenAtLeast renders n, the length read of a string read no further than
// want+1 bytes: "more than want" when it reached that bound.
func lenAtLeast(n, want int) string {
	if n > want {
		return fmt.Sprintf("more than %d", want)
	}
	return fmt.Sprint(n)
}
