package store

import (
	"os"
	"strconv"
	"time"
)

// Plan is the report of [Cleaner.Plan]: what a cleanup would delete and
// what it refuses to touch. It is only meaningful to the store that made
// it; [Cleaner.Apply] on another store deletes nothing.
type Plan struct {
	// Now is the time the plan was made for.
	Now time.Time
	// Delete lists, sorted by Name, what Apply would delete: bodies whose
	// grants have all expired (ReasonExpired), bodies no session holds a
	// grant on (ReasonUnreferenced) and temporary files left by interrupted
	// writes (ReasonAbandonedTemp). Removing an item from this slice keeps
	// Apply from deleting it; editing an item's fields has no effect.
	Delete []Item
	// Keep lists, sorted by Name, what the store found and will not delete,
	// with the reason: files it does not own (ReasonForeign), symbolic
	// links (ReasonSymlink), directories and other non-regular files where
	// a file was expected (ReasonNotRegular), and files being written right
	// now (ReasonInUse).
	Keep []Item
	// Retained counts the bodies kept because a grant on them is live.
	Retained int
}

// Report is the result of [Cleaner.Apply].
type Report struct {
	// Deleted lists the plan items Apply deleted, in plan order.
	Deleted []Item
	// Skipped lists the plan items Apply left alone, in plan order, each
	// with Reason set to why: ReasonReferenced, ReasonChanged, ReasonGone,
	// ReasonInUse, ReasonNotPlanned or ReasonFailed.
	Skipped []Item
}

// Item is one file or body found by a cleanup.
type Item struct {
	// Name is the item's slash-separated path relative to the store root,
	// such as "bodies/<key>" (a Memory store names its bodies the same way).
	Name string
	// Key is the body's key, or "" for an item that is not a body.
	Key string
	// Size is the item's size in bytes when it was planned.
	Size int64
	// Reason says why the item is listed.
	Reason Reason

	snap snapshot // what Apply checks again; zero for an item Plan did not make
}

// snapshot is what Plan saw of an item, for Apply to check again.
type snapshot struct {
	owner     any // the store that made the plan
	name, key string
	size      int64
	reason    Reason
	temp      bool
	dir       *os.Root    // Dir: the directory of the file to delete
	file      string      // Dir: the file's name in dir
	info      os.FileInfo // Dir: Lstat of the file
	digest    [32]byte    // Dir: SHA-256 of the file's bytes
	gen       uint64      // Memory: generation of the body
}

// planned returns an item of a plan made by owner.
func planned(sn snapshot, r Reason) Item {
	sn.reason = r
	return Item{Name: sn.name, Key: sn.key, Size: sn.size, Reason: r, snap: sn}
}

// asPlanned returns it as its plan made it, undoing edits of its fields.
func (it Item) asPlanned() Item {
	if it.snap.owner == nil {
		return it
	}
	return planned(it.snap, it.snap.reason)
}

// Reason says why a cleanup lists an item. The zero Reason is not used.
type Reason int

// Reasons. The first three say why Plan would delete an item; the next four
// why Plan refuses to; the rest why Apply left a planned item alone.
const (
	// ReasonExpired: every grant on the body expired before the plan's time.
	ReasonExpired Reason = iota + 1
	// ReasonUnreferenced: no session holds a grant on the body (for example
	// a crash came between writing the body and recording its grant).
	ReasonUnreferenced
	// ReasonAbandonedTemp: a TempPrefix file no write of this store is using.
	ReasonAbandonedTemp
	// ReasonForeign: a name this store never creates. Never deleted.
	ReasonForeign
	// ReasonSymlink: a symbolic link. Never deleted and never followed.
	ReasonSymlink
	// ReasonNotRegular: a directory, device, pipe or socket where the store
	// expects a regular file, or a regular file where it expects a
	// directory. Never deleted.
	ReasonNotRegular
	// ReasonInUse: the body or temp file is being written right now.
	ReasonInUse
	// ReasonReferenced: a live grant on the body appeared after the plan.
	ReasonReferenced
	// ReasonChanged: the file's identity, size, mode or modification time
	// differs from what the plan saw.
	ReasonChanged
	// ReasonGone: the item no longer exists.
	ReasonGone
	// ReasonNotPlanned: the item was not made by Plan of this store.
	ReasonNotPlanned
	// ReasonFailed: removing the item failed; Apply's error says why.
	ReasonFailed
)

var reasonNames = [...]string{
	ReasonExpired:       "expired",
	ReasonUnreferenced:  "unreferenced",
	ReasonAbandonedTemp: "abandoned-temp",
	ReasonForeign:       "foreign",
	ReasonSymlink:       "symlink",
	ReasonNotRegular:    "not-regular",
	ReasonInUse:         "in-use",
	ReasonReferenced:    "referenced",
	ReasonChanged:       "changed",
	ReasonGone:          "gone",
	ReasonNotPlanned:    "not-planned",
	ReasonFailed:        "failed",
}

// String returns the reason as a short lowercase word such as "expired",
// or "reason(N)" for a value that is not one of the constants. The words
// are stable.
func (r Reason) String() string {
	if r > 0 && int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return "reason(" + strconv.Itoa(int(r)) + ")"
}

// applyTime is the time Apply checks grants at: the earlier of the plan's
// time and the clock, so that a plan made for a future time never deletes
// a body whose grant is live today.
func applyTime(p Plan, now time.Time) int64 {
	if p.Now.Before(now) {
		return p.Now.UnixNano()
	}
	return now.UnixNano()
}
