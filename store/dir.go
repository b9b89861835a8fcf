package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Dir is a [Store] and [Cleaner] in a directory of the local file system:
// the embedded default. A Dir is safe for concurrent use. One Dir at a time
// may hold a directory: [OpenDir] takes an exclusive lock on it (on Linux,
// the BSDs and macOS; elsewhere the rule is not enforced) that [Dir.Close]
// or the end of the process releases.
//
// Layout, all directories mode 0700 and files 0600:
//
//	FORMAT                     the store format, "agentvalues store 1"
//	LOCK                       held locked while the store is open
//	bodies/<key>               one body per key, written once
//	bodies/.tmp-*              a body being written (see TempPrefix)
//	sessions/<id digest>/      per session, named by the SHA-256 of its id
//	    grants.log             the session's grants
//	    handles.log            the session's handle table
//
// A body is written to a temporary file in bodies/, fsynced, renamed into
// place and the directory fsynced; only then is the grant appended (and
// fsynced) to the session's grant log, so after a crash every key that is
// present is whole and every grant names a body that was durable. An
// existing body is never replaced, except one that no longer matches its
// key, which Put repairs by writing the right bytes in its place. Every
// Get hashes the bytes it read before returning them.
//
// Grants and handles are kept in append-only logs of checksummed records
// (see [Store.Handles] for how a torn last record is treated). Grants are
// loaded when the store opens; handles are read on each [Dir.Handles].
// Session directories and logs are never deleted, so a session reopened
// after its grants expired is told [ErrExpired], not [ErrNotFound].
type Dir struct {
	root, bodies, sessions string
	cfg                    config

	// life is held shared by every operation and exclusively by Close.
	life   sync.RWMutex
	closed bool
	lock   *os.File

	mu       sync.Mutex             // guards the fields below
	sess     map[string]*dirSession // by session id
	refs     map[string]int64       // by key: the latest expiry of any grant on it
	damaged  map[string]error       // by session directory name: why its grants could not be read
	keyLocks map[string]*keyLock    // by key, while a Put or Apply works on it
	temps    map[string]bool        // temporary files being written, by base name
}

// dirSession is the state of one session of a Dir.
type dirSession struct {
	id     string
	dir    string
	grants map[string]grant // guarded by Dir.mu

	mu       sync.Mutex // serializes appends to the session's logs and guards below
	dirReady bool       // dir is known to exist
	grantLog logFile
	handles  logFile
}

// logFile is the append state of one session log.
type logFile struct {
	path  string
	kind  byte
	ready bool  // the log starts with the right header and ends at end
	end   int64 // offset just past the last intact record
}

type keyLock struct {
	mu    sync.Mutex
	users int // guarded by Dir.mu
}

const (
	formatName   = "FORMAT"
	formatText   = "agentvalues store 1\n"
	lockName     = "LOCK"
	bodiesName   = "bodies"
	sessionsName = "sessions"
	grantsLog    = "grants.log"
	handlesLog   = "handles.log"
)

// OpenDir opens the store in directory dir, creating it (and its parents)
// if needed, configured by opts: none, or one [Options] (more than one
// panics). It fails with an error matching [ErrLocked] when another Dir
// holds dir, and with a plain error when dir holds another store format or
// its bodies or sessions directory is a symbolic link or not a directory.
// A session whose grant log is damaged does not stop the store from
// opening: its Get and Put fail with [ErrIntegrity], and so does
// [Dir.Plan], which cannot tell what that session still references.
func OpenDir(dir string, opts ...Options) (*Dir, error) {
	cfg := resolve(opts)
	if dir == "" {
		return nil, errors.New("store: empty directory name")
	}
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(root, lockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	if err := lockFile(lock); err != nil {
		lock.Close()
		if errors.Is(err, ErrLocked) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, root)
		}
		return nil, fmt.Errorf("store: lock %s: %w", root, err)
	}
	d := &Dir{
		root:     root,
		bodies:   filepath.Join(root, bodiesName),
		sessions: filepath.Join(root, sessionsName),
		cfg:      cfg,
		lock:     lock,
		sess:     make(map[string]*dirSession),
		refs:     make(map[string]int64),
		damaged:  make(map[string]error),
		keyLocks: make(map[string]*keyLock),
		temps:    make(map[string]bool),
	}
	if err := d.init(); err != nil {
		unlockFile(lock)
		lock.Close()
		return nil, err
	}
	return d, nil
}

// init checks or creates the format file and directories and loads the
// grants.
func (d *Dir) init() error {
	switch b, err := os.ReadFile(filepath.Join(d.root, formatName)); {
	case errors.Is(err, fs.ErrNotExist):
		if err := writeFileAtomic(d.root, formatName, []byte(formatText)); err != nil {
			return err
		}
	case err != nil:
		return fmt.Errorf("store: %w", err)
	case string(b) != formatText:
		return fmt.Errorf("store: %s holds an unknown store format %q", d.root, clip(string(b)))
	}
	created := false
	for _, sub := range []string{d.bodies, d.sessions} {
		made, err := ensureDir(sub)
		if err != nil {
			return err
		}
		created = created || made
	}
	if created {
		if err := syncDir(d.root); err != nil {
			return fmt.Errorf("store: %w", err)
		}
	}
	return d.loadGrants()
}

// ensureDir creates dir if missing and reports whether it did. An existing
// dir must be a real directory, not a symbolic link to one.
func ensureDir(dir string) (bool, error) {
	err := os.Mkdir(dir, 0o700)
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return false, fmt.Errorf("store: %w", err)
	}
	info, err := os.Lstat(dir)
	if err != nil {
		return false, fmt.Errorf("store: %w", err)
	}
	if !info.IsDir() {
		return false, fmt.Errorf("store: %s is not a directory (mode %s)", dir, info.Mode())
	}
	return false, nil
}

// writeFileAtomic writes file name in dir through a temporary file, so
// that name is either absent or whole.
func writeFileAtomic(dir, name string, data []byte) error {
	tmp, err := os.CreateTemp(dir, TempPrefix+"*")
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	err = writeSyncClose(tmp, data)
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(tmp.Name())
	} else {
		err = syncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("store: write %s: %w", name, err)
	}
	return nil
}

// writeSyncClose writes data to f, fsyncs and closes it.
func writeSyncClose(f *os.File, data []byte) error {
	_, err := f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// loadGrants reads every session's grant log.
func (d *Dir) loadGrants() error {
	entries, err := os.ReadDir(d.sessions)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if CheckKey(name) != nil || e.Type() != fs.ModeDir {
			continue // not ours: Plan reports it
		}
		dir := filepath.Join(d.sessions, name)
		id, payloads, _, err := readLog(filepath.Join(dir, grantsLog), logGrants)
		if err == nil && id != "" && sessionName(id) != name {
			err = fmt.Errorf("%w: log of session %q is in the directory of another", ErrIntegrity, id)
		}
		if err != nil {
			d.damaged[name] = err
			continue
		}
		if id == "" {
			continue // no grants yet; the session's state is made on first use
		}
		grants, err := decodeGrants(payloads)
		if err != nil {
			d.damaged[name] = err
			continue
		}
		s := d.newSession(id)
		s.dirReady = true
		s.grants = grants
		for key, g := range grants {
			if old, ok := d.refs[key]; !ok || g.expires > old {
				d.refs[key] = g.expires
			}
		}
	}
	return nil
}

// sessionName is the name of the directory of session id: the SHA-256 of
// the id, so that no id is ever a file name and ids that differ only in
// case stay apart on case-insensitive file systems.
func sessionName(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

// bodyPath returns the path of the body with the given key under root,
// checking the key first.
func bodyPath(root, key string) (string, error) {
	if err := CheckKey(key); err != nil {
		return "", err
	}
	return filepath.Join(root, bodiesName, key), nil
}

// sessionPath returns the directory of session id under root, checking the
// id first.
func sessionPath(root, id string) (string, error) {
	if err := CheckSession(id); err != nil {
		return "", err
	}
	return filepath.Join(root, sessionsName, sessionName(id)), nil
}

// newSession adds the state of session id, which the caller has checked.
// d.mu must be held or d not yet shared.
func (d *Dir) newSession(id string) *dirSession {
	dir, err := sessionPath(d.root, id)
	if err != nil {
		panic("store: session id not checked: " + err.Error())
	}
	s := &dirSession{
		id:       id,
		dir:      dir,
		grants:   make(map[string]grant),
		grantLog: logFile{path: filepath.Join(dir, grantsLog), kind: logGrants},
		handles:  logFile{path: filepath.Join(dir, handlesLog), kind: logHandles},
	}
	d.sess[id] = s
	return s
}

// session returns the state of session id, which must be valid, making it
// on first use.
func (d *Dir) session(id string) *dirSession {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s := d.sess[id]; s != nil {
		return s
	}
	return d.newSession(id)
}

// damagedErr returns why the grant log of session id could not be read at
// open, or nil.
func (d *Dir) damagedErr(id string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.damaged[sessionName(id)]; err != nil {
		return fmt.Errorf("%w (session %q)", err, id)
	}
	return nil
}

// begin starts an operation: it fails if the store is closed and otherwise
// keeps Close waiting until end is called.
func (d *Dir) begin() error {
	d.life.RLock()
	if d.closed {
		d.life.RUnlock()
		return ErrClosed
	}
	return nil
}

func (d *Dir) end() { d.life.RUnlock() }

// Put implements [Store.Put].
func (d *Dir) Put(session string, body []byte) (string, error) {
	if err := CheckSession(session); err != nil {
		return "", err
	}
	key := KeyOf(body)
	g := d.cfg.newGrant(d.cfg.now())
	if err := d.begin(); err != nil {
		return "", err
	}
	defer d.end()
	if err := d.damagedErr(session); err != nil {
		return "", err
	}
	s := d.session(session)
	unlock := d.lockKey(key)
	defer unlock()
	if err := d.storeBody(key, body); err != nil {
		return "", err
	}
	if err := d.addGrant(s, key, g); err != nil {
		return "", err
	}
	return key, nil
}

// lockKey serializes the Puts and Applies that work on key.
func (d *Dir) lockKey(key string) (unlock func()) {
	d.mu.Lock()
	kl := d.keyLocks[key]
	if kl == nil {
		kl = new(keyLock)
		d.keyLocks[key] = kl
	}
	kl.users++
	d.mu.Unlock()
	kl.mu.Lock()
	return func() {
		kl.mu.Unlock()
		d.mu.Lock()
		if kl.users--; kl.users == 0 {
			delete(d.keyLocks, key)
		}
		d.mu.Unlock()
	}
}

// storeBody makes sure the body of key is durable in bodies/. The caller
// holds the key's lock.
func (d *Dir) storeBody(key string, body []byte) error {
	path := filepath.Join(d.bodies, key)
	same, err := sameContent(path, body)
	if err != nil {
		return fmt.Errorf("store: check body %s: %w", key, err)
	}
	if same {
		return nil
	}
	d.mu.Lock() // so that Plan never sees the temp file unregistered
	tmp, err := os.CreateTemp(d.bodies, TempPrefix+"*")
	var name string
	if err == nil {
		name = filepath.Base(tmp.Name())
		d.temps[name] = true
	}
	d.mu.Unlock()
	if err != nil {
		return fmt.Errorf("store: write body %s: %w", key, err)
	}
	defer func() {
		d.mu.Lock()
		delete(d.temps, name)
		d.mu.Unlock()
	}()
	err = writeSyncClose(tmp, body)
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("store: write body %s: %w", key, err)
	}
	if err := syncDir(d.bodies); err != nil {
		return fmt.Errorf("store: write body %s: %w", key, err)
	}
	return nil
}

// sameContent reports whether path is a regular file holding exactly body.
// A missing file, a symbolic link or a file with other bytes is not the
// same; errors reading an existing file are returned.
func sameContent(path string, body []byte) (bool, error) {
	info, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !info.Mode().IsRegular() || info.Size() != int64(len(body)) {
		return false, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	buf := make([]byte, min(len(body), 64<<10)+1)
	for rest := body; ; {
		n, err := f.Read(buf)
		if n > len(rest) || !bytes.Equal(buf[:n], rest[:n]) {
			return false, nil
		}
		rest = rest[n:]
		if err == io.EOF {
			return len(rest) == 0, nil
		}
		if err != nil {
			return false, err
		}
	}
}

// addGrant records g for key in session s, unless s already holds a grant
// on key that lasts at least as long.
func (d *Dir) addGrant(s *dirSession, key string, g grant) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	d.mu.Lock()
	old, ok := s.grants[key]
	d.mu.Unlock()
	if ok && old.expires >= g.expires {
		return nil
	}
	if err := d.appendLog(s, &s.grantLog, encodeGrant(key, g)); err != nil {
		return err
	}
	d.mu.Lock()
	s.grants[key] = old.merge(g)
	if e, ok := d.refs[key]; !ok || g.expires > e {
		d.refs[key] = g.expires
	}
	d.mu.Unlock()
	return nil
}

// Get implements [Store.Get]. Each call reads the whole body and checks its
// SHA-256 before returning it.
func (d *Dir) Get(session, key string) ([]byte, error) {
	if err := CheckSession(session); err != nil {
		return nil, err
	}
	path, err := bodyPath(d.root, key)
	if err != nil {
		return nil, err
	}
	t := d.cfg.now().UnixNano()
	if err := d.begin(); err != nil {
		return nil, err
	}
	defer d.end()
	g, granted, referenced, err := d.grantOf(session, key)
	if err != nil {
		return nil, err
	}
	if !granted {
		if _, err := os.Lstat(path); referenced || err == nil {
			return nil, fmt.Errorf("%w: session %q did not store %s", ErrDenied, session, key)
		}
		return nil, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	if !live(g.expires, t) {
		return nil, expiredError(session, key, g)
	}
	body, err := readBody(path, key)
	if errors.Is(err, fs.ErrNotExist) {
		// A cleanup may have deleted the body after the grant ran out
		// between the check above and the read.
		if !live(g.expires, d.cfg.now().UnixNano()) {
			return nil, expiredError(session, key, g)
		}
		return nil, fmt.Errorf("%w: body %s is missing", ErrIntegrity, key)
	}
	return body, err
}

// grantOf returns session's grant on key and whether any session holds one.
func (d *Dir) grantOf(session, key string) (g grant, granted, referenced bool, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.damaged[sessionName(session)]; err != nil {
		return grant{}, false, false, fmt.Errorf("%w (session %q)", err, session)
	}
	if s := d.sess[session]; s != nil {
		g, granted = s.grants[key]
	}
	_, referenced = d.refs[key]
	return g, granted, referenced, nil
}

func expiredError(session, key string, g grant) error {
	return fmt.Errorf("%w: grant of session %q on %s ran out at %s", ErrExpired, session, key, time.Unix(0, g.expires).UTC().Format(time.RFC3339))
}

// readBody reads the regular file at path and returns its bytes if they
// hash to key. Any other content fails with ErrIntegrity; a missing file
// fails with an error matching fs.ErrNotExist.
func readBody(path, key string) ([]byte, error) {
	info, err := os.Lstat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("store: read body %s: %w", key, err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: body %s is not a regular file (mode %s)", ErrIntegrity, key, info.Mode())
	}
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("store: read body %s: %w", key, err)
	}
	defer f.Close()
	opened, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("store: read body %s: %w", key, err)
	}
	if !os.SameFile(info, opened) {
		return nil, fmt.Errorf("%w: body %s was replaced while being opened", ErrIntegrity, key)
	}
	size := opened.Size()
	if size < 0 || uint64(size) >= uint64(maxInt) {
		return nil, fmt.Errorf("%w: body %s has size %d", ErrIntegrity, key, size)
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(f, body); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: body %s shrank while being read", ErrIntegrity, key)
		}
		return nil, fmt.Errorf("store: read body %s: %w", key, err)
	}
	if n, _ := f.Read(make([]byte, 1)); n != 0 {
		return nil, fmt.Errorf("%w: body %s grew while being read", ErrIntegrity, key)
	}
	if KeyOf(body) != key {
		return nil, fmt.Errorf("%w: body %s does not match its key", ErrIntegrity, key)
	}
	return body, nil
}

const maxInt = int(^uint(0) >> 1)

// AppendHandle implements [Store.AppendHandle]. The record is fsynced
// before AppendHandle returns.
func (d *Dir) AppendHandle(session string, rec HandleRecord) error {
	if err := CheckSession(session); err != nil {
		return err
	}
	if err := rec.check(); err != nil {
		return err
	}
	payload := encodeHandle(rec)
	if err := d.begin(); err != nil {
		return err
	}
	defer d.end()
	s := d.session(session)
	s.mu.Lock()
	defer s.mu.Unlock()
	return d.appendLog(s, &s.handles, payload)
}

// Handles implements [Store.Handles]. It reads the session's handle log
// from disk on every call. The records of one call share their memory: the
// Meta of all of them are slices of one buffer, so keeping one record
// keeps the whole log in memory.
func (d *Dir) Handles(session string) ([]HandleRecord, error) {
	if err := CheckSession(session); err != nil {
		return nil, err
	}
	if err := d.begin(); err != nil {
		return nil, err
	}
	defer d.end()
	s := d.session(session)
	s.mu.Lock()
	id, payloads, _, err := readLog(s.handles.path, logHandles)
	s.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("%w (session %q)", err, session)
	}
	if id != "" && id != session {
		return nil, fmt.Errorf("%w: handle log of session %q holds session %q", ErrIntegrity, session, id)
	}
	if len(payloads) == 0 {
		return nil, nil
	}
	recs, err := decodeHandles(payloads)
	if err != nil {
		return nil, fmt.Errorf("%w (session %q)", err, session)
	}
	return recs, nil
}

// Close implements [Store.Close]. It waits for operations in progress and
// releases the directory's lock.
func (d *Dir) Close() error {
	d.life.Lock()
	defer d.life.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	err := unlockFile(d.lock)
	if cerr := d.lock.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("store: close: %w", err)
	}
	return nil
}
