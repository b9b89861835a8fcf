// Package redisstore is a [values.Durable] on Redis (a single server or
// Redis Cluster), for fleets: every worker that opens the same Redis can
// reopen any session and read any value that session stored, whichever
// worker stored it.
//
//	st, err := redisstore.OpenURL("redis://127.0.0.1:6379/0")
//	if err != nil { ... }
//	defer st.Close()
//	s, err := values.Open(st, "run-42") // the session's values live in Redis
//
// It gives the guarantees of the package store's backends, and passes the
// same conformance suite (store/storetest): a body's key is its SHA-256
// ([store.KeyOf]); a body is written once and read back digest-checked
// ([store.ErrIntegrity] for bytes that do not match, never returned); a
// session reads only the bodies it stored ([store.ErrDenied] for another
// session's key, [store.ErrNotFound] for an unknown one, [store.ErrExpired]
// past its grant); each session has an append-only handle table that
// another process reopens with its handles intact; and errors match the
// package store's (invalid key, session, record; closed). A failed write
// returns an error and no key; [values.Open] keeps the value in memory and
// never shows a handle whose body was not stored.
//
// # Keys
//
// With the default prefix "av":
//
//	av:b:{KEY}          a body: "i" and its bytes, or, for a body over the
//	                    chunk size, "c" and "SIZE CHUNK N", its manifest
//	av:b:{KEY}:CHUNK:I  chunk I (from 0) of a body in chunks of CHUNK bytes
//	av:s:{SESSION}:g:KEY   the session's grant on KEY: "EXPIRES SIZE"
//	av:s:{SESSION}:h       the session's handle table, a list of records
//	av:s:{SESSION}:m       the session's mark: the highest handle number
//	                       its table recorded (N of "rN")
//
// The braces are Redis Cluster hash tags: a body and its chunks share one
// hash slot, spread across the cluster by key; all of a session's records
// share one slot. No command touches keys of two slots, so the store works
// on Redis Cluster unchanged.
//
// # Writes
//
// PutBody writes the chunks first, then the body key (the manifest), each
// with SET NX: the body key is the commit point, so a reader never sees a
// body whose chunks are not all written. A writer that dies between the two
// leaves chunks without a body key; the next PutBody of the same bytes
// completes them (chunk keys name their chunk size, so workers configured
// with different sizes never mix their chunks). A body stored before is
// read back and compared, as the directory store compares its file: one
// that no longer reads back as the bytes being stored (damaged, torn) is
// written again with SET, so that PutBody returns a key only for a body
// Body can read. A grant is renewed only if that lengthens it. Chunks
// (WithChunkSize, default 4 MiB) keep each Redis string far below its 512
// MB limit and each command short, so that a large body does not block the
// server for other clients. A body whose chunk is missing or altered (a
// torn or damaged chunk set) fails Body with [store.ErrIntegrity].
//
// # Reads
//
// Body reads the grant, the body key's length and its head in one round
// trip, and trusts no size Redis states before checking it: the grant's
// size and the manifest's must agree (and with the size of the handle
// record, which [values.Open]'s values pass through [Store.BodySized]),
// every chunk is measured (STRLEN) at its length before the body is
// allocated, and every string is read (GETRANGE) no further than one byte
// past its length. Rewriting the keys to claim a huge body, or replacing a
// chunk by a huge string, fails with [store.ErrIntegrity] for no more
// memory than the real body. PutBody, which reads a stored body back to
// compare it, reads no further than the length of the body it stores.
//
// # Expiry
//
// A grant lasts [store.DefaultTTL], or what [store.WithTTL] says, from the
// PutBody that made or renewed it, judged by the store's clock
// ([store.WithClock]: give every worker of a fleet a synchronized clock).
// Expiry is Redis's job: a grant key carries a Redis TTL of its remaining
// time plus ExpiredGrace, during which Body says [store.ErrExpired]; after
// it Redis deletes the key and the key reads as never granted
// ([store.ErrDenied] while another session's grant keeps the body,
// [store.ErrNotFound] after). A body's keys get the TTL of the longest
// grant on them (renewals only lengthen it), and a session's handle table
// the TTL of its latest grant, so nothing a live grant needs expires
// first. The two-phase cleanup of the directory store (store.Cleaner) is
// not reimplemented: Redis deletes each key when its TTL runs out, so
// there is nothing to plan, and a key is never deleted while a grant that
// needs it is live. A grant that never expires (WithTTL(-1)) makes its
// keys persistent.
//
// # A Redis that stops answering
//
// Every round trip to Redis has a deadline ([Config.Timeout], 5 s by
// default): past it the call fails with [ErrTimeout]. A circuit breaker
// per Redis server (per master on a cluster, so that one master that
// stops answering does not fail the calls the others serve) counts round
// trips in a row that went unanswered; at [Config.BreakerFailures] (3) it
// opens, and for [Config.BreakerCooldown] (10 s, on the store's clock)
// every call that needs that server fails at once with [ErrCircuitOpen],
// sending nothing; then one call probes, and an answer closes the breaker.
// So a hung server, a CLIENT PAUSE or a partition holds a few calls for
// the deadline each and fails the rest at once; [values.Open]'s Puts keep
// their values in memory and report the failure (values.WithStoreErrors,
// SessionValues.Persisted), and no tool call waits on Redis for long.
//
// # Redis settings
//
// Redis 7.0 or later (EXPIRE GT and NX). As with the directory store, a
// session has one writer at a time; Redis holds no lock for it, so two
// processes writing one session at once would hand out the same handle
// numbers (give each run its own session id). The guarantees hold as far
// as Redis keeps what it acknowledged:
//
//   - appendonly yes with appendfsync always: an acknowledged PutBody or
//     AppendRecord survives a crash of Redis or its machine.
//   - appendfsync everysec (Redis's default with AOF): a crash of the
//     machine can lose the last second of writes. A session reopened after
//     it may lack its last handles; a handle whose record survived but
//     whose body did not reads as [store.ErrIntegrity], never as other bytes.
//   - no AOF (RDB snapshots only, or none): a restart of Redis loses every
//     write since the last snapshot, or everything.
//   - maxmemory-policy noeviction: any other policy lets Redis evict
//     bodies and handle tables under memory pressure, so [Open] and
//     [OpenURL] refuse it ([ErrEvictionPolicy]) unless
//     [Config.AllowEviction] accepts it. With noeviction a full Redis
//     refuses writes, PutBody fails, and the value stays in memory. Under
//     eviction an evicted body reads as [store.ErrIntegrity] (the value
//     as unavailable, never as other bytes), and an evicted handle table
//     is told from a new one by the session's mark, which AppendRecord
//     raises with each record in the same script: [Store.Records] returns
//     the handles the table lacks up to the mark as lost records, so a
//     reopened session goes on after them and never hands a number out
//     again (a "$r1" in a model's transcript then names nothing rather
//     than another value). The mark has the table's TTL, or with
//     AllowEviction none, so that a volatile- policy, which evicts only
//     keys with a TTL, never takes it; an allkeys- policy may take it
//     with the table, and the session then starts again at r1.
//   - Redis Cluster with replicas fails over asynchronously: a write
//     acknowledged by a master that dies before replicating it is lost as
//     above (WAIT is not used).
package redisstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	neturl "net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/store"
)

// DefaultChunkSize is the default of [Config.ChunkSize].
const DefaultChunkSize = 4 << 20

// ExpiredGrace is how long after a grant's expiry Redis keeps its key, so
// that Body says [store.ErrExpired] rather than not found.
const ExpiredGrace = 7 * 24 * time.Hour

// Config is how a Store lays out its keys, how long it waits for Redis,
// whether it accepts a Redis that evicts keys, and where it warns. Its
// zero value gives the defaults each field documents.
type Config struct {
	// Prefix starts every key the store writes; "" means "av". Stores with
	// different prefixes share one Redis without seeing each other.
	Prefix string
	// ChunkSize is the largest body stored as one Redis string; a larger
	// body is stored in chunks of this size. 0 means DefaultChunkSize.
	ChunkSize int
	// Timeout bounds each round trip to Redis (a command, or a pipeline
	// of them carrying at most 16 MiB or one chunk): past it the call
	// fails with an error matching [ErrTimeout], and a Put keeps its value
	// in memory. 0 means [DefaultTimeout]; negative, no deadline of the
	// store's own. The deadline reaches the socket only on a client with
	// ContextTimeoutEnabled (OpenURL makes it so); on another, a round
	// trip can last the client's ReadTimeout.
	Timeout time.Duration
	// BreakerFailures is how many round trips in a row to one Redis
	// server (a master, on a cluster) may go unanswered (a timeout, a
	// refused or dropped connection; never an error reply) before the
	// store stops sending to it: for BreakerCooldown every call that needs
	// it then fails at once with an error matching [ErrCircuitOpen], and
	// after it one call goes through as a probe, whose answer closes the
	// breaker and whose failure opens it for another cool-down. 0 means
	// [DefaultBreakerFailures]; negative, no breaker.
	BreakerFailures int
	// BreakerCooldown is how long an open breaker fails calls before it
	// lets a probe through, on the store's clock ([store.WithClock]). 0
	// means [DefaultBreakerCooldown].
	BreakerCooldown time.Duration
	// AllowEviction lets [Open] and [OpenURL] accept a Redis whose
	// maxmemory-policy may evict keys (anything but noeviction, or a
	// policy that cannot be read), with a warning to Logger; by default
	// they fail with [ErrEvictionPolicy]. It also keeps each session's
	// mark without a TTL, so that under a volatile- policy, which evicts
	// only keys with one, eviction can never take it: a session whose
	// table was evicted goes on after its last handle number, the
	// evicted handles lost, and never hands a number out again. The cost
	// is one small key per session (PREFIX:s:{SESSION}:m, some 100 bytes)
	// that Redis never deletes; delete the ones of sessions past their
	// retention to reclaim it. Under an allkeys- policy the mark can be
	// evicted too.
	AllowEviction bool
	// Logger receives the warnings of the store: an evicting policy
	// allowed by AllowEviction, a session reopened with handles lost from
	// its table. nil means slog.Default().
	Logger *slog.Logger
}

// Store is a [values.Durable] on Redis. It is safe for concurrent use, by
// any number of goroutines and processes.
type Store struct {
	rdb      redis.UniversalClient
	owned    bool // Close closes rdb
	prefix   string
	chunk    int
	cfg      store.Settings
	log      *slog.Logger
	forever  bool          // marks have no TTL (AllowEviction)
	timeout  time.Duration // < 0: none
	failures int           // breaker threshold; 0: no breaker
	cooldown time.Duration
	breakers struct {
		sync.Mutex
		m map[string]*breaker // by server address; "" for the only one
	}
	closed atomic.Bool
}

var _ values.Durable = (*Store)(nil)

// New returns a store on rdb (a *redis.Client or *redis.ClusterClient),
// laid out by cfg, with opts ([store.WithTTL], [store.WithClock]). Close
// does not close rdb.
func New(rdb redis.UniversalClient, cfg Config, opts ...store.Option) *Store {
	s := &Store{rdb: rdb, prefix: cfg.Prefix, chunk: cfg.ChunkSize, cfg: store.ResolveOptions(opts...)}
	if s.prefix == "" {
		s.prefix = "av"
	}
	if s.chunk <= 0 {
		s.chunk = DefaultChunkSize
	}
	switch s.timeout = cfg.Timeout; {
	case s.timeout == 0:
		s.timeout = DefaultTimeout
	case s.timeout < 0:
		s.timeout = -1
	}
	switch s.failures = cfg.BreakerFailures; {
	case s.failures == 0:
		s.failures = DefaultBreakerFailures
	case s.failures < 0:
		s.failures = 0
	}
	if s.cooldown = cfg.BreakerCooldown; s.cooldown <= 0 {
		s.cooldown = DefaultBreakerCooldown
	}
	if s.log = cfg.Logger; s.log == nil {
		s.log = slog.Default()
	}
	s.forever = cfg.AllowEviction
	return s
}

// openTimeout bounds Open's round trips: the PING and the reads of the
// maxmemory-policy.
const openTimeout = 10 * time.Second

// Open returns a store on rdb as New does, once Redis has answered a
// PING and every server of rdb (every master of a cluster) has a
// maxmemory-policy that does not evict keys: noeviction. Any other
// policy, or one that neither CONFIG GET nor INFO memory reveals, fails
// with [ErrEvictionPolicy] unless cfg.AllowEviction is set, when it is
// logged as a warning. It fails too when Redis does not answer within
// 10 s. Close does not close rdb.
func Open(rdb redis.UniversalClient, cfg Config, opts ...store.Option) (*Store, error) {
	s := New(rdb, cfg, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return nil, fmt.Errorf("redisstore: Redis does not answer: %w", err)
	}
	if err := s.checkEviction(ctx, cfg.AllowEviction); err != nil {
		return nil, err
	}
	return s, nil
}

// OpenURL connects to the Redis that url names and returns a store on it
// with the default Config, checked as [Open] checks it; Close closes the
// connection. "redis://" and "rediss://" URLs name one server
// (redis://HOST:PORT/DB, as redis.ParseURL reads them);
// "redis+cluster://HOST:PORT?addr=HOST:PORT" names a cluster by some of
// its nodes (as redis.ParseClusterURL reads them). The parameter
// allow_eviction=true sets [Config.AllowEviction]. It fails when Redis
// does not answer a PING within 10 s, and with [ErrEvictionPolicy] as
// Open does.
func OpenURL(url string, opts ...store.Option) (*Store, error) {
	url, allow, err := cutAllowEviction(url)
	if err != nil {
		return nil, err
	}
	var rdb redis.UniversalClient
	var where string // the address(es), without the URL's password
	if rest, ok := strings.CutPrefix(url, "redis+cluster://"); ok {
		o, err := redis.ParseClusterURL("redis://" + rest)
		if err != nil {
			return nil, fmt.Errorf("redisstore: %w", err)
		}
		o.ContextTimeoutEnabled = true // Config.Timeout reaches the socket
		rdb, where = redis.NewClusterClient(o), strings.Join(o.Addrs, ",")
	} else {
		o, err := redis.ParseURL(url)
		if err != nil {
			return nil, fmt.Errorf("redisstore: %w", err)
		}
		o.ContextTimeoutEnabled = true
		rdb, where = redis.NewClient(o), o.Addr
	}
	s, err := Open(rdb, Config{AllowEviction: allow}, opts...)
	if err != nil {
		rdb.Close()
		if msg, ok := strings.CutPrefix(err.Error(), "redisstore: Redis does not answer: "); ok {
			return nil, fmt.Errorf("redisstore: Redis at %s does not answer: %s", where, msg)
		}
		return nil, err
	}
	s.owned = true
	return s, nil
}

// cutAllowEviction removes the parameter allow_eviction from url's query
// (go-redis refuses parameters it does not know) and returns its value.
func cutAllowEviction(raw string) (string, bool, error) {
	base, query, ok := strings.Cut(raw, "?")
	if !ok {
		return raw, false, nil
	}
	q, err := neturl.ParseQuery(query)
	if err != nil {
		return "", false, fmt.Errorf("redisstore: %w", err)
	}
	if !q.Has("allow_eviction") {
		return raw, false, nil
	}
	v := q.Get("allow_eviction")
	allow, err := strconv.ParseBool(v)
	if err != nil {
		return "", false, fmt.Errorf("redisstore: allow_eviction=%q: want true or false", v)
	}
	q.Del("allow_eviction")
	if len(q) == 0 {
		return base, allow, nil
	}
	return base + "?" + q.Encode(), allow, nil
}

// Close releases the store: later calls fail with [store.ErrClosed]. It
// closes the Redis connection when OpenURL made it. Close may be called
// again and returns nil.
func (s *Store) Close() error {
	if s.closed.Swap(true) || !s.owned {
		return nil
	}
	return s.rdb.Close()
}

func (s *Store) bodyKey(key string) string { return s.prefix + ":b:{" + key + "}" }
func (s *Store) chunkKey(key string, chunk, i int) string {
	return s.prefix + ":b:{" + key + "}:" + strconv.Itoa(chunk) + ":" + strconv.Itoa(i)
}
func (s *Store) grantKey(session, key string) string {
	return s.prefix + ":s:{" + session + "}:g:" + key
}
func (s *Store) handlesKey(session string) string { return s.prefix + ":s:{" + session + "}:h" }

// life is the Redis TTL of a grant made now and of what it needs: its
// time left plus ExpiredGrace; 0 for a grant that never expires.
func (s *Store) life() time.Duration {
	if s.cfg.TTL < 0 || s.cfg.TTL > math.MaxInt64/2-ExpiredGrace {
		return 0
	}
	return s.cfg.TTL + ExpiredGrace
}

// PutBody stores body for session and returns its key (see the package
// doc for the writes it makes). It fails with an error matching
// [store.ErrInvalidSession] for a malformed session id, [store.ErrClosed]
// after Close, or wrapping Redis's error; on any error the key is "" and
// the grant may or may not have been made.
func (s *Store) PutBody(session string, body []byte) (string, error) {
	if err := store.CheckSession(session); err != nil {
		return "", err
	}
	if s.closed.Load() {
		return "", store.ErrClosed
	}
	key := store.KeyOf(body)
	life := s.life()
	if err := s.writeBody(key, body, life); err != nil {
		return "", fmt.Errorf("redisstore: storing body %s: %w", key, err)
	}
	now := s.cfg.Now()
	expires := int64(math.MaxInt64)
	if s.cfg.TTL >= 0 && now.UnixNano() <= math.MaxInt64-int64(s.cfg.TTL) {
		expires = now.UnixNano() + int64(s.cfg.TTL)
	}
	grant := fmt.Sprintf("%019d %d", expires, len(body)) // fixed width: compared as text
	gk, hk := s.grantKey(session, key), s.handlesKey(session)
	err := s.do(gk, func(ctx context.Context) error {
		_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error { // one slot: the session's
			renewGrant.Eval(ctx, p, []string{gk}, grant, life.Milliseconds()) // Eval, not EvalSha: within a transaction
			extend(ctx, p, hk, life)
			if !s.forever {
				extend(ctx, p, s.markKey(session), life)
			}
			return nil
		})
		return err
	})
	if err != nil {
		return "", fmt.Errorf("redisstore: recording the grant of %q on %s: %w", session, key, err)
	}
	return key, nil
}

// renewGrant sets a grant unless the one stored expires later: a renewal
// never shortens a grant, whatever TTL or clock the renewing store has.
// KEYS[1] is the grant key; ARGV[1] the grant, ARGV[2] its Redis TTL in
// milliseconds (0: none).
var renewGrant = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur and string.sub(cur, 1, 19) >= string.sub(ARGV[1], 1, 19) then
	return 0
end
if ARGV[2] == '0' then
	redis.call('SET', KEYS[1], ARGV[1])
else
	redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
end
return 1
`)

// writeBody writes body under key unless it is there whole, and makes its
// keys live at least life (0: for ever). A body stored before is read back
// and compared (as the directory store compares its file): one that is
// damaged, torn or of another layout that does not read back as body is
// written again, so that a key is returned only for a body Body can read.
// What is stored is read no further than body's own length (and one byte
// more, to tell a longer string), so a body key or chunk replaced by a
// large string costs no more memory than body.
func (s *Store) writeBody(key string, body []byte, life time.Duration) error {
	bk := s.bodyKey(key)
	headEnd := int64(max(len(body)+1, maxManifest-1)) // GETRANGE's end is inclusive
	var head []byte
	if len(body) <= smallBody && len(body) <= s.chunk {
		// One round trip when it is new: written if absent, and the stored
		// head read back in the same pipeline.
		inline := append([]byte{'i'}, body...)
		var set *redis.BoolCmd
		var get *redis.StringCmd
		err := s.do(bk, func(ctx context.Context) error {
			_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				set = p.SetNX(ctx, bk, inline, life)
				get = p.GetRange(ctx, bk, 0, headEnd)
				return nil
			})
			return err
		})
		if err != nil && !isWrongType(err) {
			return err
		}
		if set.Val() {
			return nil
		}
		head, _ = get.Bytes()
	} else {
		err := s.do(bk, func(ctx context.Context) (err error) {
			head, err = s.rdb.GetRange(ctx, bk, 0, headEnd).Bytes()
			return err
		})
		switch {
		case err != nil && !isWrongType(err):
			return err
		case err == nil && len(head) == 0: // no body key
			return s.write(key, body, life, false)
		}
	}
	chunk, chunks, same, err := s.matches(key, head, body)
	if err != nil {
		return err
	}
	if !same {
		return s.write(key, body, life, true)
	}
	// Stored whole before: make it live as long as this grant.
	return s.do(bk, func(ctx context.Context) error {
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error { // one slot: the body's
			extend(ctx, p, bk, life)
			for i := range chunks {
				extend(ctx, p, s.chunkKey(key, chunk, i), life)
			}
			return nil
		})
		return err
	})
}

// write stores body under key in this store's layout: the chunks first,
// then the body key, the commit point; with SET NX for a new body (a body
// is written once), or SET over one that does not read back as itself.
func (s *Store) write(key string, body []byte, life time.Duration, over bool) error {
	set := func(k string, v []byte) error {
		return s.do(k, func(ctx context.Context) error {
			if over {
				return s.rdb.Set(ctx, k, v, life).Err()
			}
			return s.rdb.SetNX(ctx, k, v, life).Err()
		})
	}
	if len(body) <= s.chunk {
		return set(s.bodyKey(key), append([]byte{'i'}, body...))
	}
	chunks := (len(body) + s.chunk - 1) / s.chunk
	for i := range chunks {
		if err := set(s.chunkKey(key, s.chunk, i), body[i*s.chunk:min((i+1)*s.chunk, len(body))]); err != nil {
			return err
		}
	}
	return set(s.bodyKey(key), fmt.Appendf([]byte{'c'}, "%d %d %d", len(body), s.chunk, chunks))
}

// matches reports whether the stored head (and chunks) of key read back as
// body, and the layout they are in. A head of a key of another type, or
// empty, does not. Chunks are compared one batch at a time, never joined.
func (s *Store) matches(key string, head, body []byte) (chunk, chunks int, same bool, err error) {
	size, chunk, chunks, perr := parseManifest(head)
	if perr != nil || size != len(body) {
		return 0, 0, false, nil
	}
	if chunks == 0 {
		return 0, 0, bytes.Equal(head[1:], body), nil
	}
	same = true
	rerr := s.eachChunk(key, size, chunk, chunks, func(i int, part []byte) bool {
		same = bytes.Equal(part, body[i*chunk:i*chunk+len(part)])
		return same
	})
	if errors.Is(rerr, store.ErrIntegrity) {
		return chunk, chunks, false, nil
	}
	if rerr != nil {
		return 0, 0, false, rerr
	}
	return chunk, chunks, same, nil
}

// smallBody is the size up to which PutBody sends a body without asking
// first whether it is stored: one round trip for a new body, at the cost of
// sending the bytes again for a body stored before.
const smallBody = 64 << 10

// extend makes key live at least life, or for ever for life 0.
func extend(ctx context.Context, p redis.Pipeliner, key string, life time.Duration) {
	if life > 0 {
		p.ExpireGT(ctx, key, life)
	} else {
		p.Persist(ctx, key)
	}
}

// parseManifest reads a chunked body's head: its size, chunk size and
// chunk count. An inline head has 0 chunks.
func parseManifest(head []byte) (size, chunk, chunks int, err error) {
	if len(head) == 0 {
		return 0, 0, 0, errors.New("empty body key")
	}
	switch head[0] {
	case 'i':
		return len(head) - 1, 0, 0, nil
	case 'c':
		f := strings.Fields(string(head[1:]))
		if len(f) == 3 {
			size, err1 := strconv.Atoi(f[0])
			chunk, err2 := strconv.Atoi(f[1])
			chunks, err3 := strconv.Atoi(f[2])
			if err1 == nil && err2 == nil && err3 == nil && size > 0 && chunk > 0 && chunks == (size+chunk-1)/chunk {
				return size, chunk, chunks, nil
			}
		}
		return 0, 0, 0, fmt.Errorf("malformed manifest %q", clip(head))
	}
	return 0, 0, 0, fmt.Errorf("unknown body format %q", clip(head[:1]))
}

// parseGrant reads "EXPIRES SIZE".
func parseGrant(g string) (expires, size int64, ok bool) {
	e, sz, found := strings.Cut(g, " ")
	if !found {
		return 0, 0, false
	}
	expires, err1 := strconv.ParseInt(e, 10, 64)
	size, err2 := strconv.ParseInt(sz, 10, 64)
	return expires, size, err1 == nil && err2 == nil && size >= 0
}

// AppendRecord appends r to session's handle table (an RPUSH, atomic: the
// record is whole or absent). A record that breaks a limit fails with an
// error matching [store.ErrInvalidRecord] (see [store.CheckRecord]); a
// malformed session id with [store.ErrInvalidSession]; a closed store
// with [store.ErrClosed]; a Redis failure with an error wrapping it.
func (s *Store) AppendRecord(session string, r values.Record) error {
	if err := store.CheckSession(session); err != nil {
		return err
	}
	if err := store.CheckRecord(r); err != nil {
		return err
	}
	if s.closed.Load() {
		return store.ErrClosed
	}
	hk, mk := s.handlesKey(session), s.markKey(session)
	// A session without a grant yet still has its table (and mark) kept
	// as long as a grant made now would be.
	life := s.life().Milliseconds()
	markLife := life
	if s.forever {
		markLife = -1
	}
	err := s.do(hk, func(ctx context.Context) error {
		return appendRecord.Run(ctx, s.rdb, []string{hk, mk}, encodeRecord(r), handleNumber(r.Handle), life, markLife).Err()
	})
	if err != nil {
		return fmt.Errorf("redisstore: appending %s to the handle table of %q: %w", r.Handle, session, err)
	}
	return nil
}

// Records returns session's records in append order, nil for a session
// without records. A record that does not decode (damaged in Redis) is
// returned as a lost record at its place. A table that lacks handles at
// its end, against the session's mark (evicted, or cut short), ends with
// a lost record for each, so that [values.Open] never hands their numbers
// out again; this is logged as a warning. More than [MaxLostHandles] of
// them, or a mark that is not a number, fail with [store.ErrIntegrity].
func (s *Store) Records(session string) ([]values.Record, error) {
	if err := store.CheckSession(session); err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	hk, mk := s.handlesKey(session), s.markKey(session)
	var lr *redis.StringSliceCmd
	var mc *redis.StringCmd
	err := s.do(hk, func(ctx context.Context) error {
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error { // one slot: the session's
			lr = p.LRange(ctx, hk, 0, -1)
			mc = p.Get(ctx, mk)
			return nil
		})
		return err
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("redisstore: the handle table of %q: %w", session, err)
	}
	raw, err := lr.Result()
	if err != nil {
		return nil, fmt.Errorf("redisstore: the handle table of %q: %w", session, err)
	}
	mark, merr := mc.Result()
	if merr != nil && !errors.Is(merr, redis.Nil) {
		return nil, fmt.Errorf("redisstore: the handle mark of %q: %w", session, merr)
	}
	var recs []values.Record
	if len(raw) > 0 {
		recs = make([]values.Record, len(raw))
	}
	for i, b := range raw {
		if r, err := decodeRecord([]byte(b)); err == nil {
			recs[i] = r
		} // else: a lost record, all zero
	}
	return s.fence(session, recs, mark, merr == nil)
}

// clip shortens b for an error message.
func clip(b []byte) string {
	if len(b) > 40 {
		return string(bytes.ToValidUTF8(b[:40], nil)) + "…"
	}
	return string(bytes.ToValidUTF8(b, nil))
}
