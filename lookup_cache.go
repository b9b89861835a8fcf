package values

import (
	"github.com/agentvalues/values/internal/jsontext"
)

// This file holds what one call of Resolve remembers of the values its
// lookups read back and the containers they scanned, so that many paths
// through one large value scan it once.

// walkCache remembers, within one call of Resolve, the containers that
// path lookups reached by scanning at least walkCacheMin bytes, and the
// values they read back from the durable store, by the reference that
// names them, so that many paths through one large value ("$r1.rows.0.id",
// "$r1.rows.1.id", …) scan it, or read it back, once. The zero value is an
// empty cache that allocates nothing until a lookup scans that much.
type walkCache struct {
	m    map[string]walkEntry // keyed by refPath.key
	json map[string]walkEntry // the JSON a string holds, keyed by the refPath.key of the string
}

type walkEntry struct {
	whole  Value  // the stored value, in memory
	part   []byte // the container, a subslice of its bytes, or the JSON a string of it holds
	open   bool   // part runs on past the container's end
	stream bool   // part is a stream of JSON values
	count  int    // the container's items or keys when known, or -1
	ix     *container
	built  *builtIndex
}

// builtIndex is what the lookups of one call learn of a large container
// that Put did not index, so that later lookups through it start near what
// they name: for an array, marks of the items walked past (as Put records
// for the arrays it indexes, at most one per jsontext.MarkGap bytes walked)
// and how far the walks reached; for an object, its key blocks, built by
// the first lookup of a key in it, which scans it whole as a lookup
// without them would. Grown by append, what it holds takes at most twice
// the 1/32 (marks) or 1/25 (blocks) of the bytes scanned that Put's index
// would, and lives as long as the call.
type builtIndex struct {
	marks jsontext.Marks
	// The item after the furthest one walked to, and where it starts (0, 0
	// before any walk): the walks have marked the items before it.
	next, nextOff int
	blocks        jsontext.KeyBlocks
	end           int    // the end of the object the blocks index
	indexed       bool   // blocks were built
	keys          string // the object's keyList, once a key was missing
}

// Walk cache limits: a step of a lookup is remembered when it scanned at
// least walkCacheMin bytes (shorter ones are cheap to repeat, and small
// calls stay allocation-free), and only within the first walkCacheDepth
// segments of a path, so that probing the cache costs a bounded number of
// map lookups per distinct reference.
const (
	walkCacheMin   = 4 << 10
	walkCacheDepth = 16
)

// longest returns the entry for the longest prefix of r, among those with
// at most walkCacheDepth segments, that c holds, the index in r.segs after
// it, and the number of segments it covers; ok is false when c holds none,
// and for a reference without a path. c may be nil.
func (c *walkCache) longest(r refPath) (e walkEntry, at, segs int, ok bool) {
	if c == nil || c.m == nil || r.segs == "" {
		return e, 0, 0, false
	}
	e, ok = c.m[r.key(0)]
	for i, n := 0, 1; i < len(r.segs) && n <= walkCacheDepth; n++ {
		i = segmentEnd(r.segs, i)
		if hit, found := c.m[r.key(i)]; found {
			e, at, segs, ok = hit, i, n, true
		}
	}
	return e, at, segs, ok
}

// lookupJSON returns the entry of the JSON held in the string that the
// reference key names, when c holds one. c may be nil.
func (c *walkCache) lookupJSON(key string) (walkEntry, bool) {
	if c == nil || c.json == nil {
		return walkEntry{}, false
	}
	e, ok := c.json[key]
	return e, ok
}

// addKey remembers e under key, with a builtIndex for a container that
// Put did not index.
func (c *walkCache) addKey(key string, e walkEntry) *builtIndex {
	if c.m == nil {
		c.m = make(map[string]walkEntry)
	}
	return c.add(c.m, key, e)
}

// addJSON remembers e, the JSON held in the string that the reference key
// names, as addKey does. It has a map of its own: no suffix of a key could
// set it apart, since a key may hold any character.
func (c *walkCache) addJSON(key string, e walkEntry) *builtIndex {
	if c.json == nil {
		c.json = make(map[string]walkEntry)
	}
	return c.add(c.json, key, e)
}

func (c *walkCache) add(m map[string]walkEntry, key string, e walkEntry) *builtIndex {
	if e.ix == nil && (e.stream || e.part[0] == '[' || e.part[0] == '{') {
		e.built = &builtIndex{}
	}
	m[key] = e
	return e.built
}

// marksOf returns the marks b holds; b may be nil.
func (b *builtIndex) marksOf() jsontext.Marks {
	if b == nil {
		return nil
	}
	return b.marks
}

// reach returns the item after the furthest the walks through b reached,
// and its offset; 0, 0 for a nil b.
func (b *builtIndex) reach() (next, nextOff int) {
	if b == nil {
		return 0, 0
	}
	return b.next, b.nextOff
}
