package values

import (
	"fmt"

	"github.com/agentvalues/values/internal/jsontext"
)

// Open returns a store whose values outlive the process: every value is
// persisted through d under the session id session, and the session's
// recorded handles, if any, are there again. A session without records
// opens empty, so Open both starts a session and continues one. opts
// configure the store as for [New]. A nil d gives a store in memory only,
// as New does. At most one SessionValues may write a session at a time.
//
// Each Put, PutOutput and Observe stores the value's bytes with
// [Durable.PutBody] and then appends its handle record with
// [Durable.AppendRecord], before returning. Records are appended in handle
// order: a Put waits for the records of earlier handles, though bodies are
// written concurrently. A store failure never fails a Put: the value stays
// in memory for the life of the SessionValues (never dropped by
// [WithMemoryLimit]), the failure goes to the [WithStoreErrors] callback,
// and [SessionValues.Persisted] reports false for the handle. For a body
// that failed, a record without a key is still appended, so that a
// reopened session knows the handle was handed out and never hands its
// number out again; a handle whose record append failed is not in the
// table at all. Either way the handle is unknown to a later Open.
//
// Open reads the records only, never a body: each value's preview, kind,
// length, lines, size, digest and content type come from its record, and
// its bytes are read back on first use (by [Value.JSON], a reference, a
// read). A value within the memory limit ([WithMemoryLimit]) is then kept
// in memory; a larger one is held only until another larger one is read
// back. [RenderPreview] returns the preview recorded when the value was
// stored, unless it is asked for another handle or is longer than the
// store's preview bound: only then does it read the body to render a new
// one.
//
// A new session (one without records) hands out its first handle as New
// does ([WithFirstHandle], else r1); handles of a session with records go
// on after the highest recorded one, so no recorded handle is ever handed
// out again, and those below its lowest recorded one name nothing. A record appended twice (the same handle, key,
// kind and size) counts once. A lost record ([Record.Lost]) stands for the
// handle after the highest one recorded before it. A handle recorded
// without a body, lost, or never recorded is unknown after Open
// ([SessionValues.Get] reports false, a reference to it is unresolved with
// [ErrUnknownHandle], and [SessionValues.Len] and [SessionValues.Handles]
// leave it out). Only when the store failed to append even a record
// without a body for the last handles before the process ended can their
// numbers be handed out again.
//
// Open fails with the error of [Durable.Records], and with an error for a
// record it did not write: a handle not of the form r1, r2, …, two
// different records for one handle, an unknown kind, malformed Meta, or a
// handle number more than 2^20 plus the number of records past the lowest
// one recorded (a handle lacks a record only when the store failed to
// append it, so a real session stays far below that).
func Open(d Durable, session string, opts ...Option) (*SessionValues, error) {
	s := New(opts...)
	if d == nil {
		return s, nil
	}
	s.dur = newDurability(d, session, &s.cfg)
	recs, err := d.Records(session)
	if err != nil {
		return nil, fmt.Errorf("values: opening session %q: %w", session, err)
	}
	if len(recs) == 0 {
		return s, nil // a new session: its first handle is WithFirstHandle's
	}
	// The records number the handles: the session's first recorded
	// handle is its first (a session started past r1 by WithFirstHandle
	// has no records below it).
	nums, base, top, err := recordNumbers(recs)
	if err != nil {
		return nil, fmt.Errorf("values: opening session %q: %w", session, err)
	}
	s.base = base
	table := make([]slot, top-base)
	first := make([]int, top-base) // index+1 in recs of the first record of each handle
	for i := range recs {
		r, n := &recs[i], nums[i]-base
		if j := first[n-1]; j != 0 {
			if p := &recs[j-1]; p.Key != r.Key || p.Kind != r.Kind || p.Size != r.Size {
				return nil, fmt.Errorf("values: opening session %q: handle %s is recorded twice, differently (records %d and %d); was the session written by two stores at once?", session, handleName(base+n), j-1, i)
			}
			continue // the same record appended again
		}
		first[n-1] = i + 1
		if r.Key == "" { // a handle recorded without a body, or lost
			continue
		}
		x, err := s.fromRecord(r)
		if err != nil {
			return nil, fmt.Errorf("values: opening session %q: record %d (%s): %w", session, i, r.Handle, err)
		}
		table[n-1] = slot{v: x, stored: true}
	}
	for i := range table {
		if table[i].v == nil {
			table[i].v = lostValue
			s.lost++
		}
	}
	s.table, s.dur.next = slotsOf(table), top-base+1
	return s, nil
}

// recordNumbers returns the handle number of each record, a lost record
// taking the one after the highest before it; the numbers before the
// lowest handle recorded (base); and the highest of all.
func recordNumbers(recs []Record) (nums []int, base, top int, err error) {
	nums = make([]int, len(recs))
	low := 0
	for i := range recs {
		if recs[i].Lost() {
			continue
		}
		n, ok := parseHandle(recs[i].Handle)
		if !ok {
			return nil, 0, 0, fmt.Errorf("record %d: %q is not a handle r1, r2, …", i, jsontext.ClipString(recs[i].Handle))
		}
		nums[i] = n
		if low == 0 || n < low {
			low = n
		}
	}
	if low > 0 {
		base = low - 1
	}
	top = base
	for i := range recs {
		if recs[i].Lost() {
			top++
			nums[i] = top
			continue
		}
		if nums[i]-base > len(recs)+maxUnrecorded {
			return nil, 0, 0, fmt.Errorf("record %d: handle %s is more than %d past the %d records from %s; a record was damaged or not written by this package", i, recs[i].Handle, maxUnrecorded, len(recs), handleName(base+1))
		}
		top = max(top, nums[i])
	}
	return nums, base, top, nil
}

// maxUnrecorded is how many handles of a session may lack a record for
// [Open] to accept it: a handle number more than maxUnrecorded past the
// number of records is taken for a damaged or foreign record, and Open
// fails. A handle lacks a record only when the store failed to append it
// (see [Open]), so a real session stays far below this. Open
// allocates about 17 bytes for every handle number up to the highest, so
// the bound keeps what one bad record can make it allocate to about 17 MiB
// beyond what the records take already.
const maxUnrecorded = 1 << 20
