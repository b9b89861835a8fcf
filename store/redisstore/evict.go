package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/store"
)

// This file holds what keeps eviction from handing out a handle number
// twice: Open's refusal of a Redis whose maxmemory-policy evicts keys, and
// the fence of every session, its mark: the highest handle number its
// table ever recorded, kept beside the table (in its hash slot) and read
// with it, so that a table evicted, or cut short, is told from a new one.

// ErrEvictionPolicy means Redis may evict keys (its maxmemory-policy is
// not noeviction, or could not be read) and [Config.AllowEviction] is not
// set: [Open] and [OpenURL] fail with it.
var ErrEvictionPolicy = errors.New("redisstore: Redis may evict keys")

// MaxLostHandles is the most handles a session's table may lack at its
// end, against its mark, for [Store.Records] to return them as lost
// records (about 80 bytes of memory each): a table evicted, or cut short,
// with more than that is refused with [store.ErrIntegrity], as is a mark
// that does not read as a number. A session hands out that many handles
// only in a very long run.
const MaxLostHandles = 1 << 16

// markKey is the key of session's mark.
func (s *Store) markKey(session string) string { return s.prefix + ":s:{" + session + "}:m" }

// appendRecord appends a record to a handle table and raises the
// session's mark to the record's handle number, atomically. KEYS[1] is the
// table, KEYS[2] the mark; ARGV[1] the record, ARGV[2] its handle number
// (0 for none), ARGV[3] the table's Redis TTL in milliseconds (0: none),
// ARGV[4] the mark's: "-1" for none even when the table has one (a mark
// eviction may not take), "0" for none. A mark of another worker is kept
// with its TTL, or lack of one; the higher number wins. Numbers are
// compared as Lua numbers (exact below 2^53) and stored as the strings
// they were given.
var appendRecord = redis.NewScript(`
redis.call('RPUSH', KEYS[1], ARGV[1])
if ARGV[3] ~= '0' then
	redis.call('PEXPIRE', KEYS[1], ARGV[3], 'NX')
end
local cur = redis.call('GET', KEYS[2])
local mark = ARGV[2]
local m = cur and tonumber(cur)
if m and m >= tonumber(ARGV[2]) then
	mark = cur
end
if ARGV[4] == '-1' or ARGV[4] == '0' then
	redis.call('SET', KEYS[2], mark)
elseif cur then
	redis.call('SET', KEYS[2], mark, 'KEEPTTL')
else
	redis.call('SET', KEYS[2], mark, 'PX', ARGV[4])
end
return 1
`)

// handleNumber returns n of a handle "rN" (decimal, no leading zero,
// below 2^53 so that Lua compares it exactly), 0 for any other handle.
func handleNumber(h string) int64 {
	if len(h) < 2 || len(h) > 16 || h[0] != 'r' || h[1] == '0' {
		return 0
	}
	n, err := strconv.ParseInt(h[1:], 10, 64)
	if err != nil || n <= 0 || n >= 1<<53 || strconv.FormatInt(n, 10) != h[1:] {
		return 0
	}
	return n
}

// fence returns recs with lost records appended up to the mark: the
// handles the table lacks at its end. The highest handle of recs is
// counted as values.Open counts it: a lost record takes the number after
// the highest before it.
func (s *Store) fence(session string, recs []values.Record, mark string, marked bool) ([]values.Record, error) {
	if !marked {
		return recs, nil
	}
	m, err := strconv.ParseInt(mark, 10, 64)
	if err != nil || m < 0 {
		return nil, fmt.Errorf("%w: the handle mark of session %q is malformed: %q", store.ErrIntegrity, session, clip([]byte(mark)))
	}
	var top int64
	for _, r := range recs {
		if r.Lost() {
			top++
		} else {
			top = max(top, handleNumber(r.Handle))
		}
	}
	if m <= top {
		return recs, nil
	}
	if m-top > MaxLostHandles {
		return nil, fmt.Errorf("%w: the handle table of session %q ends at handle %d, but its mark says handle %d was handed out: more than %d handles lost; the session cannot be continued without handing out a number again unless the table is restored", store.ErrIntegrity, session, top, m, MaxLostHandles)
	}
	s.log.Warn(fmt.Sprintf("redisstore: the handle table of session %q ends at handle %d, but handle %d was handed out: handles %d to %d are lost (was the table evicted by Redis?); the session goes on after them", session, top, m, top+1, m),
		"session", session, "recorded", top, "handed_out", m)
	return append(recs, make([]values.Record, m-top)...), nil
}

// checkEviction reads the maxmemory-policy of every server of rdb (every
// master of a cluster) and fails with ErrEvictionPolicy when one may
// evict keys, unless allow; then it warns through the store's logger.
func (s *Store) checkEviction(ctx context.Context, allow bool) error {
	type found struct{ server, policy, unread string }
	var mu sync.Mutex
	var all []found
	check := func(ctx context.Context, c redis.Cmdable, server string) error {
		p, err := policyOf(ctx, c)
		f := found{server: server, policy: p}
		if err != nil {
			f.unread = err.Error()
		}
		mu.Lock()
		all = append(all, f)
		mu.Unlock()
		return nil
	}
	var err error
	switch c := s.rdb.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return check(ctx, n, n.Options().Addr) })
	case *redis.Client:
		err = check(ctx, c, c.Options().Addr)
	case *redis.Ring:
		err = c.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error { return check(ctx, n, n.Options().Addr) })
	default:
		err = check(ctx, c, "Redis")
	}
	if err != nil {
		return fmt.Errorf("redisstore: reading maxmemory-policy: %w", err)
	}
	for _, f := range all {
		var why string
		switch {
		case f.unread != "":
			why = fmt.Sprintf("its maxmemory-policy cannot be read (%s), so it may evict keys", f.unread)
		case f.policy != "noeviction":
			why = fmt.Sprintf("it has maxmemory-policy %s, under which it evicts keys when full", f.policy)
		default:
			continue
		}
		if !allow {
			return fmt.Errorf("%w: %s at %s: %s: a session's bodies and handle table would be lost; set maxmemory-policy noeviction (a full Redis then refuses writes and Puts keep their values in memory), or accept eviction with Config.AllowEviction (allow_eviction=true in the URL)", ErrEvictionPolicy, "Redis", f.server, why)
		}
		msg := fmt.Sprintf("redisstore: Redis at %s: %s; allowed by Config.AllowEviction: evicted values read as unavailable and evicted handles as lost, and each session keeps a mark without a TTL so that its handle numbers are never handed out again", f.server, why)
		if strings.HasPrefix(f.policy, "allkeys-") || f.unread != "" {
			msg += "; under an allkeys- policy the mark may be evicted too, and a session whose table and mark are both evicted starts again at r1"
		}
		s.log.Warn(msg, "server", f.server, "policy", f.policy)
	}
	return nil
}

// policyOf reads c's maxmemory-policy with CONFIG GET, or where CONFIG
// is refused (managed services rename or forbid it) from INFO memory.
func policyOf(ctx context.Context, c redis.Cmdable) (string, error) {
	m, cerr := c.ConfigGet(ctx, "maxmemory-policy").Result()
	if p := m["maxmemory-policy"]; cerr == nil && p != "" {
		return p, nil
	}
	if cerr == nil {
		cerr = errors.New("no maxmemory-policy in the reply")
	}
	info, ierr := c.Info(ctx, "memory").Result()
	if ierr == nil {
		for line := range strings.Lines(info) {
			if p, ok := strings.CutPrefix(strings.TrimSpace(line), "maxmemory_policy:"); ok && p != "" {
				return p, nil
			}
		}
		ierr = errors.New("no maxmemory_policy in the reply")
	}
	return "", fmt.Errorf("CONFIG GET: %v; INFO memory: %v", cerr, ierr)
}
