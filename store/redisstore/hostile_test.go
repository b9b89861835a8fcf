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
	"sync/atomic"
	"testing"

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
	st := New(rdb, Config{}) // default chunk size: 4 MiB
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
	st := New(rdb, Config{})
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
