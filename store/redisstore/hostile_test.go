package redisstore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/internal/testkit"
	"github.com/agentvalues/values/store"
	"github.com/agentvalues/values/store/storetest"
)

// This file holds the tests of a Redis that another client rewrites: the
// store must refuse what it reads without spending more memory than the
// real value. Each read runs in a child process (the test binary again),
// which reports the error and its peak memory.

// hostileEnv makes the test binary the child of TestHostileRedis:
// "ADDR,CASE,SESSION,KEY,SIZE".
const hostileEnv = "AGENTVALUES_REDIS_HOSTILE"

// maxHostileHWM bounds the peak resident memory of a child that reads a
// tampered body: far below every size the tampering claims or stores (at
// least 384 MiB), far above what the test binary needs (also under the
// race detector) plus the real body of a few MiB.
const maxHostileHWM = 200 << 20

// hugeString is the size of the strings written in place of a chunk or a
// body key: far above maxHostileHWM, within Redis's 512 MB string limit.
const hugeString = 384 << 20

// claimed is the size a rewritten grant and manifest claim.
const claimed = 64 << 30

// TestHostileRedis rewrites the keys of a stored body with a second
// client, as anyone who can write the Redis can, and reads it back in a
// child process: every read fails with ErrIntegrity (or, for PutBody,
// repairs the body), and the child's peak memory stays far below what the
// keys claim, or hold when the reader knows the size from the handle
// record. (Body alone, asked for a key whose grant, manifest and chunks
// were all rewritten to hold a huge body, can only read what Redis holds:
// it spends that memory and fails the digest check.)
func TestHostileRedis(t *testing.T) {
	if spec := os.Getenv(hostileEnv); spec != "" {
		hostileChild(t, spec)
		return
	}
	t.Parallel()
	r := testkit.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer rdb.Close()
	ctx := context.Background()
	st := New(rdb, testConfig(Config{})) // default chunk size: 4 MiB
	const session = "s"
	body := storetest.RandomBytes(6<<20, 1) // two chunks
	small := storetest.RandomBytes(100<<10, 2)
	grantOf := func(key string, size int64) string {
		g, err := rdb.Get(ctx, st.grantKey(session, key)).Result()
		if err != nil {
			t.Fatal(err)
		}
		expires, _, _ := strings.Cut(g, " ")
		return expires + " " + strconv.FormatInt(size, 10)
	}
	set := func(k string, v any) {
		if err := rdb.Set(ctx, k, v, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	huge := func(k string, first byte) {
		// SETRANGE grows a string on the server without sending it.
		if err := rdb.Del(ctx, k).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.SetRange(ctx, k, hugeString-1, "x").Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.SetRange(ctx, k, 0, string(first)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		body   []byte
		op     string // what the child does: body, load (through values.Open), put
		tamper func(key string)
	}{
		{"grant and manifest claim 64 GiB", body, "body", func(key string) {
			set(st.grantKey(session, key), grantOf(key, claimed))
			set(st.bodyKey(key), fmt.Sprintf("c%d %d %d", claimed, DefaultChunkSize, claimed/DefaultChunkSize))
		}},
		{"grant and manifest claim one 64 GiB chunk", body, "body", func(key string) {
			set(st.grantKey(session, key), grantOf(key, claimed))
			set(st.bodyKey(key), fmt.Sprintf("c%d %d 1", claimed, claimed))
		}},
		{"grant and manifest claim 64 GiB, read through the handle record", body, "load", func(key string) {
			set(st.grantKey(session, key), grantOf(key, claimed))
			set(st.bodyKey(key), fmt.Sprintf("c%d %d %d", claimed, DefaultChunkSize, claimed/DefaultChunkSize))
		}},
		{"grant and manifest claim the size of a huge chunk, read through the handle record", body, "load", func(key string) {
			set(st.grantKey(session, key), grantOf(key, hugeString))
			set(st.bodyKey(key), fmt.Sprintf("c%d %d 1", hugeString, hugeString))
			huge(st.chunkKey(key, hugeString, 0), 'x')
		}},
		{"chunk replaced by a huge string", body, "body", func(key string) {
			huge(st.chunkKey(key, DefaultChunkSize, 1), 'x')
		}},
		{"chunk replaced by a huge string while the body is read", body, "race", nil},
		{"chunk replaced by a huge string, body put again", body, "put", func(key string) {
			huge(st.chunkKey(key, DefaultChunkSize, 1), 'x')
		}},
		{"inline body replaced by a huge string", small, "body", func(key string) {
			huge(st.bodyKey(key), 'i')
		}},
		{"inline body and grant replaced by a huge string, read through the handle record", small, "load", func(key string) {
			set(st.grantKey(session, key), grantOf(key, hugeString-1))
			huge(st.bodyKey(key), 'i')
		}},
		{"inline body replaced by a huge string, body put again", small, "put", func(key string) {
			huge(st.bodyKey(key), 'i')
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rdb.FlushAll(ctx)
			s, err := values.Open(st, session)
			if err != nil {
				t.Fatal(err)
			}
			h := s.PutOutput(tc.body)
			if !s.Persisted(h) {
				t.Fatalf("%s is not persisted", h)
			}
			key := store.KeyOf(tc.body)
			if tc.tamper != nil {
				tc.tamper(key)
			}
			cmd := testkit.ChildCommand("TestHostileRedis", fmt.Sprintf("%s=%s,%s,%s,%s,%d", hostileEnv, r.Addr, tc.op, session, key, len(tc.body)))
			out, err := cmd.Output()
			var got string
			sc := bufio.NewScanner(bytes.NewReader(out))
			for sc.Scan() {
				if r, ok := strings.CutPrefix(sc.Text(), "hostile-result "); ok {
					got = r
				}
			}
			if err != nil || got == "" {
				t.Fatalf("child: %v; output:\n%s", err, out)
			}
			t.Logf("child: %s", got)
			var ok, integrity bool
			var hwm, alloc int64
			if _, err := fmt.Sscanf(got, "ok=%t integrity=%t hwm=%d alloc=%d", &ok, &integrity, &hwm, &alloc); err != nil {
				t.Fatalf("child result %q: %v", got, err)
			}
			switch tc.op {
			case "put":
				if !ok {
					t.Errorf("PutBody over a tampered body did not repair it: %s", got)
				}
			default:
				if !integrity {
					t.Errorf("reading a tampered body: %s; want ErrIntegrity", got)
				}
			}
			if hwm < 0 {
				t.Logf("no /proc/self/status: peak memory not checked")
			} else if hwm > maxHostileHWM {
				t.Errorf("the child peaked at %d MiB of memory, want at most %d MiB", hwm>>20, maxHostileHWM>>20)
			}
			if alloc > maxHostileHWM {
				t.Errorf("the child allocated %d MiB, want at most %d MiB", alloc>>20, maxHostileHWM>>20)
			}
		})
	}
}

// hostileChild does what spec says and prints "hostile-result ok=…
// integrity=… hwm=… alloc=…": whether the operation succeeded (for body
// and load, with the right bytes), whether its error matches ErrIntegrity,
// the peak resident memory and the bytes allocated during it.
func hostileChild(t *testing.T, spec string) {
	f := strings.Split(spec, ",")
	addr, op, session, key := f[0], f[1], f[2], f[3]
	size, _ := strconv.Atoi(f[4])
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	st := New(rdb, testConfig(Config{}))
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var got []byte
	var err error
	switch op {
	case "body":
		got, err = st.Body(session, key)
	case "race":
		// Another client replaces chunk 1 once the store has measured the
		// chunks and before it reads them.
		other := redis.NewClient(&redis.Options{Addr: addr})
		defer other.Close()
		var fired atomic.Bool
		rdb.AddHook(afterPipeline(func(cmds []redis.Cmder) {
			if len(cmds) > 0 && cmds[0].Name() == "strlen" && strings.Contains(fmt.Sprint(cmds[0].Args()[1]), "}:") && !fired.Swap(true) {
				k := st.chunkKey(key, DefaultChunkSize, 1)
				other.Del(context.Background(), k)
				other.SetRange(context.Background(), k, hugeString-1, "x")
			}
		}))
		got, err = st.Body(session, key)
		if !fired.Load() {
			err = errors.New("the chunks were never measured, so never replaced")
		}
	case "load":
		var s *values.SessionValues
		if s, err = values.Open(st, session); err == nil {
			v, ok := s.Get("r1")
			if !ok {
				err = errors.New("r1 is not in the reopened session")
			} else {
				got, err = v.Load()
			}
		}
	case "put":
		body := storetest.RandomBytes(size, 1)
		if size < 1<<20 {
			body = storetest.RandomBytes(size, 2)
		}
		if _, err = st.PutBody(session, body); err == nil {
			got, err = st.Body(session, key)
		}
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	ok := err == nil && len(got) == size && store.KeyOf(got) == key
	fmt.Printf("hostile-result ok=%t integrity=%t hwm=%d alloc=%d err=%v\n", ok, errors.Is(err, store.ErrIntegrity), vmHWM(t), after.TotalAlloc-before.TotalAlloc, err)
}

// afterPipeline is a go-redis hook that calls f with each pipeline's
// commands once their replies are read.
type afterPipeline func(cmds []redis.Cmder)

func (afterPipeline) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (afterPipeline) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (f afterPipeline) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		f(cmds)
		return err
	}
}

// vmHWM returns the peak resident memory of this process in bytes, from
// /proc/self/status, or -1 where there is no such file.
func vmHWM(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	return -1
}

// commandCounter is a go-redis hook that counts the commands a client
// sends, pipelined or not.
type commandCounter struct{ n atomic.Int64 }

func (c *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}
func (c *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// putsFailsafe bounds the wait for Puts to a Redis that does not answer:
// not a timing assertion, only so that a hang fails the test instead of
// holding it until the test binary's own timeout.
const putsFailsafe = 2 * time.Minute

// TestUnresponsiveRedis pauses Redis (CLIENT PAUSE WRITE: every write
// waits) under Puts: each Put completes with its value in memory and the
// failure reported, the first ones with ErrTimeout, and once the breaker
// is open the later ones with ErrCircuitOpen without sending a command;
// after the cool-down (an injected clock) a probe that meets the pause
// opens the breaker again, and once Redis answers the probe closes it and
// Puts are stored again.
func TestUnresponsiveRedis(t *testing.T) {
	t.Parallel()
	r := testkit.StartRedis(t)
	var sent commandCounter
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr, ContextTimeoutEnabled: true})
	rdb.AddHook(&sent)
	defer rdb.Close()
	admin := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer admin.Close()
	ctx := context.Background()
	clk := storetest.NewClock()
	const cooldown = time.Minute
	// The default timeout: a shorter one could fail the Puts that must be
	// stored on a machine loaded by the other tests.
	st := New(rdb, Config{ChunkSize: testChunk, BreakerFailures: 3, BreakerCooldown: cooldown}, store.WithClock(clk.Now))
	var mu sync.Mutex
	failed := map[string]error{}
	s, err := values.Open(st, "s", values.WithStoreErrors(func(h string, err error) {
		mu.Lock()
		failed[h] = err
		mu.Unlock()
	}))
	if err != nil {
		t.Fatal(err)
	}
	failure := func(h string) error {
		mu.Lock()
		defer mu.Unlock()
		return failed[h]
	}
	// Output i is a chunked body when i is a multiple of 3 (not 0): under
	// a WRITE pause its first round trip, a read, is answered, which the
	// breaker counts as Redis answering; the others are written in their
	// first round trip, which waits.
	output := func(i int) []byte {
		if i > 0 && i%3 == 0 {
			return storetest.RandomBytes(3*testChunk+i, uint64(i))
		}
		return []byte(fmt.Sprintf(`{"put":%d}`, i))
	}
	before := s.PutOutput(output(0))
	if !s.Persisted(before) {
		t.Fatalf("%s, put before the pause, is not persisted: %v", before, failure(before))
	}
	// put stores outputs i to j-1 on another goroutine and returns their
	// handles and the commands sent by the end of each, failing the test if
	// they do not all return within the failsafe.
	put := func(i, j int) (handles []string, sentAfter []int64) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			for ; i < j; i++ {
				h := s.PutOutput(output(i))
				handles = append(handles, h)
				sentAfter = append(sentAfter, sent.n.Load())
				if v, ok := s.Get(h); !ok || !bytes.Equal(v.Bytes(), output(i)) {
					t.Errorf("%s is not in memory whole", h)
				}
			}
		}()
		select {
		case <-done:
		case <-time.After(putsFailsafe):
			t.Fatalf("Puts to a paused Redis still not done after %v", putsFailsafe)
		}
		return handles, sentAfter
	}

	if err := admin.Do(ctx, "CLIENT", "PAUSE", 3_600_000, "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	defer admin.Do(ctx, "CLIENT", "UNPAUSE")
	paused, sentAfter := put(1, 11)
	// The first Put's body and its record without a body time out; so does
	// the second Put's body, the third failure in a row: the breaker opens,
	// and nothing is sent from then on, for small bodies and chunked ones.
	for i, h := range paused {
		err := failure(h)
		switch {
		case s.Persisted(h):
			t.Errorf("%s, put while Redis was paused, is reported persisted", h)
		case i < 2 && !errors.Is(err, ErrTimeout):
			t.Errorf("%s: %v; want ErrTimeout", h, err)
		case i >= 2 && !errors.Is(err, ErrCircuitOpen):
			t.Errorf("%s: %v; want ErrCircuitOpen", h, err)
		}
	}
	for i := 2; i < len(sentAfter); i++ {
		if sentAfter[i] != sentAfter[1] {
			t.Errorf("%d commands sent by the end of the Put of %s, %d by the second: the open breaker let commands through", sentAfter[i], paused[i], sentAfter[1])
		}
	}
	t.Logf("errors: first %v; last %v", failure(paused[0]), failure(paused[len(paused)-1]))

	// After the cool-down one Put probes: its body times out, the breaker
	// opens again, and its record fails at once.
	clk.Advance(cooldown)
	sentBefore := sent.n.Load()
	probe, sentAfter := put(11, 13)
	if err := failure(probe[0]); !errors.Is(err, ErrTimeout) {
		t.Errorf("the probe %s: %v; want ErrTimeout", probe[0], err)
	}
	if sentAfter[0] == sentBefore {
		t.Errorf("the probe sent nothing")
	}
	if err := failure(probe[1]); !errors.Is(err, ErrCircuitOpen) || sentAfter[1] != sentAfter[0] {
		t.Errorf("after a failed probe %s: %v, %d commands sent; want ErrCircuitOpen and none", probe[1], err, sentAfter[1]-sentAfter[0])
	}

	// Redis answers again; until the cool-down runs out the breaker still
	// fails Puts at once, then the probe closes it.
	if err := admin.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatal(err)
	}
	sentBefore = sent.n.Load()
	still, _ := put(13, 14)
	if err := failure(still[0]); !errors.Is(err, ErrCircuitOpen) || sent.n.Load() != sentBefore {
		t.Errorf("within the cool-down %s: %v; want ErrCircuitOpen and no command sent", still[0], err)
	}
	clk.Advance(cooldown)
	recovered, _ := put(14, 20)
	for _, h := range recovered {
		if !s.Persisted(h) {
			t.Errorf("%s, put after Redis answers again, is not persisted: %v", h, failure(h))
		}
	}
	// A reader that reopens the session reads every handle it lists as
	// it was put, and the ones stored after the pause all.
	again, err := values.Open(New(admin, testConfig(Config{ChunkSize: testChunk})), "s")
	if err != nil {
		t.Fatal(err)
	}
	all := append(append(append(append([]string{before}, paused...), probe...), still...), recovered...)
	for i, h := range all {
		v, ok := again.Get(h)
		if !ok {
			if s.Persisted(h) {
				t.Errorf("%s is persisted but not in the reopened session", h)
			}
			continue
		}
		got, err := v.Load()
		if err != nil {
			if s.Persisted(h) {
				t.Errorf("%s is persisted but does not read back: %v", h, err)
			}
			continue
		}
		if !bytes.Equal(got, output(i)) {
			t.Errorf("%s reopened holds other bytes", h)
		}
	}
}

// TestUnresponsiveClusterNode pauses one master of a Redis Cluster: Puts
// whose keys it holds fail, at once once its breaker is open, while Puts
// whose keys the other masters hold are stored as before, interleaved
// with them.
func TestUnresponsiveClusterNode(t *testing.T) {
	t.Parallel()
	addrs := testkit.StartRedisCluster(t)
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, ContextTimeoutEnabled: true})
	defer cc.Close()
	ctx := context.Background()
	clk := storetest.NewClock()
	st := New(cc, Config{BreakerFailures: 3, BreakerCooldown: time.Minute}, store.WithClock(clk.Now))
	master := func(key string) string {
		m, err := cc.MasterForKey(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return m.Options().Addr
	}
	// The paused master holds session "p"'s slot; session "q" and the
	// bodies it stores are on the others.
	pausedAddr := master(st.handlesKey("p"))
	q := ""
	for i := 0; q == ""; i++ {
		if id := fmt.Sprintf("q%d", i); master(st.handlesKey(id)) != pausedAddr {
			q = id
		}
	}
	var qOutputs [][]byte
	for i := 0; len(qOutputs) < 10; i++ {
		out := []byte(fmt.Sprintf(`{"q":%d}`, i))
		if master(st.bodyKey(store.KeyOf(out))) != pausedAddr {
			qOutputs = append(qOutputs, out)
		}
	}
	paused := redis.NewClient(&redis.Options{Addr: pausedAddr})
	defer paused.Close()

	var mu sync.Mutex
	failed := map[string]error{}
	report := values.WithStoreErrors(func(h string, err error) {
		mu.Lock()
		failed[h] = err
		mu.Unlock()
	})
	sp, err := values.Open(st, "p", report)
	if err != nil {
		t.Fatal(err)
	}
	sq, err := values.Open(st, q, report)
	if err != nil {
		t.Fatal(err)
	}
	if err := paused.Do(ctx, "CLIENT", "PAUSE", 3_600_000, "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	defer paused.Do(ctx, "CLIENT", "UNPAUSE")
	done := make(chan struct{})
	var pHandles, qHandles []string
	go func() {
		defer close(done)
		for i, out := range qOutputs {
			pHandles = append(pHandles, sp.PutOutput([]byte(fmt.Sprintf(`{"p":%d}`, i))))
			qHandles = append(qHandles, sq.PutOutput(out))
		}
	}()
	select {
	case <-done:
	case <-time.After(putsFailsafe):
		t.Fatalf("Puts to a cluster with a paused master still not done after %v", putsFailsafe)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, h := range qHandles {
		if !sq.Persisted(h) {
			t.Errorf("session %s, on the masters that answer: %s is not persisted: %v", q, h, failed[h])
		}
	}
	for i, h := range pHandles {
		err := failed[h]
		switch {
		case sp.Persisted(h):
			t.Errorf("session p, on the paused master: %s is persisted", h)
		case i >= 2 && !errors.Is(err, ErrCircuitOpen):
			t.Errorf("session p, on the paused master: %s: %v; want ErrCircuitOpen", h, err)
		}
	}
	t.Logf("session p's last error: %v", failed[pHandles[len(pHandles)-1]])
}
