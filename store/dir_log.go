package store

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	values "github.com/agentvalues/values"
)

// logState is what reading a session log found.
type logState struct {
	info     os.FileInfo // of the open log; nil when it is missing
	session  string      // named by the header; "" when missing, empty or without an intact header
	payloads [][]byte    // the records after the header, aliasing one buffer
	end      int64       // offset just past the last intact record; 0 without an intact header
	size     int64       // the log's size when read
}

// damaged reports whether the log has a damaged tail: bytes after its
// last intact record, which read as one lost record (see log.go).
func (l logState) damaged() bool { return l.size > l.end }

// lost returns how many records the log has lost: its lost records and
// its damaged tail.
func (l logState) lost() int {
	n := 0
	if l.damaged() {
		n++
	}
	for _, p := range l.payloads {
		if isLost(p) {
			n++
		}
	}
	return n
}

// readLog reads the session log name in the session directory dir, which
// must be of the given kind. A missing log reads as the zero logState. A
// log that is not a regular file (a symbolic link included), has an
// intact header of another kind, or is damaged before its last record
// fails with ErrIntegrity.
func readLog(dir *os.Root, name string, kind byte) (logState, error) {
	f, info, err := openRegular(dir, name, os.O_RDONLY)
	if errors.Is(err, fs.ErrNotExist) {
		return logState{}, nil
	}
	if err != nil {
		return logState{}, err
	}
	defer f.Close()
	return readLogFile(f, info, kind)
}

// readLogFile reads the open log f, described by info (its Stat), from
// offset 0 to the size in info, never more.
func readLogFile(f *os.File, info os.FileInfo, kind byte) (logState, error) {
	var b bytes.Buffer
	b.Grow(int(min(info.Size(), 64<<20)))
	if _, err := b.ReadFrom(io.NewSectionReader(f, 0, info.Size())); err != nil {
		return logState{}, fmt.Errorf("store: read %s: %w", f.Name(), err)
	}
	st, err := parseLog(b.Bytes(), kind)
	if err != nil {
		return logState{}, fmt.Errorf("%w in %s", err, f.Name())
	}
	st.info = info
	return st, nil
}

// parseLog splits the bytes of a log of the given kind; see readLog. The
// payloads alias buf.
func parseLog(buf []byte, kind byte) (logState, error) {
	st := logState{size: int64(len(buf))}
	payloads, n, err := scanLog(buf)
	if err != nil {
		return logState{}, err
	}
	if len(payloads) == 0 {
		return st, nil
	}
	if st.session, err = decodeHeader(payloads[0], kind); err != nil {
		return logState{}, err
	}
	st.payloads, st.end = payloads[1:], int64(n)
	return st, nil
}

// handleRecords returns the records of handle log st: its lost records
// and damaged tail as lost records, in place. A log without records is
// nil.
func handleRecords(st logState) ([]values.Record, error) {
	recs, err := decodeHandles(st.payloads)
	if err != nil {
		return nil, err
	}
	if st.damaged() {
		recs = append(recs, values.Record{})
	}
	if len(recs) == 0 {
		return nil, nil
	}
	return recs, nil
}

// openRegular opens name in dir with flag (O_CREATE is not allowed), and
// checks that name is a regular file and the one opened. A missing name
// fails with an error matching fs.ErrNotExist; a symbolic link, a
// directory or another non-regular file, and a name swapped for another
// file while being opened, fail with ErrIntegrity.
func openRegular(dir *os.Root, name string, flag int) (*os.File, os.FileInfo, error) {
	info, err := dir.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, err
	}
	if err != nil {
		return nil, nil, fmt.Errorf("store: %w", err)
	}
	if !info.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%w: %s is not a regular file (mode %s)", ErrIntegrity, joinName(dir, name), info.Mode())
	}
	f, err := dir.OpenFile(name, flag, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, err
	}
	if err != nil {
		return nil, nil, fmt.Errorf("store: %w", err)
	}
	opened, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("store: %w", err)
	}
	if !os.SameFile(info, opened) {
		f.Close()
		return nil, nil, fmt.Errorf("%w: %s was replaced while being opened", ErrIntegrity, joinName(dir, name))
	}
	return f, opened, nil
}

// checkSame fails with ErrReplaced unless name in dir is still, without
// following a symbolic link, the file described by want.
func checkSame(dir *os.Root, name string, want os.FileInfo) error {
	info, err := dir.Lstat(name)
	if err != nil || !os.SameFile(info, want) {
		return fmt.Errorf("%w: %s was removed, replaced or made a symbolic link", ErrReplaced, joinName(dir, name))
	}
	return nil
}

// appendLog appends payload as one record to the log lf of session s and
// fsyncs it. s.mu must be held. If the write fails, the log is cut back to
// its previous end so that no later record ever follows a torn one.
//
// The record is written through the session directory opened without
// following symbolic links, to the very file prepareLog checked: a log or
// directory replaced since (by another file or a symbolic link) fails
// with ErrReplaced before anything is written, and one replaced while the
// record was being written fails with ErrReplaced after, so the record is
// never reported durable unless it is in the store's own log.
func (d *Dir) appendLog(s *dirSession, lf *logFile, payload []byte) error {
	if err := d.checkPlaces(); err != nil {
		return err
	}
	if !lf.ready {
		if err := d.prepareLog(s, lf); err != nil {
			return err
		}
	}
	rec := appendRecord(nil, payload)
	dir, err := openSubdir(d.sessionsRoot, s.name)
	if err != nil {
		lf.ready = false
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrIntegrity) {
			return fmt.Errorf("%w: session directory %s: %w", ErrReplaced, s.dir, err)
		}
		return fmt.Errorf("%w (append to %s)", err, lf.path)
	}
	defer dir.Close()
	if err := checkSame(dir, lf.name, lf.info); err != nil {
		lf.ready = false
		return err
	}
	f, err := dir.OpenFile(lf.name, os.O_WRONLY, 0)
	if err != nil {
		lf.ready = false
		return fmt.Errorf("store: append to %s: %w", lf.path, err)
	}
	if opened, err := f.Stat(); err != nil || !os.SameFile(opened, lf.info) {
		f.Close()
		lf.ready = false
		return fmt.Errorf("%w: %s is not the log the store prepared", ErrReplaced, lf.path)
	}
	_, err = f.WriteAt(rec, lf.end)
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		if f.Truncate(lf.end) != nil || f.Sync() != nil {
			lf.ready = false // look again before the next append
		}
		f.Close()
		return fmt.Errorf("store: append to %s: %w", lf.path, err)
	}
	// The record is in the file; a failing close cannot undo that.
	f.Close()
	err = checkSame(dir, lf.name, lf.info)
	if err == nil {
		err = d.checkSessionDir(s.name, dir)
	}
	if err == nil {
		err = d.checkPlaces()
	}
	if err != nil {
		lf.ready = false // read the log again before the next append
		return fmt.Errorf("%w; the record appended to it is not durable in the store", err)
	}
	lf.end += int64(len(rec))
	return nil
}

// checkSessionDir fails with ErrReplaced unless session directory name is
// still, without following a symbolic link, the directory dir.
func (d *Dir) checkSessionDir(name string, dir *os.Root) error {
	want, err := dir.Stat(".")
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return checkSame(d.sessionsRoot, name, want)
}

// prepareLog makes the log lf of session s ready for appends: it creates
// the session directory and the log with its header if missing, checks the
// header of an existing log, and writes a lost record over a damaged tail
// (see log.go). s.mu must be held. For the grant log it also records how
// many grants the session has lost.
func (d *Dir) prepareLog(s *dirSession, lf *logFile) error {
	if !s.dirReady {
		made, err := ensureDir(d.sessionsRoot, s.name)
		if err != nil {
			return err
		}
		if made {
			if err := syncDir(d.sessionsRoot); err != nil {
				return fmt.Errorf("store: %w", err)
			}
		}
		s.dirReady = true
	}
	dir, err := openSubdir(d.sessionsRoot, s.name)
	if err != nil {
		return fmt.Errorf("%w (session %q)", err, s.id)
	}
	defer dir.Close()
	f, st, err := openLog(dir, lf.name, lf.kind)
	if err != nil {
		return fmt.Errorf("%w (session %q)", err, s.id)
	}
	if st.session != "" && st.session != s.id {
		f.Close()
		return fmt.Errorf("%w: log %s of session %q holds session %q", ErrIntegrity, lf.path, s.id, st.session)
	}
	end, err := repairLog(f, st, lf.kind, s.id)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("store: prepare %s: %w", lf.path, err)
	}
	if lf.kind == logGrants {
		d.mu.Lock()
		if n := st.lost(); n > 0 {
			d.lostGrants[s.name] = n
		}
		d.mu.Unlock()
	}
	lf.end, lf.info, lf.ready = end, st.info, true
	return nil
}

// repairLog writes the header of a new log, or a lost record over the
// damaged tail of an existing one, and returns the offset where the next
// record goes. It overwrites, fsyncs, and only then truncates: a crash in
// between leaves the damaged bytes or a lost record, never a clean end.
func repairLog(f *os.File, st logState, kind byte, id string) (int64, error) {
	end := st.end
	var fix []byte // written at end
	switch {
	case st.session == "": // new, empty, or no intact header: start over
		fix = appendRecord(nil, encodeHeader(kind, id))
		end = 0
		if st.damaged() { // what was there may have held records
			fix = appendRecord(fix, lostPayload)
		}
	case st.damaged():
		fix = appendRecord(nil, lostPayload)
	}
	if fix == nil {
		return end, nil
	}
	if _, err := f.WriteAt(fix, end); err != nil {
		return end, err
	}
	if err := f.Sync(); err != nil {
		return end, err
	}
	end += int64(len(fix))
	if st.size > end {
		if err := f.Truncate(end); err != nil {
			return end, err
		}
		return end, f.Sync()
	}
	return end, nil
}

// openCreate is openRegular that creates a missing file empty, with mode
// 0600, and checks that name is the file it created.
func openCreate(dir *os.Root, name string, flag int) (*os.File, os.FileInfo, error) {
	f, info, err := openRegular(dir, name, flag)
	if !errors.Is(err, fs.ErrNotExist) {
		return f, info, err
	}
	f, err = dir.OpenFile(name, flag|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		info, err = f.Stat()
		if err == nil {
			err = checkSame(dir, name, info)
		}
		if err != nil {
			f.Close()
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("store: create %s: %w", joinName(dir, name), err)
	}
	return f, info, nil
}

// openLog opens the log name in dir for reading and writing, creating it
// empty if it is missing, and reads it; see readLog. The log's info in the
// result is that of the open file.
func openLog(dir *os.Root, name string, kind byte) (*os.File, logState, error) {
	f, info, err := openCreate(dir, name, os.O_RDWR)
	if err != nil {
		return nil, logState{}, err
	}
	st, err := readLogFile(f, info, kind)
	if err != nil {
		f.Close()
		return nil, logState{}, err
	}
	return f, st, nil
}
