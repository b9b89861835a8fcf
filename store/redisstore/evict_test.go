package redisstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/internal/testkit"
	"github.com/agentvalues/values/store"
	"github.com/agentvalues/values/store/storetest"
)

// logBuffer is a slog handler's output, safe for concurrent writes.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// TestEvictionPolicy: Open and OpenURL refuse a Redis whose
// maxmemory-policy evicts keys, read with CONFIG GET or, where CONFIG is
// disabled, from INFO memory, or that cannot be read at all; with
// AllowEviction they open it and warn.
func TestEvictionPolicy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		args   []string
		user   bool // connect as a user that may run neither CONFIG nor INFO
		refuse bool
		want   string // in the error, and in the warning when allowed
	}{
		{"noeviction", []string{"--maxmemory-policy", "noeviction"}, false, false, ""},
		{"volatile-lru", []string{"--maxmemory-policy", "volatile-lru"}, false, true, "maxmemory-policy volatile-lru"},
		{"allkeys-lfu", []string{"--maxmemory-policy", "allkeys-lfu"}, false, true, "maxmemory-policy allkeys-lfu"},
		{"CONFIG disabled, volatile-ttl", []string{"--maxmemory-policy", "volatile-ttl", "--rename-command", "CONFIG", ""}, false, true, "maxmemory-policy volatile-ttl"},
		{"CONFIG disabled, noeviction", []string{"--rename-command", "CONFIG", ""}, false, false, ""},
		{"neither CONFIG nor INFO", nil, true, true, "cannot be read"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := testkit.StartRedis(t, tc.args...)
			ctx := context.Background()
			opts := &redis.Options{Addr: r.Addr}
			url := "redis://" + r.Addr + "/0"
			if tc.user {
				admin := redis.NewClient(&redis.Options{Addr: r.Addr})
				defer admin.Close()
				if err := admin.Do(ctx, "ACL", "SETUSER", "worker", "on", ">pw", "~*", "&*", "+@all", "-config", "-info").Err(); err != nil {
					t.Fatal(err)
				}
				opts.Username, opts.Password = "worker", "pw"
				url = "redis://worker:pw@" + r.Addr + "/0"
			}
			rdb := redis.NewClient(opts)
			defer rdb.Close()
			if strings.HasPrefix(tc.name, "CONFIG disabled") && rdb.ConfigGet(ctx, "maxmemory-policy").Err() == nil {
				t.Fatal("CONFIG GET works on a server whose CONFIG is renamed away")
			}
			var log logBuffer
			st, err := Open(rdb, Config{Logger: log.logger()})
			if tc.refuse {
				if !errors.Is(err, ErrEvictionPolicy) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "AllowEviction") {
					t.Fatalf("Open: %v; want ErrEvictionPolicy saying %q and how to allow it", err, tc.want)
				}
				t.Logf("Open: %v", err)
				if _, err := OpenURL(url); !errors.Is(err, ErrEvictionPolicy) {
					t.Errorf("OpenURL(%s): %v; want ErrEvictionPolicy", url, err)
				}
				st, err = Open(rdb, Config{Logger: log.logger(), AllowEviction: true})
				if err != nil {
					t.Fatalf("Open with AllowEviction: %v", err)
				}
				if !strings.Contains(log.String(), tc.want) {
					t.Errorf("no warning saying %q: %q", tc.want, log.String())
				}
				us, err := OpenURL(url + "?allow_eviction=true&dial_timeout=3s")
				if err != nil {
					t.Fatalf("OpenURL with allow_eviction=true: %v", err)
				}
				us.Close()
			} else if err != nil || log.String() != "" {
				t.Fatalf("Open: %v, warnings %q", err, log.String())
			}
			if key, err := st.PutBody("s", []byte("x")); err != nil {
				t.Errorf("PutBody: %v", err)
			} else if got, err := st.Body("s", key); err != nil || string(got) != "x" {
				t.Errorf("Body: %q, %v", got, err)
			}
		})
	}
	if _, err := OpenURL("redis://127.0.0.1:1/0?allow_eviction=maybe"); err == nil || !strings.Contains(err.Error(), "allow_eviction") {
		t.Errorf("OpenURL with allow_eviction=maybe: %v", err)
	}
}

// TestEvictedHandleTable fills a Redis that evicts keys with a TTL
// (volatile-lru, as managed services often default to) until a session's
// handle table is evicted: reopened, the session hands out no number
// again, its evicted handles are unknown (a reference to one is
// unresolved, never another value), and the loss is logged; the mark
// that fences it has no TTL, so that the policy never evicts it.
func TestEvictedHandleTable(t *testing.T) {
	t.Parallel()
	r := testkit.StartRedis(t, "--maxmemory", "8mb", "--maxmemory-policy", "volatile-lru")
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer rdb.Close()
	ctx := context.Background()
	var log logBuffer
	st, err := Open(rdb, Config{AllowEviction: true, Logger: log.logger()})
	if err != nil {
		t.Fatal(err)
	}
	s, err := values.Open(st, "victim")
	if err != nil {
		t.Fatal(err)
	}
	const n = 5
	for i := range n {
		if h := s.PutOutput([]byte(fmt.Sprintf(`{"old":%d}`, i))); !s.Persisted(h) {
			t.Fatalf("%s is not persisted", h)
		}
	}
	if ttl, err := rdb.PTTL(ctx, st.markKey("victim")).Result(); err != nil || ttl != -1 {
		t.Fatalf("the mark has TTL %v, %v; want none", ttl, err)
	}
	// Fill Redis with keys that have a TTL until the table is evicted.
	filler := storetest.RandomBytes(64<<10, 9)
	for i := 0; ; i++ {
		if n, err := rdb.Exists(ctx, st.handlesKey("victim")).Result(); err != nil {
			t.Fatal(err)
		} else if n == 0 {
			t.Logf("the handle table was evicted after %d filler keys", i)
			break
		}
		if i == 10_000 {
			t.Fatal("the handle table is still there after 10,000 filler keys of 64 KiB")
		}
		if err := rdb.Set(ctx, fmt.Sprintf("filler:%d", i), filler, time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := rdb.Exists(ctx, st.markKey("victim")).Result(); err != nil || n != 1 {
		t.Fatalf("the mark was evicted too: %d, %v", n, err)
	}

	// Another worker reopens the session.
	other := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer other.Close()
	st2, err := Open(other, Config{AllowEviction: true, Logger: log.logger()})
	if err != nil {
		t.Fatal(err)
	}
	again, err := values.Open(st2, "victim")
	if err != nil {
		t.Fatal(err)
	}
	if again.Len() != 0 {
		t.Errorf("the reopened session holds %d values (%v), want none", again.Len(), again.Handles())
	}
	if _, ok := again.Get("r1"); ok {
		t.Errorf("r1 of the evicted table is in the reopened session")
	}
	next := again.PutOutput([]byte(`{"new":0}`))
	if want := fmt.Sprintf("r%d", n+1); next != want {
		t.Fatalf("the reopened session handed out %s, want %s: a \"$r1\" still in the model's transcript would name another value", next, want)
	}
	if !again.Persisted(next) {
		t.Errorf("%s is not persisted", next)
	}
	res, err := again.ResolveDetail([]byte(`{"a":"$r1","b":"$` + next + `"}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Refs) != 2 || !errors.Is(res.Refs[0].Err, values.ErrUnknownHandle) || res.Refs[1].Err != nil {
		t.Errorf("resolving $r1 and $%s: %+v; want $r1 unknown, $%s resolved", next, res.Refs, next)
	}
	if want := fmt.Sprintf("handles 1 to %d are lost", n); !strings.Contains(log.String(), want) {
		t.Errorf("the log does not say %q: %q", want, log.String())
	}
	// Reopened once more, the session goes on after its new handle.
	third, err := values.Open(st2, "victim")
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := third.Get(next); !ok || string(v.Bytes()) != `{"new":0}` {
		t.Errorf("%s after reopening again: %v", next, ok)
	}
	if h := third.PutOutput([]byte(`{"new":1}`)); h != fmt.Sprintf("r%d", n+2) {
		t.Errorf("the session reopened again handed out %s, want r%d", h, n+2)
	}
}

// TestHandleMark: the mark of a session rises with each record, in one
// slot with its table, and a damaged mark, or one far past the table, is
// refused rather than taken for lost handles without end.
func TestHandleMark(t *testing.T) {
	t.Parallel()
	r := testkit.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer rdb.Close()
	ctx := context.Background()
	var log logBuffer
	st := New(rdb, testConfig(Config{Logger: log.logger()}))
	for _, h := range []string{"r1", "r2", "r7", "r3", "x", "r012"} {
		if err := st.AppendRecord("s", values.Record{Handle: h}); err != nil {
			t.Fatal(err)
		}
	}
	if m, err := rdb.Get(ctx, st.markKey("s")).Result(); err != nil || m != "7" {
		t.Fatalf("mark %q, %v; want 7", m, err)
	}
	// The table cut short at its end: lost records up to the mark.
	rdb.LTrim(ctx, st.handlesKey("s"), 0, 1)
	recs, err := st.Records("s")
	if err != nil || len(recs) != 7 || recs[1].Handle != "r2" || !recs[2].Lost() || !recs[6].Lost() {
		t.Fatalf("Records of a table cut short: %+v, %v; want r1, r2 and 5 lost", recs, err)
	}
	tests := []struct {
		mark string
		want error
	}{
		{"7", nil},
		{fmt.Sprint(2 + MaxLostHandles), nil},
		{fmt.Sprint(3 + MaxLostHandles), store.ErrIntegrity},
		{"99999999999999999999", store.ErrIntegrity},
		{"-1", store.ErrIntegrity},
		{"seven", store.ErrIntegrity},
	}
	for _, tc := range tests {
		rdb.Set(ctx, st.markKey("s"), tc.mark, 0)
		recs, err := st.Records("s")
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("mark %s: Records = %d records, %v; want %v", tc.mark, len(recs), err, tc.want)
		}
	}
}
