package values

import (
	"encoding/base64"
	"strings"

	"github.com/gabriel-vasile/mimetype"
)

// This file recognizes binary data held in a JSON string as base64: an
// MCP image or audio block's data, a file's bytes in an API's JSON. Its
// characters tell a model nothing; its decoded size and type do, and a
// preview shows those instead (base64(bytes=67 KiB, type=image/png)).

// Bounds of base64 recognition: a string is tried when it has at least
// base64Min characters; the type is sniffed from the decoding of its
// first base64Sniff characters.
const (
	base64Min   = 64
	base64Sniff = 4096
)

// base64Of reports whether the valid JSON string raw is base64 (standard
// or URL alphabet, padded or not; escaped "/" and line breaks allowed) of
// data of a known type, and returns the size of the data and its type.
// A type is known when mimetype finds one from the data's first bytes
// other than plain text and application/octet-stream: a string of
// letters that happens to be valid base64 is not taken for binary. It
// reads each character once, and stops at the first that base64 has not.
func base64Of(raw []byte) (size int, typ string, ok bool) {
	body := raw[1 : len(raw)-1]
	if len(body) < base64Min {
		return 0, "", false
	}
	var head [base64Sniff]byte // the first characters, unescaped
	nh, chars, pad := 0, 0, 0
	std, url := false, false
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case c == '\\' && i+1 < len(body):
			i++
			switch body[i] {
			case '/':
				c = '/'
			case 'n', 'r':
				continue // a line break, as MIME writes base64
			default:
				return 0, "", false
			}
		case c == '=':
			pad++
			continue
		}
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case c == '+' || c == '/':
			std = true
		case c == '-' || c == '_':
			url = true
		default:
			return 0, "", false
		}
		if pad > 0 || std && url {
			return 0, "", false // characters after padding, or two alphabets
		}
		if nh < len(head) {
			head[nh] = c
			nh++
		}
		chars++
	}
	if chars%4 == 1 || pad > 2 || pad > 0 && (chars+pad)%4 != 0 {
		return 0, "", false
	}
	enc := base64.RawStdEncoding
	if url {
		enc = base64.RawURLEncoding
	}
	sniff := head[:nh-nh%4]
	data := make([]byte, enc.DecodedLen(len(sniff)))
	n, err := enc.Decode(data, sniff)
	if err != nil {
		return 0, "", false
	}
	typ = mimetype.Detect(data[:n]).String()
	if typ == "application/octet-stream" || strings.HasPrefix(typ, "text/plain") {
		return 0, "", false
	}
	return chars * 3 / 4, typ, true
}

// base64In returns the data the valid JSON string raw holds as base64, or
// the zero base64Data.
func base64In(raw []byte) base64Data {
	if size, typ, ok := base64Of(raw); ok {
		return base64Data{size, typ}
	}
	return base64Data{}
}

// appendBase64 appends "base64(bytes=S, type=T)" for b.
func appendBase64(dst []byte, b base64Data) []byte {
	dst = append(dst, "base64(bytes="...)
	dst = appendSize(dst, b.size)
	dst = append(dst, ", type="...)
	dst = append(dst, b.typ...)
	return append(dst, ')')
}
