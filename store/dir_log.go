package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// readLog reads the session log at path, which must be of the given kind.
// It returns the session named by the log's header, the payloads of the
// records after the header (aliasing one buffer) and the offset just past
// the last intact record. A missing log, an empty one and one whose header
// was torn by a crash all read as no session and no records. A log that is
// not a regular file, has a header of another kind, or is damaged before
// its last record fails with ErrIntegrity.
func readLog(path string, kind byte) (session string, payloads [][]byte, end int64, err error) {
	info, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil, 0, nil
	}
	if err != nil {
		return "", nil, 0, fmt.Errorf("store: %w", err)
	}
	if !info.Mode().IsRegular() {
		return "", nil, 0, fmt.Errorf("%w: %s is not a regular file (mode %s)", ErrIntegrity, path, info.Mode())
	}
	buf, err := os.ReadFile(path)
	if err != nil {
		return "", nil, 0, fmt.Errorf("store: %w", err)
	}
	payloads, n, err := scanLog(buf)
	if err != nil {
		return "", nil, 0, fmt.Errorf("%w in %s", err, path)
	}
	if len(payloads) == 0 {
		return "", nil, 0, nil
	}
	if session, err = decodeHeader(payloads[0], kind); err != nil {
		return "", nil, 0, fmt.Errorf("%w in %s", err, path)
	}
	return session, payloads[1:], int64(n), nil
}

// appendLog appends payload as one record to the log lf of session s and
// fsyncs it. s.mu must be held. If the write fails, the log is cut back to
// its previous end so that no later record ever follows a torn one.
func (d *Dir) appendLog(s *dirSession, lf *logFile, payload []byte) error {
	if !lf.ready {
		if err := d.prepareLog(s, lf); err != nil {
			return err
		}
	}
	rec := appendRecord(nil, payload)
	f, err := os.OpenFile(lf.path, os.O_WRONLY, 0)
	if err != nil {
		lf.ready = false
		return fmt.Errorf("store: append to %s: %w", lf.path, err)
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
	// The record is durable; a failing close cannot undo that.
	f.Close()
	lf.end += int64(len(rec))
	return nil
}

// prepareLog makes the log lf of session s ready for appends: it creates
// the session directory and the log with its header if missing, checks the
// header of an existing log, and cuts off a torn tail left by a crash.
// s.mu must be held.
func (d *Dir) prepareLog(s *dirSession, lf *logFile) error {
	if !s.dirReady {
		made, err := ensureDir(s.dir)
		if err != nil {
			return err
		}
		if made {
			if err := syncDir(d.sessions); err != nil {
				return fmt.Errorf("store: %w", err)
			}
		}
		s.dirReady = true
	}
	id, _, end, err := readLog(lf.path, lf.kind)
	if err != nil {
		return fmt.Errorf("%w (session %q)", err, s.id)
	}
	if id != "" && id != s.id {
		return fmt.Errorf("%w: log %s of session %q holds session %q", ErrIntegrity, lf.path, s.id, id)
	}
	f, err := os.OpenFile(lf.path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	err = func() error {
		info, err := f.Stat()
		if err != nil {
			return err
		}
		if id == "" { // new, empty, or only a torn header: start over
			header := appendRecord(nil, encodeHeader(lf.kind, s.id))
			if err := f.Truncate(0); err != nil {
				return err
			}
			if _, err := f.WriteAt(header, 0); err != nil {
				return err
			}
			end = int64(len(header))
		} else if info.Size() > end {
			if err := f.Truncate(end); err != nil {
				return err
			}
		}
		return f.Sync()
	}()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(s.dir)
	}
	if err != nil {
		return fmt.Errorf("store: prepare %s: %w", lf.path, err)
	}
	lf.end, lf.ready = end, true
	return nil
}
