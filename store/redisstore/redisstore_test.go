package redisstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
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

// testChunk is the chunk size of the stores of the tests: small, so that
// chunked bodies are cheap to make.
const testChunk = 64 << 10

// testConfig is c with the round-trip deadline of a test that is not about
// deadlines: far above anything a loaded machine takes, so that what such
// a test checks never depends on the machine's speed (the tests of a Redis
// that stops answering keep the default).
func testConfig(c Config) Config {
	if c.Timeout == 0 {
		c.Timeout = 2 * time.Minute
	}
	return c
}

// conformance runs the suite on stores over the client mk makes, each
// under a prefix of its own.
func conformance(t *testing.T, mk func() redis.UniversalClient) {
	var mu sync.Mutex
	n := 0
	prefixes := map[values.Durable]string{}
	open := func(t *testing.T, prefix string, opts ...store.Option) values.Durable {
		rdb := mk()
		t.Cleanup(func() { rdb.Close() })
		st := New(rdb, testConfig(Config{Prefix: prefix, ChunkSize: testChunk}), opts...)
		mu.Lock()
		prefixes[st] = prefix
		mu.Unlock()
		return st
	}
	storetest.Run(t, storetest.Backend{
		Open: func(t *testing.T, opts ...store.Option) values.Durable {
			mu.Lock()
			n++
			prefix := "t" + strconv.Itoa(n)
			mu.Unlock()
			return open(t, prefix, opts...)
		},
		// Another process's view: a new client and store on the same keys.
		Reopen: func(t *testing.T, st values.Durable, opts ...store.Option) values.Durable {
			mu.Lock()
			prefix := prefixes[st]
			mu.Unlock()
			return open(t, prefix, opts...)
		},
		Corrupt: func(t *testing.T, st values.Durable, key string) {
			s := st.(*Store)
			ctx := context.Background()
			k := s.bodyKey(key)
			if head, _ := s.rdb.GetRange(ctx, k, 0, 0).Result(); head == "c" {
				k = s.chunkKey(key, testChunk, 0)
			}
			b, err := s.rdb.Get(ctx, k).Bytes()
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)-1] ^= 1
			if err := s.rdb.SetArgs(ctx, k, b, redis.SetArgs{KeepTTL: true}).Err(); err != nil {
				t.Fatal(err)
			}
		},
		Sizes: []int{testChunk - 1, testChunk, testChunk + 1, 3*testChunk + 5},
	})
}

func TestConformance(t *testing.T) {
	t.Parallel()
	r := testkit.StartRedis(t)
	conformance(t, func() redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: r.Addr}) })
}

// TestConformanceCluster runs the suite on a local Redis Cluster of three
// masters: every command stays within one hash slot.
func TestConformanceCluster(t *testing.T) {
	t.Parallel()
	addrs := testkit.StartRedisCluster(t)
	conformance(t, func() redis.UniversalClient { return redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs}) })
}

func TestOpenURL(t *testing.T) {
	t.Parallel()
	r := testkit.StartRedis(t)
	st, err := OpenURL("redis://" + r.Addr + "/3")
	if err != nil {
		t.Fatal(err)
	}
	key, err := st.PutBody("s", []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	// Database 3 holds it, not database 0.
	raw := redis.NewClient(&redis.Options{Addr: r.Addr, DB: 3})
	defer raw.Close()
	if n, _ := raw.Exists(context.Background(), "av:b:{"+key+"}").Result(); n != 1 {
		t.Errorf("the body is not in database 3")
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenURL("redis://127.0.0.1:1/0"); err == nil || !strings.Contains(err.Error(), "does not answer") {
		t.Errorf("OpenURL of nothing: %v", err)
	}
	if _, err := OpenURL("http://x"); err == nil {
		t.Errorf("OpenURL of an http URL succeeded")
	}
}

// TestKeysAndTTLs checks the layout the package doc gives, and that every
// key a grant needs lives at least as long as the grant.
func TestKeysAndTTLs(t *testing.T) {
	t.Parallel()
	r := testkit.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer rdb.Close()
	ctx := context.Background()
	st := New(rdb, testConfig(Config{ChunkSize: testChunk}), store.WithTTL(time.Hour))
	big := storetest.RandomBytes(2*testChunk+1, 1)
	key, err := st.PutBody("run-1", big)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.AppendRecord("run-1", values.Record{Handle: "r1", Key: key}); err != nil {
		t.Fatal(err)
	}
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	c := "av:b:{" + key + "}:" + strconv.Itoa(testChunk) + ":"
	want := []string{"av:b:{" + key + "}", c + "0", c + "1", c + "2", "av:s:{run-1}:g:" + key, "av:s:{run-1}:h", "av:s:{run-1}:m"}
	slicesSort(keys)
	if strings.Join(keys, " ") != strings.Join(want, " ") {
		t.Fatalf("keys %q, want %q", keys, want)
	}
	for _, k := range keys {
		ttl, err := rdb.PTTL(ctx, k).Result()
		if err != nil || ttl < time.Hour+ExpiredGrace-time.Minute || ttl > time.Hour+ExpiredGrace {
			t.Errorf("%s has TTL %v, want about %v", k, ttl, time.Hour+ExpiredGrace)
		}
	}
	// A longer grant lengthens the body's keys; a shorter one never
	// shortens them.
	long := New(rdb, testConfig(Config{ChunkSize: testChunk}), store.WithTTL(100*time.Hour))
	if _, err := long.PutBody("run-2", big); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutBody("run-3", big); err != nil {
		t.Fatal(err)
	}
	for _, k := range want[:4] {
		if ttl, _ := rdb.PTTL(ctx, k).Result(); ttl < 100*time.Hour {
			t.Errorf("%s has TTL %v after a 100 h grant", k, ttl)
		}
	}
	// A grant that never expires makes its keys persistent.
	forever := New(rdb, testConfig(Config{ChunkSize: testChunk}), store.WithTTL(-1))
	if _, err := forever.PutBody("run-4", big); err != nil {
		t.Fatal(err)
	}
	for _, k := range append(want[:4], "av:s:{run-4}:g:"+key) {
		if ttl, _ := rdb.PTTL(ctx, k).Result(); ttl != -1 {
			t.Errorf("%s has TTL %v after a grant for ever", k, ttl)
		}
	}
}

func slicesSort(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// TestTornChunks removes or alters one chunk of a body, or its grant: Body
// fails with ErrIntegrity, never returning other bytes; a body whose
// writer died before its body key is completed by the next PutBody.
func TestTornChunks(t *testing.T) {
	t.Parallel()
	r := testkit.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer rdb.Close()
	ctx := context.Background()
	st := New(rdb, testConfig(Config{ChunkSize: testChunk}))
	for i, damage := range []func(key string){
		func(key string) { rdb.Del(ctx, st.chunkKey(key, testChunk, 1)) },
		func(key string) { rdb.Set(ctx, st.chunkKey(key, testChunk, 2), "short", 0) },
		func(key string) { rdb.Set(ctx, st.bodyKey(key), "c1 2 3", 0) },
		func(key string) { rdb.Set(ctx, st.bodyKey(key), "x", 0) },
		func(key string) { rdb.Del(ctx, st.bodyKey(key)) },
		func(key string) { rdb.Set(ctx, st.grantKey("s", key), "garbage", 0) },
	} {
		body := storetest.RandomBytes(3*testChunk+7, uint64(i))
		key, err := st.PutBody("s", body)
		if err != nil {
			t.Fatal(err)
		}
		damage(key)
		if got, err := st.Body("s", key); !errors.Is(err, store.ErrIntegrity) || got != nil {
			t.Errorf("damage %d: Body = %d bytes, %v; want ErrIntegrity", i, len(got), err)
		}
	}
	// A writer that died after two chunks: the next PutBody completes it.
	body := storetest.RandomBytes(3*testChunk, 99)
	key := store.KeyOf(body)
	for i := range 2 {
		rdb.Set(ctx, st.chunkKey(key, testChunk, i), body[i*testChunk:(i+1)*testChunk], 0)
	}
	if _, err := st.PutBody("s", body); err != nil {
		t.Fatal(err)
	}
	if got, err := st.Body("s", key); err != nil || !bytes.Equal(got, body) {
		t.Errorf("Body of a completed chunk set: %d bytes, %v", len(got), err)
	}
}

// TestRecordDamage alters a stored handle record: Records returns it as a
// lost record at its place, and values.Open skips its handle number.
func TestRecordDamage(t *testing.T) {
	t.Parallel()
	r := testkit.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer rdb.Close()
	st := New(rdb, testConfig(Config{}))
	s, err := values.Open(st, "s")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		s.PutOutput([]byte(fmt.Sprintf(`{"n":%d}`, i)))
	}
	ctx := context.Background()
	rec, _ := rdb.LIndex(ctx, st.handlesKey("s"), 1).Bytes()
	rec[len(rec)/2] ^= 1
	rdb.LSet(ctx, st.handlesKey("s"), 1, rec)
	recs, err := st.Records("s")
	if err != nil || len(recs) != 3 || !recs[1].Lost() || recs[0].Handle != "r1" || recs[2].Handle != "r3" {
		t.Fatalf("Records = %+v, %v", recs, err)
	}
	again, err := values.Open(st, "s")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := again.Get("r2"); ok {
		t.Errorf("the damaged r2 reads")
	}
	if v, ok := again.Get("r3"); !ok || string(v.Bytes()) != `{"n":2}` {
		t.Errorf("r3 after the damage: %v", ok)
	}
	if next := again.PutOutput([]byte("x")); next != "r4" {
		t.Errorf("next handle %s, want r4", next)
	}
}

// TestRedisDies kills Redis between and during Puts: every Put succeeds
// in memory, the failures reach the WithStoreErrors callback, a handle
// whose value was not stored is never reported persisted, and once Redis
// is back (the client reconnects, the breaker's cool-down runs out)
// values are stored again.
func TestRedisDies(t *testing.T) {
	t.Parallel()
	r := testkit.StartRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr, MaxRetries: -1, DialTimeout: time.Second})
	defer rdb.Close()
	clk := storetest.NewClock()
	st := New(rdb, testConfig(Config{ChunkSize: testChunk}), store.WithClock(clk.Now))
	var mu sync.Mutex
	failed := map[string]bool{}
	s, err := values.Open(st, "s", values.WithStoreErrors(func(h string, err error) {
		mu.Lock()
		failed[h] = true
		mu.Unlock()
	}))
	if err != nil {
		t.Fatal(err)
	}
	before := s.PutOutput([]byte(`{"before":true}`))

	// Kill Redis while a goroutine keeps putting large values.
	var handles []string
	var outputs [][]byte
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 40 {
			out := storetest.RandomBytes(4*testChunk+i, uint64(i)) // binary: stored as it is
			handles = append(handles, s.PutOutput(out))
			outputs = append(outputs, out)
		}
	}()
	time.Sleep(20 * time.Millisecond)
	r.Stop()
	<-done
	during := s.PutOutput([]byte(`{"during":true}`))
	for i, h := range append(handles, during) {
		v, ok := s.Get(h)
		if !ok {
			t.Fatalf("%s is not in memory", h)
		}
		if i < len(outputs) && !bytes.Equal(v.Bytes(), outputs[i]) {
			t.Fatalf("%s holds other bytes", h)
		}
	}
	mu.Lock()
	if !failed[during] {
		t.Errorf("the callback was not told of %s, put while Redis was down", during)
	}
	for _, h := range append(handles, during, before) {
		if failed[h] && s.Persisted(h) {
			t.Errorf("%s failed and is reported persisted", h)
		}
	}
	mu.Unlock()
	if !s.Persisted(before) {
		t.Errorf("%s, put before Redis died, is not persisted", before)
	}

	r.Restart(t)
	// The client's pool, after failed dials, tries again within a second
	// or so: wait for it, as the next Put of a running agent would come.
	deadline := time.Now().Add(30 * time.Second)
	for rdb.Ping(context.Background()).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatal("the client does not reconnect to the restarted Redis")
		}
		time.Sleep(50 * time.Millisecond)
	}
	clk.Advance(DefaultBreakerCooldown)
	after := s.PutOutput([]byte(`{"after":true}`))
	if !s.Persisted(after) {
		t.Errorf("%s, put after Redis came back, is not persisted", after)
	}
	// A reader that reopens the session sees only what was stored: every
	// handle it lists reads back the bytes put under it.
	again, err := values.Open(New(rdb, testConfig(Config{ChunkSize: testChunk})), "s")
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range append(handles, before, after) {
		v, ok := again.Get(h)
		if !ok {
			continue // its record was not stored
		}
		got, err := v.Load()
		if err != nil {
			continue // its body was not stored: unavailable, never other bytes
		}
		var want []byte
		switch {
		case i < len(outputs):
			want = outputs[i]
		case h == before:
			want = []byte(`{"before":true}`)
		default:
			want = []byte(`{"after":true}`)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s reopened holds other bytes", h)
		}
	}
	if v, ok := again.Get(after); !ok || string(v.Bytes()) != `{"after":true}` {
		t.Errorf("%s is not readable after reopening", after)
	}
}

// fleetEnv makes the test binary a worker of TestFleet.
const fleetEnv = "AGENTVALUES_REDIS_FLEET"

// Fleet sizes: workers, sessions in all, values per session.
const (
	fleetWorkers  = 8
	fleetSessions = 1000
	fleetValues   = 3
)

// fleetOutput is the value i of session n: what the writer puts and the
// reader expects.
func fleetOutput(n, i int) []byte {
	if i == 2 {
		return bytes.Repeat([]byte(fmt.Sprintf("session %d line\n", n)), 50)
	}
	return []byte(fmt.Sprintf(`{"session":%d,"value":%d,"rows":[1,2,3]}`, n, i))
}

// TestFleet runs 8 worker processes through one Redis: each writes its
// share of 1,000 sessions, then each reopens the sessions another worker
// wrote and reads every handle back byte for byte, and is denied another
// session's key.
func TestFleet(t *testing.T) {
	if spec := os.Getenv(fleetEnv); spec != "" {
		if err := fleetWorker(spec); err != nil {
			fmt.Println("fleet-error:", err)
			os.Exit(1)
		}
		fmt.Println("fleet-ok")
		return
	}
	t.Parallel()
	r := testkit.StartRedis(t)
	for _, phase := range []string{"write", "read"} {
		var wg sync.WaitGroup
		for w := range fleetWorkers {
			wg.Go(func() {
				cmd := testkit.ChildCommand("TestFleet", fmt.Sprintf("%s=%s,%s,%d", fleetEnv, r.Addr, phase, w))
				out, err := cmd.Output()
				if err != nil || !strings.Contains(string(out), "fleet-ok") {
					t.Errorf("worker %d, %s: %v\n%s", w, phase, err, out)
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
	}
}

// fleetWorker runs one worker: "ADDR,write,W" writes the sessions n with
// n % 8 == W; "ADDR,read,W" reads those of the next worker.
func fleetWorker(spec string) error {
	f := strings.Split(spec, ",")
	w, _ := strconv.Atoi(f[2])
	rdb := redis.NewClient(&redis.Options{Addr: f[0]})
	defer rdb.Close()
	st := New(rdb, testConfig(Config{}))
	if f[1] == "write" {
		for n := w; n < fleetSessions; n += fleetWorkers {
			var failed error
			s, err := values.Open(st, fmt.Sprintf("sess-%d", n), values.WithStoreErrors(func(h string, err error) { failed = err }))
			if err != nil {
				return err
			}
			for i := range fleetValues {
				s.PutOutput(fleetOutput(n, i))
			}
			if failed != nil {
				return failed
			}
		}
		return nil
	}
	for n := (w + 1) % fleetWorkers; n < fleetSessions; n += fleetWorkers {
		session := fmt.Sprintf("sess-%d", n)
		s, err := values.Open(st, session)
		if err != nil {
			return err
		}
		for i := range fleetValues {
			h := fmt.Sprintf("r%d", i+1)
			v, ok := s.Get(h)
			if !ok {
				return fmt.Errorf("%s: %s is missing", session, h)
			}
			got, err := v.Load()
			if err != nil || !bytes.Equal(got, fleetOutput(n, i)) {
				return fmt.Errorf("%s: %s reads %q, %v", session, h, got, err)
			}
		}
		// The key of the next session's value, asked by this one: denied.
		other := store.KeyOf(fleetOutput((n+1)%fleetSessions, 0))
		if _, err := st.Body(session, other); !errors.Is(err, store.ErrDenied) {
			return fmt.Errorf("%s reading another session's key: %v", session, err)
		}
	}
	return nil
}

// TestMixedChunkSizes stores one body from workers with different chunk
// sizes at once, and after a writer of another size died mid-body: every
// key returned reads back, from either.
func TestMixedChunkSizes(t *testing.T) {
	t.Parallel()
	r := testkit.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer rdb.Close()
	small := New(rdb, testConfig(Config{ChunkSize: 64 << 10}))
	large := New(rdb, testConfig(Config{ChunkSize: 100 << 10}))
	for i := range 20 {
		body := storetest.RandomBytes(1<<20, uint64(1000+i))
		var wg sync.WaitGroup
		for j, st := range []*Store{small, large} {
			wg.Go(func() {
				if _, err := st.PutBody(fmt.Sprintf("w%d", j), body); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		for j, st := range []*Store{small, large} {
			if got, err := st.Body(fmt.Sprintf("w%d", j), store.KeyOf(body)); err != nil || !bytes.Equal(got, body) {
				t.Fatalf("body %d, worker %d: %d bytes, %v", i, j, len(got), err)
			}
		}
	}
	// A writer with 128 KiB chunks died after its first chunk.
	body := storetest.RandomBytes(1<<20, 7)
	key := store.KeyOf(body)
	rdb.Set(context.Background(), small.chunkKey(key, 128<<10, 0), body[:128<<10], 0)
	if _, err := small.PutBody("s", body); err != nil {
		t.Fatal(err)
	}
	if got, err := small.Body("s", key); err != nil || !bytes.Equal(got, body) {
		t.Errorf("after a torn write of another chunk size: %d bytes, %v", len(got), err)
	}
}

// TestRenewalExtendsChunks renews a chunked body from a store that would
// store it whole: its chunks live as long as the new grant too.
func TestRenewalExtendsChunks(t *testing.T) {
	t.Parallel()
	r := testkit.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer rdb.Close()
	ctx := context.Background()
	chunked := New(rdb, testConfig(Config{ChunkSize: 16 << 10}), store.WithTTL(time.Hour))
	whole := New(rdb, testConfig(Config{}), store.WithTTL(100*time.Hour))
	body := storetest.RandomBytes(40<<10, 3)
	key, err := chunked.PutBody("a", body)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := whole.PutBody("b", body); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{chunked.bodyKey(key), chunked.chunkKey(key, 16<<10, 0), chunked.chunkKey(key, 16<<10, 2)} {
		if ttl, _ := rdb.PTTL(ctx, k).Result(); ttl < 100*time.Hour {
			t.Errorf("%s has TTL %v after a 100 h grant", k, ttl)
		}
	}
	if got, err := whole.Body("b", key); err != nil || !bytes.Equal(got, body) {
		t.Errorf("Body: %d bytes, %v", len(got), err)
	}
}
