package store_test

import (
	"os"
	"path/filepath"
	"testing"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/store"
	"github.com/agentvalues/values/store/storetest"
)

// TestConformance runs the suite every backend passes on the two of this
// package.
func TestConformance(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		storetest.Run(t, storetest.Backend{
			Open: func(t *testing.T, opts ...store.Option) values.Durable {
				m := store.NewMemory(opts...)
				t.Cleanup(func() { m.Close() })
				return m
			},
			// A memory store lives as long as its process: reopening it
			// is using it again.
			Reopen: func(t *testing.T, st values.Durable, opts ...store.Option) values.Durable { return st },
		})
	})
	t.Run("dir", func(t *testing.T) {
		roots := map[values.Durable]string{}
		open := func(t *testing.T, root string, opts ...store.Option) values.Durable {
			d, err := store.OpenDir(root, opts...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.Close() })
			roots[d] = root
			return d
		}
		storetest.Run(t, storetest.Backend{
			Open: func(t *testing.T, opts ...store.Option) values.Durable {
				return open(t, t.TempDir(), opts...)
			},
			Reopen: func(t *testing.T, st values.Durable, opts ...store.Option) values.Durable {
				if err := st.(*store.Dir).Close(); err != nil { // one Dir per directory at a time
					t.Fatal(err)
				}
				return open(t, roots[st], opts...)
			},
			Corrupt: func(t *testing.T, st values.Durable, key string) {
				path := filepath.Join(roots[st], store.BodiesDir, key)
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				b[len(b)/2] ^= 1
				if err := os.WriteFile(path, b, 0o600); err != nil {
					t.Fatal(err)
				}
			},
		})
	})
}
