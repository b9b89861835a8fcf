package gojq

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"
)

func allocsNow() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func genRecords(size int) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"user-%d","path":"src/pkg%d/file_%d.go","status":%d,"size":%d,"tags":["a%d","b","c%d"],"meta":{"owner":"team-%d","created":"2024-01-%02dT10:00:00Z","ok":%v}}`, i, i, i%50, i, []int{200, 404, 500}[i%3], i*37%100000, i%7, i%11, i%13, i%28+1, i%2 == 0)
	}
	b.WriteByte(']')
	return b.Bytes()
}

func TestMeasureTmp(t *testing.T) {
	if os.Getenv("MEASURE") == "" {
		t.Skip()
	}
	raw := genRecords(64<<20 - 1024)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	dec.Decode(&v)
	for _, q := range strings.Split(os.Getenv("MEASURE"), ";;") {
		p, err := Parse(q)
		if err != nil {
			t.Fatal(err)
		}
		code, _ := Compile(p, WithLimits(Limits{Memory: 1 << 40}))
		runtime.GC()
		a0 := allocsNow()
		t0 := time.Now()
		env := newEnv(context.Background())
		env.meter = newMeter(context.Background(), code.limits)
		it := env.execute(code, v)
		for {
			x, ok := it.Next()
			if !ok {
				break
			}
			if e, ok := x.(error); ok {
				t.Log(e)
			}
		}
		t.Logf("%-60s charged %5d MiB allocs %5d MiB %v", q, env.meter.used>>20, (allocsNow()-a0)>>20, time.Since(t0).Round(time.Millisecond))
	}
}
