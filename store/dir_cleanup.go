package store

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"
)

// Plan implements [Cleaner.Plan]. It reads the store directory, bodies/
// and sessions/ that OpenDir opened (never following a symbolic link, and
// whatever their paths name now) and changes nothing; it
// reads each file it lists for deletion whole, to record its digest. It
// lists for deletion the bodies that no grant live at now references and
// the abandoned temporary files ([TempPrefix]) in the store directory and
// bodies/; everything else it does not own, and every symbolic link, goes
// to Keep. Session directories and logs are never listed for deletion.
// While the grant log of a session is damaged Plan fails with
// [ErrIntegrity] and plans nothing, since it cannot tell what that session
// still references. A grant lost to a damaged last record (see [Dir.Body])
// no longer keeps its body, since no one can tell which body it named;
// reading that body back with Body by its session then fails with
// ErrIntegrity.
func (d *Dir) Plan(now time.Time) (Plan, error) {
	if err := d.begin(); err != nil {
		return Plan{}, err
	}
	defer d.end()
	if err := d.anyDamaged(); err != nil {
		return Plan{}, fmt.Errorf("store: cannot plan a cleanup: %w", err)
	}
	p := Plan{Now: now}
	for _, step := range []func(*Plan) error{d.planRoot, d.planBodies, d.planSessions} {
		if err := step(&p); err != nil {
			return Plan{}, fmt.Errorf("store: plan: %w", err)
		}
	}
	sort.Slice(p.Delete, func(i, j int) bool { return p.Delete[i].Name < p.Delete[j].Name })
	sort.Slice(p.Keep, func(i, j int) bool { return p.Keep[i].Name < p.Keep[j].Name })
	return p, nil
}

// anyDamaged returns one of the errors of damaged session grant logs.
func (d *Dir) anyDamaged() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	names := make([]string, 0, len(d.damaged))
	for name := range d.damaged {
		names = append(names, name)
	}
	if len(names) == 0 {
		return nil
	}
	sort.Strings(names)
	return fmt.Errorf("%w (session directory %s)", d.damaged[names[0]], names[0])
}

// entry is a directory entry with its Lstat information.
type entry struct {
	name string
	info os.FileInfo
}

// readEntries lists dir with Lstat information. Entries that vanish while
// being listed are left out.
func readEntries(dir *os.Root) ([]entry, error) {
	des, err := readDirNames(dir)
	if err != nil {
		return nil, err
	}
	es := make([]entry, 0, len(des))
	for _, de := range des {
		info, err := dir.Lstat(de.Name())
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		es = append(es, entry{de.Name(), info})
	}
	return es, nil
}

func (d *Dir) planRoot(p *Plan) error {
	es, err := readEntries(d.top)
	if err != nil {
		return err
	}
	for _, e := range es {
		switch {
		case (e.name == formatName || e.name == lockName) && e.info.Mode().IsRegular():
		case (e.name == bodiesName || e.name == sessionsName) && e.info.IsDir():
		case e.name == formatName || e.name == lockName || e.name == bodiesName || e.name == sessionsName:
			p.keep(e, e.name, wrongType(e.info))
		default:
			if err := d.planOther(p, d.top, e.name, e); err != nil {
				return err
			}
		}
	}
	return nil
}

func (d *Dir) planBodies(p *Plan) error {
	es, err := readEntries(d.bodiesRoot)
	if err != nil {
		return err
	}
	t := p.Now.UnixNano()
	for _, e := range es {
		name := bodiesName + "/" + e.name
		if CheckKey(e.name) != nil {
			if err := d.planOther(p, d.bodiesRoot, name, e); err != nil {
				return err
			}
			continue
		}
		if !e.info.Mode().IsRegular() {
			p.keep(e, name, wrongType(e.info))
			continue
		}
		d.mu.Lock()
		expires, referenced := d.refs[e.name]
		busy := d.keyLocks[e.name] != nil
		d.mu.Unlock()
		reason := ReasonUnreferenced
		switch {
		case busy:
			p.keep(e, name, ReasonInUse)
			continue
		case referenced && live(expires, t):
			p.Retained++
			continue
		case referenced:
			reason = ReasonExpired
		}
		sn := snapshot{owner: d, name: name, key: e.name, dir: d.bodiesRoot, file: e.name}
		if err := d.planDelete(p, sn, e.info, reason); err != nil {
			return err
		}
	}
	return nil
}

// planDelete adds the file of sn, last seen as info, to p.Delete with its
// digest. A file that is gone or replaced by now is left out.
func (d *Dir) planDelete(p *Plan, sn snapshot, info os.FileInfo, r Reason) error {
	digest, err := fileDigest(sn.dir, sn.file, info)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errReplaced) {
		return nil
	}
	if err != nil {
		return err
	}
	sn.info, sn.size, sn.digest = info, info.Size(), digest
	p.Delete = append(p.Delete, planned(sn, r))
	return nil
}

var errReplaced = errors.New("store: file replaced")

// fileDigest returns the SHA-256 of file name in dir, which must still be
// the file described by info.
func fileDigest(dir *os.Root, name string, info os.FileInfo) ([32]byte, error) {
	f, err := dir.Open(name)
	if err != nil {
		return [32]byte{}, err
	}
	defer f.Close()
	opened, err := f.Stat()
	if err != nil {
		return [32]byte{}, err
	}
	if !os.SameFile(info, opened) {
		return [32]byte{}, errReplaced
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return [32]byte{}, err
	}
	return [32]byte(h.Sum(nil)), nil
}

// planOther plans an entry of dir whose name is not one the store gives
// its files: an abandoned temporary file or something foreign.
func (d *Dir) planOther(p *Plan, dir *os.Root, name string, e entry) error {
	if !strings.HasPrefix(e.name, TempPrefix) || !e.info.Mode().IsRegular() {
		reason := ReasonForeign
		if e.info.Mode()&fs.ModeSymlink != 0 {
			reason = ReasonSymlink
		}
		p.keep(e, name, reason)
		return nil
	}
	d.mu.Lock()
	busy := dir == d.bodiesRoot && d.temps[e.name]
	d.mu.Unlock()
	if busy {
		p.keep(e, name, ReasonInUse)
		return nil
	}
	return d.planDelete(p, snapshot{owner: d, name: name, temp: true, dir: dir, file: e.name}, e.info, ReasonAbandonedTemp)
}

func (d *Dir) planSessions(p *Plan) error {
	es, err := readEntries(d.sessionsRoot)
	if err != nil {
		return err
	}
	for _, e := range es {
		name := sessionsName + "/" + e.name
		switch {
		case e.info.Mode()&fs.ModeSymlink != 0:
			p.keep(e, name, ReasonSymlink)
		case CheckKey(e.name) != nil:
			p.keep(e, name, ReasonForeign)
		case !e.info.IsDir():
			p.keep(e, name, ReasonNotRegular)
		default:
			dir, err := openSubdir(d.sessionsRoot, e.name)
			if err != nil {
				return err
			}
			inner, err := readEntries(dir)
			dir.Close()
			if err != nil {
				return err
			}
			for _, f := range inner {
				fname := name + "/" + f.name
				switch {
				case (f.name == grantsLog || f.name == handlesLog) && f.info.Mode().IsRegular():
				case f.name == grantsLog || f.name == handlesLog:
					p.keep(f, fname, wrongType(f.info))
				case f.info.Mode()&fs.ModeSymlink != 0:
					p.keep(f, fname, ReasonSymlink)
				default:
					p.keep(f, fname, ReasonForeign)
				}
			}
		}
	}
	return nil
}

// wrongType is the reason to keep an entry with a store name but the
// wrong file type.
func wrongType(info os.FileInfo) Reason {
	if info.Mode()&fs.ModeSymlink != 0 {
		return ReasonSymlink
	}
	return ReasonNotRegular
}

func (p *Plan) keep(e entry, name string, r Reason) {
	p.Keep = append(p.Keep, Item{Name: name, Size: e.info.Size(), Reason: r})
}

// Apply implements [Cleaner.Apply]. For each item of p.Delete it checks
// again, holding the lock PutBody takes for the same key, that no grant
// on the body is live at the earlier of p.Now and the clock (so a grant
// renewed since the plan keeps the body), that a temporary file is not
// being written, and that the file is the one the plan saw: same file identity,
// size, mode, modification time and SHA-256 of its bytes (so Apply reads
// each file again). Only then does it remove the file;
// otherwise it skips the item with the reason. A failed removal skips the
// item with ReasonFailed and is reported in the returned error, which joins
// all such failures; Apply still goes on with the other items.
func (d *Dir) Apply(p Plan) (Report, error) {
	t := applyTime(p, d.cfg.now())
	if err := d.begin(); err != nil {
		return Report{}, err
	}
	defer d.end()
	var (
		r     Report
		errs  []error
		dirty = make(map[*os.Root]bool) // directories to fsync
	)
	for _, it := range p.Delete {
		it = it.asPlanned()
		reason, err := d.applyItem(it.snap, t)
		if err != nil {
			errs = append(errs, err)
		}
		if reason != 0 {
			it.Reason = reason
			r.Skipped = append(r.Skipped, it)
			continue
		}
		r.Deleted = append(r.Deleted, it)
		dirty[it.snap.dir] = true
	}
	for dir := range dirty {
		if err := syncDir(dir); err != nil {
			errs = append(errs, fmt.Errorf("store: %w", err))
		}
	}
	return r, errors.Join(errs...)
}

// applyItem deletes the planned file of sn if it still qualifies, or
// returns why not.
func (d *Dir) applyItem(sn snapshot, t int64) (Reason, error) {
	if sn.owner != d || sn.info == nil {
		return ReasonNotPlanned, nil
	}
	name := sn.file
	if sn.temp {
		d.mu.Lock()
		busy := d.temps[name]
		d.mu.Unlock()
		if busy {
			return ReasonInUse, nil
		}
		return removeSame(sn)
	}
	unlock := d.lockKey(name)
	defer unlock()
	d.mu.Lock()
	expires, referenced := d.refs[name]
	d.mu.Unlock()
	if referenced && live(expires, t) {
		return ReasonReferenced, nil
	}
	return removeSame(sn)
}

// removeSame removes the file of sn if it is still the file the plan saw.
func removeSame(sn snapshot) (Reason, error) {
	info, err := sn.dir.Lstat(sn.file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return ReasonGone, nil
	case err != nil:
		return ReasonFailed, fmt.Errorf("store: %w", err)
	case !os.SameFile(info, sn.info) || info.Size() != sn.info.Size() || info.Mode() != sn.info.Mode() || !info.ModTime().Equal(sn.info.ModTime()):
		return ReasonChanged, nil
	}
	switch digest, err := fileDigest(sn.dir, sn.file, info); {
	case errors.Is(err, fs.ErrNotExist):
		return ReasonGone, nil
	case errors.Is(err, errReplaced) || err == nil && digest != sn.digest:
		return ReasonChanged, nil
	case err != nil:
		return ReasonFailed, fmt.Errorf("store: %w", err)
	}
	if err := sn.dir.Remove(sn.file); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return ReasonGone, nil
		}
		return ReasonFailed, fmt.Errorf("store: %w", err)
	}
	return 0, nil
}
