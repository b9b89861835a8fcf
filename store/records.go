package store

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
)

// Record payloads. Every session log starts with a header naming the log's
// kind and its session, which a reader checks, so a log copied or renamed
// into another session's directory is reported instead of trusted.
//
//	header  'H' version kind uvarint(len(session)) session
//	grant   'G' key[32] granted[8] expires[8]          (little-endian Unix ns)
//	handle  'R' str(handle) str(key) str(kind) size[8] str(meta)
//
// where str(s) is uvarint(len(s)) followed by s, and a grant's expires is
// math.MaxInt64 when it never expires.
const (
	recHeader = 'H'
	recGrant  = 'G'
	recHandle = 'R'

	logVersion = 1
	logGrants  = 'g'
	logHandles = 'h'
)

func encodeHeader(kind byte, session string) []byte {
	b := []byte{recHeader, logVersion, kind}
	b = binary.AppendUvarint(b, uint64(len(session)))
	return append(b, session...)
}

// decodeHeader returns the session of a header payload of the given kind.
func decodeHeader(p []byte, kind byte) (string, error) {
	if len(p) < 3 || p[0] != recHeader || p[1] != logVersion || p[2] != kind {
		return "", fmt.Errorf("%w: bad log header", ErrIntegrity)
	}
	d := decoder{p: p[3:]}
	session := string(d.str(MaxSessionLen))
	if d.err != nil || len(d.p) != 0 || CheckSession(session) != nil {
		return "", fmt.Errorf("%w: bad log header", ErrIntegrity)
	}
	return session, nil
}

func encodeGrant(key string, g grant) []byte {
	b := make([]byte, 1, 1+32+16)
	b[0] = recGrant
	b, _ = hex.AppendDecode(b, []byte(key))
	b = binary.LittleEndian.AppendUint64(b, uint64(g.granted))
	return binary.LittleEndian.AppendUint64(b, uint64(g.expires))
}

func decodeGrant(p []byte) (string, grant, error) {
	if len(p) != 1+32+16 || p[0] != recGrant {
		return "", grant{}, fmt.Errorf("%w: bad grant record", ErrIntegrity)
	}
	key := hex.EncodeToString(p[1:33])
	g := grant{
		granted: int64(binary.LittleEndian.Uint64(p[33:41])),
		expires: int64(binary.LittleEndian.Uint64(p[41:49])),
	}
	return key, g, nil
}

func encodeHandle(r HandleRecord) []byte {
	b := make([]byte, 0, 1+4*binary.MaxVarintLen64+len(r.Handle)+len(r.Key)+len(r.Kind)+8+len(r.Meta))
	b = append(b, recHandle)
	b = appendStr(b, r.Handle)
	b = appendStr(b, r.Key)
	b = appendStr(b, r.Kind)
	b = binary.LittleEndian.AppendUint64(b, uint64(r.Size))
	b = binary.AppendUvarint(b, uint64(len(r.Meta)))
	return append(b, r.Meta...)
}

// decodeHandle decodes a handle payload. The record's Meta aliases p.
func decodeHandle(p []byte) (HandleRecord, error) {
	if len(p) == 0 || p[0] != recHandle {
		return HandleRecord{}, fmt.Errorf("%w: bad handle record", ErrIntegrity)
	}
	d := decoder{p: p[1:]}
	var r HandleRecord
	r.Handle = string(d.str(MaxHandleLen))
	r.Key = string(d.str(KeyLen))
	r.Kind = string(d.str(MaxKindLen))
	r.Size = int64(d.uint64())
	if meta := d.str(MaxMetaSize); len(meta) > 0 {
		r.Meta = meta[:len(meta):len(meta)]
	}
	if d.err != nil || len(d.p) != 0 || r.check() != nil {
		return HandleRecord{}, fmt.Errorf("%w: bad handle record", ErrIntegrity)
	}
	return r, nil
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decoder reads fields from p; after the first error every read returns a
// zero value and err stays set.
type decoder struct {
	p   []byte
	err error
}

func (d *decoder) str(limit int) []byte {
	n, k := binary.Uvarint(d.p)
	if d.err != nil || k <= 0 || n > uint64(limit) || n > uint64(len(d.p)-k) {
		d.err = errBadField
		return nil
	}
	s := d.p[k : k+int(n)]
	d.p = d.p[k+int(n):]
	return s
}

func (d *decoder) uint64() uint64 {
	if d.err != nil || len(d.p) < 8 {
		d.err = errBadField
		return 0
	}
	v := binary.LittleEndian.Uint64(d.p)
	d.p = d.p[8:]
	return v
}

var errBadField = fmt.Errorf("%w: bad field", ErrIntegrity)
