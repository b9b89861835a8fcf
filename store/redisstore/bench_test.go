package redisstore

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/internal/testkit"
	"github.com/agentvalues/values/store"
	"github.com/agentvalues/values/store/storetest"
)

// BenchmarkStore times the Redis store beside the directory store, the
// same operations in one run:
//
//	go test -run='^$' -bench=Store -benchtime=20x ./store/redisstore
//
// put-SIZE stores a new body (no dedupe), get-SIZE reads one back
// (digest-checked), open-10000 reopens a session of 10,000 handles with
// values.Open. Redis runs on 127.0.0.1 as the tests start it (no AOF), so
// the Redis figures are the store's own cost over loopback, not a disk's;
// the directory store fsyncs every body.
func BenchmarkStore(b *testing.B) {
	sessions := 0
	r := testkit.StartRedis(b)
	backends := []struct {
		name string
		open func(b *testing.B) values.Durable
	}{
		{"dir", func(b *testing.B) values.Durable {
			d, err := store.OpenDir(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { d.Close() })
			return d
		}},
		{"redis", func(b *testing.B) values.Durable {
			rdb := redis.NewClient(&redis.Options{Addr: r.Addr})
			b.Cleanup(func() { rdb.FlushAll(b.Context()); rdb.Close() })
			return New(rdb, testConfig(Config{}))
		}},
	}
	for _, size := range []int{4 << 10, 1 << 20, 64 << 20} {
		name := fmt.Sprintf("%dKiB", size>>10)
		body := storetest.RandomBytes(size, 1)
		for _, be := range backends {
			b.Run("put-"+name+"/"+be.name, func(b *testing.B) {
				st := be.open(b)
				b.SetBytes(int64(size))
				i := uint64(0)
				for b.Loop() {
					i++
					binary.LittleEndian.PutUint64(body, i)
					if _, err := st.PutBody("bench", body); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("get-"+name+"/"+be.name, func(b *testing.B) {
				st := be.open(b)
				key, err := st.PutBody("bench", body)
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(size))
				for b.Loop() {
					if _, err := st.Body("bench", key); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
	for _, be := range backends {
		b.Run("open-10000/"+be.name, func(b *testing.B) {
			st := be.open(b)
			sessions++
			session := fmt.Sprintf("bench-%d", sessions) // a new one each time the function runs
			s, err := values.Open(st, session)
			if err != nil {
				b.Fatal(err)
			}
			for i := range 10_000 {
				s.PutOutput(fmt.Appendf(nil, `{"i":%d,"name":"item %d"}`, i, i))
			}
			for b.Loop() {
				again, err := values.Open(st, session)
				if err != nil {
					b.Fatal(err)
				}
				if again.Next() != "r10001" {
					b.Fatalf("reopened at %s", again.Next())
				}
			}
		})
	}
}
