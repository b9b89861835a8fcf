package store

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"

	values "github.com/agentvalues/values"
)

// Record payloads. Every session log starts with a header naming the log's
// kind and its session, which a reader checks, so a log copied or renamed
// into another session's directory is reported instead of trusted.
//
//	header  'H' version kind uvarint(len(session)) session
//	grant   'G' key[32] granted[8] expires[8] size[8]  (little-endian Unix ns, bytes)
//	handle  'R' str(handle) str(key) str(kind) size[8] str(meta)
//	lost    'L'
//
// where str(s) is uvarint(len(s)) followed by s, and a grant's expires is
// math.MaxInt64 when it never expires. A grant written before grants
// recorded the body's size lacks size; it still reads, with the size
// unknown. A lost record, in either log, stands where a damaged last
// record was (see log.go); it reads back as one lost grant or one lost
// handle record. Readers older than lost records and sized grants reject
// both with ErrIntegrity: they fail closed.
const (
	recHeader = 'H'
	recGrant  = 'G'
	recHandle = 'R'
	recLost   = 'L'

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

// lostPayload is the payload of a lost record.
var lostPayload = []byte{recLost}

// isLost reports whether p is the payload of a lost record.
func isLost(p []byte) bool { return len(p) == 1 && p[0] == recLost }

// Sizes of grant payloads: without and with the body's size.
const (
	oldGrantLen = 1 + 32 + 16
	grantLen    = oldGrantLen + 8
)

// encodeGrant encodes g, which must have a known size, as a grant on key.
func encodeGrant(key string, g grant) []byte {
	b := make([]byte, 1, grantLen)
	b[0] = recGrant
	b, _ = hex.AppendDecode(b, []byte(key))
	b = binary.LittleEndian.AppendUint64(b, uint64(g.granted))
	b = binary.LittleEndian.AppendUint64(b, uint64(g.expires))
	return binary.LittleEndian.AppendUint64(b, uint64(g.size))
}

// decodeGrants decodes grant payloads into a map by key, merging the
// grants on one key, and counts the lost records among them. The keys
// share one allocation. A negative size is damage.
func decodeGrants(payloads [][]byte) (grants map[string]grant, lost int, err error) {
	arena := make([]byte, 0, len(payloads)*KeyLen)
	for i, p := range payloads {
		switch {
		case isLost(p):
			lost++
			continue
		case len(p) == grantLen && p[0] == recGrant && int64(binary.LittleEndian.Uint64(p[oldGrantLen:])) >= 0:
		case len(p) == oldGrantLen && p[0] == recGrant:
		default:
			return nil, 0, fmt.Errorf("%w: bad grant record %d", ErrIntegrity, i)
		}
		arena = hex.AppendEncode(arena, p[1:33])
	}
	keys := string(arena)
	grants = make(map[string]grant, len(payloads)-lost)
	k := 0
	for _, p := range payloads {
		if isLost(p) {
			continue
		}
		key := keys[k*KeyLen : (k+1)*KeyLen]
		k++
		g := grant{
			granted: int64(binary.LittleEndian.Uint64(p[33:41])),
			expires: int64(binary.LittleEndian.Uint64(p[41:49])),
			size:    unknownSize,
		}
		if len(p) == grantLen {
			g.size = int64(binary.LittleEndian.Uint64(p[oldGrantLen:]))
		}
		if old, ok := grants[key]; ok {
			g = old.merge(g)
		}
		grants[key] = g
	}
	return grants, lost, nil
}

func encodeHandle(r values.Record) []byte {
	b := make([]byte, 0, 1+4*binary.MaxVarintLen64+len(r.Handle)+len(r.Key)+len(r.Kind)+8+len(r.Meta))
	b = append(b, recHandle)
	b = appendStr(b, r.Handle)
	b = appendStr(b, r.Key)
	b = appendStr(b, r.Kind)
	b = binary.LittleEndian.AppendUint64(b, uint64(r.Size))
	b = binary.AppendUvarint(b, uint64(len(r.Meta)))
	return append(b, r.Meta...)
}

// decodeHandle decodes one handle payload; see decodeHandles.
func decodeHandle(p []byte) (values.Record, error) {
	recs, err := decodeHandles([][]byte{p})
	if err != nil {
		return values.Record{}, err
	}
	return recs[0], nil
}

// decodeHandles decodes handle payloads; a lost record decodes as the
// zero values.Record, whose Lost is true. The records' Meta alias the payloads,
// and their strings share one allocation: reading a session back costs a
// few allocations, not several per record.
func decodeHandles(payloads [][]byte) ([]values.Record, error) {
	recs := make([]values.Record, len(payloads))
	lens := make([]uint8, 0, 3*len(payloads)) // of each record's strings
	arena := make([]byte, 0, len(payloads)*(KeyLen+16))
	for i, p := range payloads {
		if isLost(p) {
			lens = append(lens, 0, 0, 0)
			continue
		}
		if len(p) == 0 || p[0] != recHandle {
			return nil, fmt.Errorf("%w: bad handle record %d", ErrIntegrity, i)
		}
		d := decoder{p: p[1:]}
		handle := d.str(MaxHandleLen)
		key := d.str(KeyLen)
		kind := d.str(MaxKindLen)
		size := int64(d.uint64())
		meta := d.str(MaxMetaSize)
		if d.err != nil || len(d.p) != 0 || len(handle) == 0 || len(key) != 0 && !isKey(key) || size < 0 {
			return nil, fmt.Errorf("%w: bad handle record %d", ErrIntegrity, i)
		}
		recs[i].Size = size
		if len(meta) > 0 {
			recs[i].Meta = meta[:len(meta):len(meta)]
		}
		lens = append(lens, uint8(len(handle)), uint8(len(key)), uint8(len(kind)))
		arena = append(append(append(arena, handle...), key...), kind...)
	}
	s := string(arena)
	for i := range recs {
		l := lens[3*i : 3*i+3]
		recs[i].Handle, s = s[:l[0]], s[l[0]:]
		recs[i].Key, s = s[:l[1]], s[l[1]:]
		recs[i].Kind, s = s[:l[2]], s[l[2]:]
	}
	return recs, nil
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
