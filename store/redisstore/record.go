package redisstore

import (
	"encoding/binary"
	"errors"
	"hash/crc32"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/store"
)

// A record of a handle table is stored as
//
//	1 (the format), then Handle, Key, Kind (each a uvarint length and the
//	bytes), Size (a uvarint), Meta (a uvarint length and the bytes), then
//	the CRC-32C of everything before it, little-endian
//
// so that a record altered in Redis is told from a whole one: Records
// returns it as a lost record.

const recordFormat = 1

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encodeRecord returns the stored form of r (which CheckRecord accepted:
// its Size is not negative).
func encodeRecord(r values.Record) []byte {
	b := make([]byte, 0, 1+4*binary.MaxVarintLen64+len(r.Handle)+len(r.Key)+len(r.Kind)+len(r.Meta)+binary.MaxVarintLen64+4)
	b = append(b, recordFormat)
	for _, f := range []string{r.Handle, r.Key, r.Kind} {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	b = binary.AppendUvarint(b, uint64(r.Size))
	b = binary.AppendUvarint(b, uint64(len(r.Meta)))
	b = append(b, r.Meta...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

var errBadRecord = errors.New("damaged handle record")

// decodeRecord reads a record encodeRecord wrote; anything else,
// including a record within its checksum that store.CheckRecord refuses,
// is errBadRecord.
func decodeRecord(b []byte) (values.Record, error) {
	if len(b) < 5 || b[0] != recordFormat {
		return values.Record{}, errBadRecord
	}
	body, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return values.Record{}, errBadRecord
	}
	rest := body[1:]
	field := func() ([]byte, bool) {
		n, k := binary.Uvarint(rest)
		if k <= 0 || n > uint64(len(rest)-k) {
			return nil, false
		}
		f := rest[k : k+int(n)]
		rest = rest[k+int(n):]
		return f, true
	}
	var r values.Record
	h, ok1 := field()
	key, ok2 := field()
	kind, ok3 := field()
	if !ok1 || !ok2 || !ok3 || len(h) == 0 {
		return values.Record{}, errBadRecord
	}
	size, k := binary.Uvarint(rest)
	if k <= 0 || size > 1<<63-1 {
		return values.Record{}, errBadRecord
	}
	rest = rest[k:]
	meta, ok := field()
	if !ok || len(rest) != 0 {
		return values.Record{}, errBadRecord
	}
	r.Handle, r.Key, r.Kind, r.Size = string(h), string(key), string(kind), int64(size)
	if len(meta) > 0 {
		r.Meta = append([]byte(nil), meta...)
	}
	if store.CheckRecord(r) != nil { // not what AppendRecord writes
		return values.Record{}, errBadRecord
	}
	return r, nil
}
