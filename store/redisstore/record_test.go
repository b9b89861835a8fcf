package redisstore

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/store"
)

// FuzzRecord decodes any bytes as a stored handle record: no panic, and a
// record that decodes is one CheckRecord accepts and encodes back to the
// same bytes; every record encoded decodes to itself.
func FuzzRecord(f *testing.F) {
	f.Add([]byte("r1"), []byte(store.KeyOf(nil)), []byte("array"), int64(100), []byte(`{"len":3}`), []byte{})
	f.Add([]byte("r2"), []byte{}, []byte{}, int64(0), []byte{}, encodeRecord(values.Record{Handle: "r9", Size: 1 << 62}))
	f.Fuzz(func(t *testing.T, handle, key, kind []byte, size int64, meta, raw []byte) {
		if r, err := decodeRecord(raw); err == nil {
			if err := store.CheckRecord(r); err != nil {
				t.Fatalf("decoded a record CheckRecord refuses: %v", err)
			}
			if got := encodeRecord(r); string(got) != string(raw) {
				t.Fatalf("re-encoded %q as %q", raw, got)
			}
		}
		r := values.Record{Handle: string(handle), Key: string(key), Kind: string(kind), Size: size, Meta: meta}
		if len(r.Meta) == 0 {
			r.Meta = nil
		}
		if store.CheckRecord(r) != nil {
			return
		}
		got, err := decodeRecord(encodeRecord(r))
		if err != nil {
			t.Fatalf("decoding an encoded record: %v", err)
		}
		if diff := cmp.Diff(r, got); diff != "" {
			t.Fatalf("round trip (-want +got):\n%s", diff)
		}
	})
}
