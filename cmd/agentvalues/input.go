package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
)

// errTooLarge reports input past a byte cap. Every error wrapping it names
// the cap, and the size when it was known before reading.
var errTooLarge = errors.New("too large")

// Chunks readInput reads in when it does not know the size: small at
// first, so that small input costs little, growing to inputChunkMax, so that
// large input takes few reads and a cut input wastes at most one chunk.
const (
	inputChunkMin = 32 << 10
	inputChunkMax = 16 << 20
)

// readInput returns all of r, which holds size bytes if size >= 0 (a
// regular file's size from Stat) or an unknown number if size < 0. With
// limit >= 0 it reads at most limit bytes: when size > limit it fails before
// reading anything, and when r holds more than limit bytes anyway (a file
// that grew, an endless pipe) it stops reading at limit+1 bytes, having held
// no more than that. Either failure wraps errTooLarge; the caller names the
// input and says what to do. With limit < 0 there is no cap.
//
// Input whose size is not known is read in chunks and joined at the end, so
// that reading it whole costs twice its size for a moment; a regular file of
// the size Stat reported is read into one buffer.
func readInput(r io.Reader, size, limit int64) ([]byte, error) {
	if limit >= 0 && size > limit {
		return nil, fmt.Errorf("%w: %s, more than the cap of %s", errTooLarge, byteSize(size), byteSize(limit))
	}
	if limit >= 0 {
		r = io.LimitReader(r, limit+1) // bounds the reads below, whatever they ask for
	}
	var (
		chunks [][]byte
		n      int64 // bytes read so far
		next   = int64(inputChunkMin)
	)
	if size >= 0 {
		next = max(size+1, 512) // one byte more, to see the end (or that the file grew)
	}
	for {
		if limit >= 0 && next > limit+1-n {
			next = limit + 1 - n
		}
		buf := make([]byte, next)
		m, err := io.ReadFull(r, buf)
		n += int64(m)
		chunks = append(chunks, buf[:m])
		if limit >= 0 && n > limit {
			return nil, fmt.Errorf("%w: more than the cap of %s", errTooLarge, byteSize(limit))
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return nil, err
		}
		next = min(2*next, inputChunkMax)
	}
	if len(chunks) == 1 {
		return chunks[0], nil
	}
	return bytes.Join(chunks, nil), nil
}

// statSize returns the size of r if it is a regular file, or -1.
func statSize(r io.Reader) int64 {
	f, ok := r.(interface{ Stat() (fs.FileInfo, error) })
	if !ok {
		return -1
	}
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() {
		return -1
	}
	return info.Size()
}

// byteSize writes n bytes for a person: "1073741824 bytes (1 GiB)".
func byteSize(n int64) string {
	s := fmt.Sprintf("%d bytes", n)
	for _, u := range []struct {
		shift uint
		name  string
	}{{30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift {
			return fmt.Sprintf("%s (%.4g %s)", s, float64(n)/float64(int64(1)<<u.shift), u.name)
		}
	}
	return s
}
