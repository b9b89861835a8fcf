package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/internal/jsontext"
)

// Dir is a [values.Durable] and [Cleaner] in a directory of the local file
// system: the embedded default. A Dir is safe for concurrent use. One Dir at a time
// may hold a directory: [OpenDir] takes an exclusive lock on the directory
// itself and on its LOCK file (on Linux, the BSDs and macOS; elsewhere the
// rule is not enforced), which [Dir.Close] or the end of the process
// releases. Removing or replacing LOCK does not release the lock: a second
// OpenDir still fails with [ErrLocked], and the open Dir's writes fail with
// [ErrReplaced].
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
// place and the directory fsynced; only then is the grant (with the body's
// size) appended and fsynced to the session's grant log, so after a crash
// every key that is present is whole and every grant names a body that was
// durable. An existing body is never replaced, except one that no longer
// matches its key, which PutBody repairs by writing the right bytes in its
// place. Every Body checks the body's size against its grant before
// reading it and hashes the bytes it read before returning them.
//
// Every file is reached through the directories OpenDir opened (the store
// directory, bodies/, sessions/), never by following a symbolic link out
// of them, and a log or body that is a symbolic link is refused. Before
// and after each write a Dir checks that the store directory, LOCK,
// bodies/, sessions/, the session directory and the log it writes are
// still the ones it opened; if one was removed, moved, replaced or made a
// symbolic link, the write fails with [ErrReplaced] rather than land, or
// be reported durable, anywhere else. Checks cannot stop a process that
// may write the directory from changing it between two of them; they make
// sure such a change is not silently taken for a durable write.
//
// Grants and handles are kept in append-only logs of checksummed records
// (see [Dir.Records] for how a damaged last record is treated). Grants
// are loaded when the store opens; handles are read on each [Dir.Records].
// Session directories and logs are never deleted, so a session reopened
// after its grants expired is told [ErrExpired], not [ErrNotFound].
type Dir struct {
	root, bodies, sessions string // paths, for messages
	cfg                    config

	// Directories the Dir works in, opened once; see the type's comment.
	top, bodiesRoot, sessionsRoot *os.Root
	places                        []place // what checkPlaces compares

	// life is held shared by every operation and exclusively by Close.
	life    sync.RWMutex
	closed  bool
	dirLock *os.File // the store directory, locked
	lock    *os.File // LOCK, locked

	mu         sync.Mutex             // guards the fields below
	sess       map[string]*dirSession // by session id
	refs       map[string]int64       // by key: the latest expiry of any grant on it
	damaged    map[string]error       // by session directory name: why its grants could not be read
	lostGrants map[string]int         // by session directory name: lost grant records
	keyLocks   map[string]*keyLock    // by key, while a PutBody or Apply works on it
	temps      map[string]bool        // temporary files being written, by base name
}

// place is a path the store writes through, with the identity it had when
// the store opened.
type place struct {
	path   string
	info   os.FileInfo
	follow bool // a symbolic link may lead to it (the store directory itself)
}

// dirSession is the state of one session of a Dir.
type dirSession struct {
	id     string
	name   string           // of its directory in sessions/
	dir    string           // path of its directory, for messages
	grants map[string]grant // guarded by Dir.mu

	mu       sync.Mutex // serializes appends to the session's logs and guards below
	dirReady bool       // the directory is known to exist
	grantLog logFile
	handles  logFile
}

// logFile is the append state of one session log.
type logFile struct {
	name  string // in the session directory
	path  string // for messages
	kind  byte
	ready bool        // the log starts with the right header and ends at end
	end   int64       // offset just past the last intact record
	info  os.FileInfo // identity of the log that was made ready
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
// if needed, configured by opts ([WithTTL], [WithClock]); without options
// it has their defaults. It fails with an error matching [ErrLocked] when another Dir
// holds dir, and with a plain error when dir holds another store format or
// its FORMAT, LOCK, bodies or sessions is a symbolic link or of the wrong
// type. A session whose grant log is damaged does not stop the store from
// opening: its Body and PutBody fail with [ErrIntegrity], and so does
// [Dir.Plan], which cannot tell what that session still references.
func OpenDir(dir string, opts ...Option) (*Dir, error) {
	cfg := newConfig(opts)
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
	d := &Dir{
		root:       root,
		bodies:     filepath.Join(root, bodiesName),
		sessions:   filepath.Join(root, sessionsName),
		cfg:        cfg,
		sess:       make(map[string]*dirSession),
		refs:       make(map[string]int64),
		damaged:    make(map[string]error),
		lostGrants: make(map[string]int),
		keyLocks:   make(map[string]*keyLock),
		temps:      make(map[string]bool),
	}
	if err := d.init(); err != nil {
		d.release()
		return nil, err
	}
	return d, nil
}

// init locks the directory, checks or creates the format file and
// directories, and loads the grants. On error the caller calls release.
func (d *Dir) init() error {
	var err error
	if d.top, err = os.OpenRoot(d.root); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	topInfo, lockInfo, err := d.lockDir()
	if err != nil {
		return err
	}
	if err := d.checkFormat(); err != nil {
		return err
	}
	if err := d.openLayout(); err != nil {
		return err
	}
	bodiesInfo, err := d.bodiesRoot.Stat(".")
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	sessionsInfo, err := d.sessionsRoot.Stat(".")
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	d.places = []place{
		{path: d.root, info: topInfo, follow: true},
		{path: filepath.Join(d.root, lockName), info: lockInfo},
		{path: d.bodies, info: bodiesInfo},
		{path: d.sessions, info: sessionsInfo},
	}
	return d.loadGrants()
}

// lockDir takes the two locks a Dir holds for its life and returns what the
// directory and LOCK were when locked, for checking later that neither was
// replaced.
func (d *Dir) lockDir() (topInfo, lockInfo fs.FileInfo, err error) {
	// The lock is on the directory itself, so that removing or replacing
	// LOCK cannot let a second Dir in; LOCK is locked too, for stores of
	// older versions, which lock only LOCK.
	if d.dirLock, err = d.top.Open("."); err != nil {
		return nil, nil, fmt.Errorf("store: %w", err)
	}
	if err := lockFile(d.dirLock); err != nil {
		d.dirLock.Close()
		d.dirLock = nil
		return nil, nil, d.lockError(err)
	}
	if topInfo, err = d.dirLock.Stat(); err != nil {
		return nil, nil, fmt.Errorf("store: %w", err)
	}
	lock, lockInfo, err := openCreate(d.top, lockName, os.O_RDWR)
	if err != nil {
		return nil, nil, fmt.Errorf("store: open %s: %w", lockName, err)
	}
	if err := lockFile(lock); err != nil {
		lock.Close()
		return nil, nil, d.lockError(err)
	}
	d.lock = lock
	return topInfo, lockInfo, nil
}

func (d *Dir) lockError(err error) error {
	if errors.Is(err, ErrLocked) {
		return fmt.Errorf("%w: %s", ErrLocked, d.root)
	}
	return fmt.Errorf("store: lock %s: %w", d.root, err)
}

// checkFormat writes the format file of a new store and refuses a store
// whose format file says something else.
func (d *Dir) checkFormat() error {
	f, _, err := openRegular(d.top, formatName, os.O_RDONLY)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return writeFileAtomic(d.top, formatName, []byte(formatText))
	case err != nil:
		return fmt.Errorf("store: open %s: %w", formatName, err)
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(len(formatText))+1))
	f.Close()
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if string(b) != formatText {
		return fmt.Errorf("store: %s holds an unknown store format %q", d.root, jsontext.ClipString(string(b)))
	}
	return nil
}

// openLayout creates the bodies and sessions directories if missing and
// opens them.
func (d *Dir) openLayout() error {
	created := false
	for _, sub := range []string{bodiesName, sessionsName} {
		made, err := ensureDir(d.top, sub)
		if err != nil {
			return err
		}
		created = created || made
	}
	if created {
		if err := syncDir(d.top); err != nil {
			return fmt.Errorf("store: %w", err)
		}
	}
	var err error
	if d.bodiesRoot, err = openSubdir(d.top, bodiesName); err != nil {
		return err
	}
	d.sessionsRoot, err = openSubdir(d.top, sessionsName)
	return err
}

// release closes what init opened, releasing the locks.
func (d *Dir) release() error {
	var errs []error
	for _, r := range []*os.Root{d.bodiesRoot, d.sessionsRoot, d.top} {
		if r != nil {
			errs = append(errs, r.Close())
		}
	}
	for _, f := range []*os.File{d.lock, d.dirLock} {
		if f != nil {
			errs = append(errs, unlockFile(f), f.Close())
		}
	}
	return errors.Join(errs...)
}

// checkPlaces fails with ErrReplaced unless the store directory, LOCK,
// bodies/ and sessions/ are still, at their paths, the ones OpenDir opened
// and locked (LOCK, bodies/ and sessions/ without following a symbolic
// link).
func (d *Dir) checkPlaces() error {
	for _, p := range d.places {
		stat := os.Lstat
		if p.follow {
			stat = os.Stat
		}
		if info, err := stat(p.path); err != nil || !os.SameFile(info, p.info) {
			return fmt.Errorf("%w: %s was removed, moved, replaced or made a symbolic link since the store was opened", ErrReplaced, p.path)
		}
	}
	return nil
}

// ensureDir creates directory name in dir if missing and reports whether
// it did. An existing one must be a real directory, not a symbolic link to
// one.
func ensureDir(dir *os.Root, name string) (bool, error) {
	err := dir.Mkdir(name, 0o700)
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return false, fmt.Errorf("store: %w", err)
	}
	info, err := dir.Lstat(name)
	if err != nil {
		return false, fmt.Errorf("store: %w", err)
	}
	if !info.IsDir() {
		return false, fmt.Errorf("store: %s is not a directory (mode %s)", joinName(dir, name), info.Mode())
	}
	return false, nil
}

// openSubdir opens directory name in dir without following a symbolic link.
// A missing name fails with an error matching fs.ErrNotExist, anything
// but a directory (a symbolic link to one included) with ErrIntegrity.
func openSubdir(dir *os.Root, name string) (*os.Root, error) {
	info, err := dir.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("store: %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("%w: %s is not a directory (mode %s)", ErrIntegrity, joinName(dir, name), info.Mode())
	}
	sub, err := dir.OpenRoot(name)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	if opened, err := sub.Stat("."); err != nil || !os.SameFile(info, opened) {
		sub.Close()
		return nil, fmt.Errorf("%w: %s was replaced while being opened", ErrIntegrity, joinName(dir, name))
	}
	return sub, nil
}

// joinName is the path of name in dir, for messages.
func joinName(dir *os.Root, name string) string { return filepath.Join(dir.Name(), name) }

// writeFileAtomic writes file name in dir through a temporary file, so
// that name is either absent or whole.
func writeFileAtomic(dir *os.Root, name string, data []byte) error {
	tmp, tmpName, err := createTemp(dir)
	if err != nil {
		return fmt.Errorf("store: write %s: %w", name, err)
	}
	err = writeSyncClose(tmp, data)
	if err == nil {
		err = dir.Rename(tmpName, name)
	}
	if err != nil {
		dir.Remove(tmpName)
	} else {
		err = syncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("store: write %s: %w", name, err)
	}
	return nil
}

// createTemp creates a new temporary file in dir, named TempPrefix and a
// random suffix, mode 0600, open for reading and writing.
func createTemp(dir *os.Root) (*os.File, string, error) {
	for try := 0; ; try++ {
		name := TempPrefix + strconv.FormatUint(rand.Uint64(), 36)
		f, err := dir.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) && try < 100 {
			continue
		}
		return f, name, err
	}
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
	entries, err := readDirNames(d.sessionsRoot)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if CheckKey(name) != nil || e.Type() != fs.ModeDir {
			continue // not ours: Plan reports it
		}
		var st logState
		dir, err := openSubdir(d.sessionsRoot, name)
		if err == nil {
			st, err = readLog(dir, grantsLog, logGrants)
			dir.Close()
		}
		if err == nil && st.session != "" && sessionName(st.session) != name {
			err = fmt.Errorf("%w: log of session %q is in the directory of another", ErrIntegrity, st.session)
		}
		if err != nil {
			d.damaged[name] = err
			continue
		}
		lost := st.lost()
		if st.session == "" {
			if lost > 0 {
				d.lostGrants[name] = lost
			}
			continue // no grants yet; the session's state is made on first use
		}
		grants, _, err := decodeGrants(st.payloads)
		if err != nil {
			d.damaged[name] = err
			continue
		}
		if lost > 0 {
			d.lostGrants[name] = lost
		}
		s := d.newSession(st.session)
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

// readDirNames lists directory dir.
func readDirNames(dir *os.Root) ([]fs.DirEntry, error) {
	f, err := dir.Open(".")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
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
		name:     sessionName(id),
		dir:      dir,
		grants:   make(map[string]grant),
		grantLog: logFile{name: grantsLog, path: filepath.Join(dir, grantsLog), kind: logGrants},
		handles:  logFile{name: handlesLog, path: filepath.Join(dir, handlesLog), kind: logHandles},
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

// PutBody stores body and grants session read access to it for the
// store's TTL ([WithTTL]), counted from now. It returns the body's key,
// [KeyOf](body). Storing bytes that are already stored writes no second
// copy; it only records the grant (a PutBody by a session that already
// holds a grant on the body renews it). An empty body is a valid body.
// PutBody does not modify body.
//
// A key is only ever returned for a body that is durable (fsynced and
// renamed into place) and a grant that is recorded (fsynced); on any error
// the key is "" and the caller must assume nothing was granted. It fails
// with an error matching [ErrInvalidSession] for a malformed session id,
// [ErrIntegrity] for a session whose grant log is damaged, [ErrClosed]
// after Close, and [ErrReplaced] when a file or directory it would write
// through is no longer the one the store opened (see [Dir]); the body may
// then have been written, but no key is returned.
func (d *Dir) PutBody(session string, body []byte) (string, error) {
	if err := CheckSession(session); err != nil {
		return "", err
	}
	key := KeyOf(body)
	g := d.cfg.newGrant(d.cfg.now(), len(body))
	if err := d.begin(); err != nil {
		return "", err
	}
	defer d.end()
	if err := d.damagedErr(session); err != nil {
		return "", err
	}
	if err := d.checkPlaces(); err != nil {
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

// lockKey serializes the calls of PutBody and Apply that work on key.
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
// holds the key's lock. A body it wrote is checked to be in the store's
// own bodies/ afterwards (ErrReplaced otherwise).
func (d *Dir) storeBody(key string, body []byte) error {
	same, err := sameContent(d.bodiesRoot, key, body)
	if err != nil {
		return fmt.Errorf("store: check body %s: %w", key, err)
	}
	if same {
		return nil
	}
	d.mu.Lock() // so that Plan never sees the temp file unregistered
	tmp, name, err := createTemp(d.bodiesRoot)
	if err == nil {
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
		err = d.bodiesRoot.Rename(name, key)
	}
	if err != nil {
		d.bodiesRoot.Remove(name)
		return fmt.Errorf("store: write body %s: %w", key, err)
	}
	if err := syncDir(d.bodiesRoot); err != nil {
		return fmt.Errorf("store: write body %s: %w", key, err)
	}
	if err := d.checkPlaces(); err != nil {
		return fmt.Errorf("%w; body %s is not durable in the store", err, key)
	}
	return nil
}

// sameContent reports whether name in dir is a regular file holding
// exactly body. A missing file, a symbolic link or a file with other bytes
// is not the same; errors reading an existing file are returned. It reads
// at most len(body)+1 bytes.
func sameContent(dir *os.Root, name string, body []byte) (bool, error) {
	info, err := dir.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !info.Mode().IsRegular() || info.Size() != int64(len(body)) {
		return false, nil
	}
	f, err := dir.Open(name)
	if err != nil {
		return false, err
	}
	defer f.Close()
	if opened, err := f.Stat(); err != nil || !os.SameFile(info, opened) {
		return false, err
	}
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
// on key that lasts at least as long and records the body's size.
func (d *Dir) addGrant(s *dirSession, key string, g grant) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	d.mu.Lock()
	old, ok := s.grants[key]
	d.mu.Unlock()
	if ok && old.expires >= g.expires && old.size != unknownSize {
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

// Body returns a copy of the body stored under key, which the caller may
// modify. It fails with an error matching [ErrInvalidSession] or
// [ErrInvalidKey] for a malformed argument, [ErrNotFound] when no body and
// no grant exist for key, [ErrDenied] when key exists but session never
// stored it, [ErrExpired] when session's grant has run out (whether or not
// the body is still on disk), [ErrIntegrity] when the stored bytes do not
// hash to key, their size is not the one recorded with the grant, or the
// body of a live grant is missing, and [ErrClosed] after Close. A body
// that fails its check is never returned.
//
// Each call checks the body's size against the size recorded with the
// session's grant before reading anything, so a body of another size (a
// huge sparse file included) fails with [ErrIntegrity] without being read,
// and reads at most that size plus one byte; it then checks the bytes'
// SHA-256 before returning them. For a grant recorded without a size (by
// an older version), Body first hashes the file in fixed-size pieces and
// reads it into memory only if it matches key, so memory stays bounded
// there too, though time grows with the file's size.
//
// A session whose grant log lost a record (see [Dir.Records] for when a
// record counts as lost) gets [ErrIntegrity] rather than [ErrDenied] or
// [ErrNotFound] for a key it holds no grant on, since the lost record may
// have been that grant.
func (d *Dir) Body(session, key string) ([]byte, error) {
	if err := CheckSession(session); err != nil {
		return nil, err
	}
	path, err := bodyPath(d.root, key)
	if err != nil {
		return nil, err
	}
	name := filepath.Base(path)
	t := d.cfg.now().UnixNano()
	if err := d.begin(); err != nil {
		return nil, err
	}
	defer d.end()
	g, granted, referenced, lost, err := d.grantOf(session, key)
	if err != nil {
		return nil, err
	}
	if !granted {
		if lost > 0 {
			return nil, fmt.Errorf("%w: session %q holds no grant on %s, and its grant log lost %d record(s), which may have held one", ErrIntegrity, session, key, lost)
		}
		if _, err := d.bodiesRoot.Lstat(name); referenced || err == nil {
			return nil, fmt.Errorf("%w: session %q did not store %s", ErrDenied, session, key)
		}
		return nil, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	if !live(g.expires, t) {
		return nil, expiredError(session, key, g)
	}
	body, err := readBody(d.bodiesRoot, key, g.size)
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

// grantOf returns session's grant on key, whether any session holds one,
// and how many grant records session lost.
func (d *Dir) grantOf(session, key string) (g grant, granted, referenced bool, lost int, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	name := sessionName(session)
	if err := d.damaged[name]; err != nil {
		return grant{}, false, false, 0, fmt.Errorf("%w (session %q)", err, session)
	}
	if s := d.sess[session]; s != nil {
		g, granted = s.grants[key]
	}
	_, referenced = d.refs[key]
	return g, granted, referenced, d.lostGrants[name], nil
}

func expiredError(session, key string, g grant) error {
	return fmt.Errorf("%w: grant of session %q on %s ran out at %s", ErrExpired, session, key, time.Unix(0, g.expires).UTC().Format(time.RFC3339))
}

// hashPiece is the buffer size readBody hashes an unsized body with.
const hashPiece = 256 << 10

// readBody reads the regular file key in dir and returns its bytes if
// there are size of them (any number when size is unknownSize) and they
// hash to key. It checks the size before reading and never reads more
// than size+1 bytes. Any other content fails with ErrIntegrity; a missing
// file fails with an error matching fs.ErrNotExist.
func readBody(dir *os.Root, key string, size int64) ([]byte, error) {
	f, info, err := openRegular(dir, key, os.O_RDONLY)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrIntegrity) {
			return nil, err
		}
		return nil, fmt.Errorf("store: read body %s: %w", key, err)
	}
	defer f.Close()
	n := info.Size()
	switch {
	case size != unknownSize && n != size:
		return nil, fmt.Errorf("%w: body %s has %d bytes, its grant records %d", ErrIntegrity, key, n, size)
	case n < 0 || uint64(n) >= uint64(maxInt):
		return nil, fmt.Errorf("%w: body %s has size %d", ErrIntegrity, key, n)
	case size == unknownSize:
		// Hash it before holding it: only bytes that match are read whole.
		h := sha256.New()
		if _, err := io.CopyBuffer(h, io.NewSectionReader(f, 0, n+1), make([]byte, hashPiece)); err != nil {
			return nil, fmt.Errorf("store: read body %s: %w", key, err)
		}
		if hex.EncodeToString(h.Sum(nil)) != key {
			return nil, fmt.Errorf("%w: body %s does not match its key", ErrIntegrity, key)
		}
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(f, body); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: body %s shrank while being read", ErrIntegrity, key)
		}
		return nil, fmt.Errorf("store: read body %s: %w", key, err)
	}
	if m, _ := f.Read(make([]byte, 1)); m != 0 {
		return nil, fmt.Errorf("%w: body %s grew while being read", ErrIntegrity, key)
	}
	if KeyOf(body) != key {
		return nil, fmt.Errorf("%w: body %s does not match its key", ErrIntegrity, key)
	}
	return body, nil
}

const maxInt = int(^uint(0) >> 1)

// AppendRecord appends rec to session's handle table, and fsyncs it
// before returning: after a crash, Records returns every record whose
// AppendRecord returned nil, and each record is either whole or lost. The
// table is append-only; the store does not interpret records, so a later
// record with the same Handle is simply another record.
//
// A rec that breaks a limit ([MaxHandleLen], [MaxKindLen], [MaxMetaSize]),
// has an empty Handle (a lost record is never appended) or a Key that is
// neither "" nor valid fails with an error matching [ErrInvalidRecord] and
// appends nothing; a malformed session id fails with [ErrInvalidSession],
// and a closed store with [ErrClosed]. It fails with [ErrReplaced] when
// the session's log or a directory above it is no longer the one the
// store opened (see [Dir]), and with [ErrIntegrity] when the log is
// damaged before its last record; a damaged last record it replaces with
// a lost record first (see [Dir.Records]).
func (d *Dir) AppendRecord(session string, rec values.Record) error {
	if err := CheckSession(session); err != nil {
		return err
	}
	if err := CheckRecord(rec); err != nil {
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

// Records returns session's handle records in append order, nil for a
// session that never appended one. It reads the session's handle log from
// disk on every call.
//
// A record is never dropped silently: one the store can no longer read
// back (the last record of the log, torn by a crash during its append or
// damaged later; the two cannot be told apart), and each lost record an
// append wrote in place of one before, is returned as a lost record, the
// zero [values.Record] ([values.Record.Lost]), at its place in the order;
// the handle it held is unknown. A log whose header itself is damaged
// reads as one lost record, since it may have held any. Damage anywhere
// before the last record fails the call with [ErrIntegrity] and returns no
// records, and so does a log or session directory that is a symbolic link
// or a log of another session. A malformed session id fails with
// [ErrInvalidSession], a closed store with [ErrClosed].
//
// The records of one call share their memory: the Meta of all of them are
// slices of one buffer, so keeping one record keeps the whole log in
// memory. An empty Meta reads back as nil. The caller may modify them.
func (d *Dir) Records(session string) ([]values.Record, error) {
	if err := CheckSession(session); err != nil {
		return nil, err
	}
	if err := d.begin(); err != nil {
		return nil, err
	}
	defer d.end()
	s := d.session(session)
	s.mu.Lock()
	st, err := d.readSessionLog(s, &s.handles)
	s.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("%w (session %q)", err, session)
	}
	if st.session != "" && st.session != session {
		return nil, fmt.Errorf("%w: handle log of session %q holds session %q", ErrIntegrity, session, st.session)
	}
	recs, err := handleRecords(st)
	if err != nil {
		return nil, fmt.Errorf("%w (session %q)", err, session)
	}
	return recs, nil
}

// readSessionLog reads the log lf of session s; a missing session
// directory reads as a missing log.
func (d *Dir) readSessionLog(s *dirSession, lf *logFile) (logState, error) {
	if _, err := d.sessionsRoot.Lstat(s.name); errors.Is(err, fs.ErrNotExist) {
		return logState{}, nil
	}
	dir, err := openSubdir(d.sessionsRoot, s.name)
	if err != nil {
		return logState{}, err
	}
	defer dir.Close()
	return readLog(dir, lf.name, lf.kind)
}

// Close waits for operations in progress and releases the store and the
// directory's locks. Later calls fail with [ErrClosed]; Close itself may
// be called more than once and returns nil after the first.
func (d *Dir) Close() error {
	d.life.Lock()
	defer d.life.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	if err := d.release(); err != nil {
		return fmt.Errorf("store: close: %w", err)
	}
	return nil
}
