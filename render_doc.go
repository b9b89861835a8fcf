package values

import (
	"strconv"
)

// This file renders the previews of documents in a data format that Put
// recognized in a text (index_diff.go): each states the document's
// structure first, then, in what is left of its budget, the text whole or
// its head and tail, as a plain text's preview would.

// Of a document's budget, its structure takes at most this share (in
// fifths), so that its head and tail keep the rest.
const docStructureFifths = 3

// appendPreview appends "diff(files=N, +A -R, hunks=N, len=…, lines=…,
// [path +a -r, …], head=…, tail=…)" for the diff d of the text x, in at
// most budget bytes: as many of its first files as fit, and its last.
func (d *diffDoc) appendPreview(dst []byte, x *value, budget int) []byte {
	start := len(dst)
	dst = append(dst, "diff("...)
	if d.commits > 0 {
		dst = append(dst, "commits="...)
		dst = strconv.AppendInt(dst, int64(d.commits), 10)
		dst = append(dst, ", "...)
	}
	dst = append(dst, "files="...)
	dst = strconv.AppendInt(dst, int64(d.files), 10)
	dst = append(dst, ", +"...)
	dst = strconv.AppendInt(dst, int64(d.added), 10)
	dst = append(dst, " -"...)
	dst = strconv.AppendInt(dst, int64(d.removed), 10)
	dst = append(dst, ", hunks="...)
	dst = strconv.AppendInt(dst, int64(d.hunks), 10)
	dst = append(dst, ", "...)
	dst = appendTextSize(dst, x)
	if left := budget - (len(dst) - start) - len(", )"); left > 4*minElement {
		dst = append(dst, ", "...)
		file := func(dst []byte, f diffFile) []byte {
			dst = appendName(dst, f.name.Of(x.raw), 2*keyBudget, true)
			if f.note != "" {
				dst = append(dst, ' ')
				return append(dst, f.note...)
			}
			dst = append(dst, " +"...)
			dst = strconv.AppendInt(dst, int64(f.added), 10)
			dst = append(dst, " -"...)
			return strconv.AppendInt(dst, int64(f.removed), 10)
		}
		dst = appendList(dst, d.files, d.head, d.tail, file, left*docStructureFifths/5)
	}
	return appendTextEnds(dst, start, x.raw, budget)
}
