package mcpproxy

import (
	"context"
	"sync/atomic"
	"testing"
)

// TestLaneBounded: a lane whose writer is held holds at most maxLaneNotes
// notes and maxLaneBytes bytes (but always one note, whatever its size),
// drops and counts the rest without waiting, and writes what it holds once
// the writer goes on.
func TestLaneBounded(t *testing.T) {
	ss := liveSessions(t, 1)[0]
	newLane := func() (*lane, chan struct{}, *atomic.Int64) {
		l := &lane{ss: ss, ctx: context.WithValue(context.Background(), ownWriteKey{}, true)}
		held, sent := make(chan struct{}), &atomic.Int64{}
		l.push(note{size: 1, send: func(context.Context) { <-held; sent.Add(1) }})
		waitFor(t, func() bool { // the writer took it and waits
			l.mu.Lock()
			defer l.mu.Unlock()
			return len(l.q) == 0
		})
		return l, held, sent
	}
	state := func(l *lane) (queued, bytes, dropped int) {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.q), l.bytes, l.dropped
	}

	t.Run("notes", func(t *testing.T) {
		l, held, sent := newLane()
		for range maxLaneNotes + 10 {
			if !l.push(note{size: 1, send: func(context.Context) { sent.Add(1) }}) {
				t.Fatal("a lane that takes notes refused one")
			}
		}
		if q, _, d := state(l); q != maxLaneNotes || d != 10 {
			t.Errorf("after %d notes to a held lane: %d queued, %d dropped; want %d and 10", maxLaneNotes+10, q, d, maxLaneNotes)
		}
		close(held)
		l.flush(context.Background())
		if n := sent.Load(); n != maxLaneNotes+1 {
			t.Errorf("%d notes written, want %d", n, maxLaneNotes+1)
		}
		if _, _, d := state(l); d != 0 {
			t.Errorf("%d drops not told once the lane drained", d)
		}
		if l.push(note{size: 1, send: func(context.Context) {}}) {
			t.Error("a flushed lane took a note")
		}
	})
	t.Run("bytes", func(t *testing.T) {
		l, held, _ := newLane()
		l.push(note{size: 3 * maxLaneBytes, send: func(context.Context) {}}) // taken: the queue is empty
		l.push(note{size: 1, send: func(context.Context) {}})                // dropped: past the bytes
		if q, b, d := state(l); q != 1 || b != 3*maxLaneBytes || d != 1 {
			t.Errorf("one large note then a small one: %d queued (%d bytes), %d dropped; want 1, %d, 1", q, b, d, 3*maxLaneBytes)
		}
		close(held)
		l.flush(context.Background())
	})
	t.Run("discard", func(t *testing.T) {
		l, held, sent := newLane()
		l.push(note{size: 1, send: func(context.Context) { sent.Add(1) }})
		l.discard()
		close(held)
		waitFor(t, func() bool {
			l.mu.Lock()
			defer l.mu.Unlock()
			return !l.running
		})
		if n := sent.Load(); n != 1 {
			t.Errorf("%d notes written after the lane was discarded, want only the one being written", n)
		}
	})
}
