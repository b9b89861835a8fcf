package jsontext

import (
	"bytes"
	"sort"
)

// This file holds the sparse indexes of a large container that let a
// lookup start near what it names: marks of an array's items, and blocks of
// an object's keys. [Scan] records them for a top-level container when
// [Limits.Index] asks; [IndexKeys] builds the blocks of any valid object.

// MarkGap is the least number of bytes between two marks of an array:
// from the last mark at or before an item, a walk to the item passes less
// than MarkGap bytes of other items. A mark takes 16 bytes, so the marks
// of an array take at most 1/32 of its bytes (plus one mark).
const MarkGap = 512

// Mark is where one item of an array starts: its index and the offset of
// its first byte.
type Mark struct{ Item, Off int }

// Marks is a sparse index of the items of an array, in ascending order:
// a mark for the first item that starts at least [MarkGap] bytes past the
// array's start, then for the first that starts at least MarkGap bytes past
// the previous mark, and so on.
type Marks []Mark

// Before returns the last mark of an item at or before item k, and false
// when there is none (the walk starts at the array's first item).
func (m Marks) Before(k int) (Mark, bool) {
	i := sort.Search(len(m), func(i int) bool { return m[i].Item > k })
	if i == 0 {
		return Mark{}, false
	}
	return m[i-1], true
}

// KeyBlockGap is the least number of bytes a block of an object's fields
// spans (all but the last): a new block starts at the first key at least
// KeyBlockGap bytes past the start of the previous one.
const KeyBlockGap = 1024

// keyFilterWords is the size of a block's Bloom filter in 64-bit words:
// 256 bits, a quarter of a bit per byte of the block, so that a block
// costs 40 bytes (at most 1/25 of the object) and fields of 100 bytes get
// 25 bits per key, for a false positive rate of about 0.1% with
// keyFilterHashes bits set per key (about 10% at 20 bytes a field).
const (
	keyFilterWords  = 4
	keyFilterHashes = 3
)

// KeyBlockFilterBytes is the size in bytes of one block's filter: what a
// lookup reads of a block it does not scan.
const KeyBlockFilterBytes = keyFilterWords * 8

// KeyBlock is one block of consecutive fields of an object: where its
// first field's key starts (its opening quote), and a Bloom filter of the
// decoded keys of its fields. A block never holds a key its filter denies.
type KeyBlock struct {
	Start  int
	filter [keyFilterWords]uint64
}

// KeyBlocks is an index of the keys of an object: its fields in blocks,
// in order. Of duplicate keys the last wins in a lookup, as in [Member];
// a lookup through the blocks finds it by scanning, from the last block
// back, only the blocks whose filter admits the key, and stops at the
// first (from the end) that holds it. A filter never denies a key its
// block holds; it admits others at a rate that grows as fields shrink (see
// keyFilterWords): with fields of a few bytes it admits most keys, and a
// lookup scans most of the object, as it would without blocks.
type KeyBlocks []KeyBlock

// MayHave reports whether the block may hold the key whose [KeyHash] is h.
func (b *KeyBlock) MayHave(h uint64) bool {
	for range keyFilterHashes {
		bit := h & (64*keyFilterWords - 1)
		if b.filter[bit/64]&(1<<(bit%64)) == 0 {
			return false
		}
		h >>= 8
	}
	return true
}

func (b *KeyBlock) add(h uint64) {
	for range keyFilterHashes {
		bit := h & (64*keyFilterWords - 1)
		b.filter[bit/64] |= 1 << (bit % 64)
		h >>= 8
	}
}

// keyIndexer builds KeyBlocks over a document, one key at a time.
type keyIndexer struct {
	blocks  KeyBlocks
	scratch []byte // a decoded key with escapes
	reserve int    // when not 0, the room to make for blocks once reserveAfter are full
}

// add records the valid key k (with its quotes) of d, in document order.
func (x *keyIndexer) add(d []byte, k Span) {
	if n := len(x.blocks); n == 0 || k.Start-x.blocks[n-1].Start >= KeyBlockGap {
		if n == cap(x.blocks) && n >= reserveAfter && x.reserve > n {
			x.blocks = append(make(KeyBlocks, 0, x.reserve), x.blocks...)
		}
		x.blocks = append(x.blocks, KeyBlock{Start: k.Start})
	}
	body := d[k.Start+1 : k.End-1]
	if bytes.IndexByte(body, '\\') >= 0 {
		x.scratch = AppendUnquoted(x.scratch[:0], d[k.Start:k.End])
		body = x.scratch
	}
	x.blocks[len(x.blocks)-1].add(keyHash(body))
}

// IndexKeys returns the key blocks of the valid object obj, with offsets
// in obj, and the offset after its closing brace (obj may run on past it).
// Its cost is one pass over obj, as [Member]'s. It gives up, reporting
// over, as soon as it has scanned more than limit bytes of obj (at most
// one field more): obj's end need not be known to bound the scan.
func IndexKeys(obj []byte, limit int) (blocks KeyBlocks, end int, over bool) {
	var x keyIndexer
	i := SkipSpace(obj, 1)
	for i < len(obj) && obj[i] != '}' {
		end := SkipString(obj, i)
		x.add(obj, Span{i, end})
		i = SkipSpace(obj, SkipSpace(obj, end)+1) // the colon
		if i = SkipSpace(obj, SkipValue(obj, i)); i > limit {
			return nil, i, true
		}
		if i < len(obj) && obj[i] == ',' {
			i = SkipSpace(obj, i+1)
		}
	}
	if end = min(i+1, len(obj)); end > limit {
		return nil, end, true
	}
	return x.blocks, end, false
}

// Lookup returns the value of the last field named key in the valid
// object obj whose blocks bs are, as [Member] does, and what that cost:
// [KeyBlockFilterBytes] for each block whose filter it tested and the bytes
// of each block it scanned. It tests the blocks from the last one back and
// stops at the first that holds key, so a key near the end of a large
// object costs about one block. It gives up, reporting over, rather than
// let the cost pass limit (a block is charged whole before it is scanned).
func (bs KeyBlocks) Lookup(obj []byte, key string, limit int) (val []byte, cost int, over bool) {
	h := KeyHash(key)
	to := len(obj)
	for b := len(bs) - 1; b >= 0; b-- {
		from := bs[b].Start
		if cost += KeyBlockFilterBytes; cost > limit {
			return nil, cost, true
		}
		if bs[b].MayHave(h) {
			if to-from > limit-cost {
				return nil, cost, true
			}
			v, end := LastMember(obj, from, to, key)
			cost += end - from
			if v != nil {
				return v, cost, false
			}
		}
		to = from
	}
	return nil, cost, false
}

// LastMember returns the value of the last field named key among the
// fields of the valid object obj whose keys start at offsets from from
// (the start of a key, or 0 for the first) up to to (exclusive: a key's
// start, or len(obj)), and the offset where it stopped scanning: that of
// the first key at or past to, or of the object's closing brace.
func LastMember(obj []byte, from, to int, key string) (val []byte, end int) {
	i := from
	if i == 0 {
		i = SkipSpace(obj, 1)
	}
	for i < to && i < len(obj) && obj[i] != '}' {
		kend := SkipString(obj, i)
		k := obj[i:kend]
		i = SkipSpace(obj, SkipSpace(obj, kend)+1) // the colon
		vend := SkipValue(obj, i)
		if KeyEquals(k, key) {
			val = obj[i:vend]
		}
		if i = SkipSpace(obj, vend); i < len(obj) && obj[i] == ',' {
			i = SkipSpace(obj, i+1)
		}
	}
	return val, i
}

// KeyHash returns the hash of a decoded key that [KeyBlock.MayHave] takes.
func KeyHash(key string) uint64 {
	h := uint64(fnvOffset)
	for i := 0; i < len(key); i++ {
		h = (h ^ uint64(key[i])) * fnvPrime
	}
	return mix(h)
}

func keyHash(key []byte) uint64 {
	h := uint64(fnvOffset)
	for _, c := range key {
		h = (h ^ uint64(c)) * fnvPrime
	}
	return mix(h)
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// mix is the finalizer of MurmurHash3: FNV-1a leaves the low bits, those
// the filter uses, poorly mixed for short keys.
func mix(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}
