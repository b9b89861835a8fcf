package values

import (
	"math"
	"strconv"
	"testing"

	"github.com/dustin/go-humanize"
)

// appendSize must print what go-humanize's IBytes prints, which the
// preview grammar and its golden files were written with.
func TestAppendSizeMatchesIBytes(t *testing.T) {
	ns := []int{-1, 0, 1, 9, 10, 99, 1000, 1023, 1024, 1025, 10239, 10240, 10241, 1048575, 1048576, 104857600, 1<<30 - 1, min(1<<40, math.MaxInt), math.MaxInt}
	for p := 1; p < 1<<20; p = p*3 + 1 {
		ns = append(ns, p, p*1024-1, p*1024, p*1024+512)
	}
	for n := 1000; n < 70_000; n++ { // every tenth's rounding, and each half's to even
		ns = append(ns, n)
	}
	for k := 1; k <= 6; k++ { // each unit's edges, in integers below 1 TiB and floats above
		for d := -3; d <= 3; d++ {
			ns = append(ns, 1<<(10*k)+d, 1<<(10*k)*10+d, 1<<(10*k)*1023+d)
		}
	}
	for _, n := range ns {
		want := humanize.IBytes(uint64(max(n, 0)))
		if got := size(n); got != want {
			t.Errorf("size(%d) = %q, want %q", n, got, want)
		}
	}
}

func FuzzAppendSize(f *testing.F) {
	f.Add(uint64(1048575))
	f.Fuzz(func(t *testing.T, n uint64) {
		n &= math.MaxInt64
		if got, want := size(int(n)), humanize.IBytes(n); got != want {
			t.Fatalf("size(%d) = %q, want %q", n, got, want)
		}
	})
}

// appendDecimal must print what strconv.AppendUint prints.
func TestAppendDecimal(t *testing.T) {
	for _, n := range []uint64{0, 1, 9, 10, 99, 100, 999, 1000, 9999, 10000, 10001, 123456789, math.MaxUint64} {
		if got, want := string(appendDecimal([]byte("x"), n)), "x"+strconv.FormatUint(n, 10); got != want {
			t.Errorf("appendDecimal(%d) = %q, want %q", n, got, want)
		}
	}
	for n := range uint64(20000) {
		if got, want := string(appendDecimal(nil, n)), strconv.FormatUint(n, 10); got != want {
			t.Fatalf("appendDecimal(%d) = %q, want %q", n, got, want)
		}
	}
}
