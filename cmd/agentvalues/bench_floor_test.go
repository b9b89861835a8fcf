package main

import (
	"fmt"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// The floor of the proxy's CPU for a large result (issue 31), which
// BenchmarkProxyBlob measures in the same run as the proxy: what the
// direct-keep client spends keeping the line (client-cpu-s/op), plus one
// validation pass of the value the proxy stores (valid-cpu-s/op): of the
// JSON array for a JSON text, of the structured content for structured
// content (gjson.ValidBytes both), of the text for log text (utf8.Valid).
// direct-keep reports their sum as floor-cpu-s/op, and the proxy variant
// after it its CPU as a ratio to that floor (proxy-cpu/floor).

// blobValue returns the value the proxy stores from a blob call of kind
// and size: the payload the blob server makes for it.
func blobValue(b *testing.B, kind string, size int) []byte {
	v, err := makeBlob(kind, size)
	if err != nil {
		b.Fatal(err)
	}
	return v
}

// validatePass validates v, the value of a blob of kind, once, and returns
// the CPU time the calling thread spent on it, as keep measures it (the
// benchmark has locked its goroutine to the thread).
func validatePass(b *testing.B, keep lineKeeper, kind string, v []byte) time.Duration {
	u0, s0 := keep.cpu()
	var ok bool
	switch kind {
	case blobText:
		ok = utf8.Valid(v)
	default:
		ok = gjson.ValidBytes(v)
	}
	u1, s1 := keep.cpu()
	if !ok {
		b.Fatalf("the %s payload of %d bytes does not validate", kind, len(v))
	}
	return u1 + s1 - u0 - s0
}

// floors holds the floor-cpu-s/op of the last direct-keep run of each
// kind and size, for the proxy variant that follows it.
var floors sync.Map // floorKey → float64

func floorKey(kind string, size int) string { return fmt.Sprintf("%s:%d", kind, size) }

// reportFloor reports the floor of a direct-keep run: keepCPU and
// validCPU are its seconds per call.
func reportFloor(b *testing.B, kind string, size int, keepCPU, validCPU float64) {
	b.ReportMetric(validCPU, "valid-cpu-s/op")
	b.ReportMetric(keepCPU+validCPU, "floor-cpu-s/op")
	floors.Store(floorKey(kind, size), keepCPU+validCPU)
}

// reportFloorRatio reports the proxy's CPU per call, proxyCPU seconds, as
// a ratio to the floor measured before it in the same run, if one was.
func reportFloorRatio(b *testing.B, kind string, size int, proxyCPU float64) {
	if f, ok := floors.Load(floorKey(kind, size)); ok && f.(float64) > 0 {
		b.ReportMetric(proxyCPU/f.(float64), "proxy-cpu/floor")
	}
}
