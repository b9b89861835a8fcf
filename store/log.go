package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// A session log (grants.log, handles.log) is a sequence of records, each
//
//	magic   4 bytes  recMagic
//	length  4 bytes  little-endian length of payload
//	crc     4 bytes  little-endian CRC-32C of the length bytes and payload
//	payload length bytes
//
// A record is appended with one write and fsynced before the append
// returns, and a log is only appended to by the one Dir that holds the
// directory's lock, so a crash can damage only the last record.
//
// Bytes after the last intact record (a damaged tail; without an intact
// header, any bytes at all) have two causes the bytes cannot tell apart: a
// crash during the append of a record that was never acknowledged (the
// write was cut short, or the file grew before its data reached the disk
// and reads back as zeros or garbage), and damage to a record that was
// fsynced and acknowledged (a flipped bit, a truncation). A truncation
// looks exactly like a short write and a flipped bit like a write whose
// data did not land, and a checksum only says that the record is not
// intact. So a damaged tail is never forgotten: it reads as one lost
// record (records.go), as if the record had been acknowledged, and the
// first append after it writes a lost record in its place (one write and
// fsync over the damaged bytes, then a truncation), so that the loss stays
// on record. A crash during that replacement leaves a damaged tail again,
// or a lost record followed by one, never fewer lost records. Damage
// followed by an intact record, which no crash produces, fails with
// ErrIntegrity and the log is never written to again.
//
// What no check here can see: a log cut exactly at a record boundary reads
// as a shorter intact log, and a log removed whole reads as no log.

const (
	recMagic     = "\xa7AVs"
	recHeaderLen = 12
	// maxPayload bounds a record's payload: the largest handle record plus
	// room for its other fields. A length above it is damage, not a record.
	maxPayload = MaxMetaSize + 1024
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendRecord appends payload, framed as a record, to dst.
func appendRecord(dst, payload []byte) []byte {
	var h [recHeaderLen]byte
	copy(h[:4], recMagic)
	binary.LittleEndian.PutUint32(h[4:8], uint32(len(payload)))
	crc := crc32.Update(crc32.Checksum(h[4:8], castagnoli), castagnoli, payload)
	binary.LittleEndian.PutUint32(h[8:12], crc)
	return append(append(dst, h[:]...), payload...)
}

// parseRecord returns the payload of the intact record at the start of buf
// and the record's length, or ok false when buf does not start with one.
func parseRecord(buf []byte) (payload []byte, n int, ok bool) {
	if len(buf) < recHeaderLen || string(buf[:4]) != recMagic {
		return nil, 0, false
	}
	size := binary.LittleEndian.Uint32(buf[4:8])
	if size > maxPayload || uint64(len(buf)-recHeaderLen) < uint64(size) {
		return nil, 0, false
	}
	n = recHeaderLen + int(size)
	payload = buf[recHeaderLen:n]
	crc := crc32.Update(crc32.Checksum(buf[4:8], castagnoli), castagnoli, payload)
	if crc != binary.LittleEndian.Uint32(buf[8:12]) {
		return nil, 0, false
	}
	return payload, n, true
}

// scanLog splits buf into the payloads of its intact records, which alias
// buf. end is the offset just past the last intact record: buf[end:] is
// empty or a torn tail to ignore. Damage followed by an intact record is
// reported as an error matching ErrIntegrity.
func scanLog(buf []byte) (payloads [][]byte, end int, err error) {
	for end < len(buf) {
		payload, n, ok := parseRecord(buf[end:])
		if !ok {
			if off, found := nextRecord(buf, end+1); found {
				return nil, 0, fmt.Errorf("%w: damaged record at offset %d before an intact one at %d", ErrIntegrity, end, off)
			}
			return payloads, end, nil
		}
		payloads = append(payloads, payload)
		end += n
	}
	return payloads, end, nil
}

// nextRecord returns the offset of the first intact record in buf at or
// after from.
func nextRecord(buf []byte, from int) (int, bool) {
	for from < len(buf) {
		i := bytes.Index(buf[from:], []byte(recMagic))
		if i < 0 {
			return 0, false
		}
		if _, _, ok := parseRecord(buf[from+i:]); ok {
			return from + i, true
		}
		from += i + 1
	}
	return 0, false
}
