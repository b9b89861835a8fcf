package mcpproxy

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// liveSessions connects n sessions to a server over in-memory transports;
// they end when the test does.
func liveSessions(t testing.TB, n int) []*mcp.ServerSession {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	out := make([]*mcp.ServerSession, n)
	for i := range out {
		st, _ := mcp.NewInMemoryTransports()
		ss, err := server.Connect(context.Background(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ss.Close() })
		out[i] = ss
	}
	return out
}

// TestSessionStoreLookupFlat: making a new session's store costs the same
// with 10 sessions alive as with 2,000, each with values stored (counted
// in allocations, which ranging over the stores paid one of per store).
// The new store still starts past every handle handed out, by sessions
// alive or ended.
func TestSessionStoreLookupFlat(t *testing.T) {
	allocs := func(live int) float64 {
		st := newStores(&Options{PerSession: true})
		sessions := liveSessions(t, live+21)
		for _, ss := range sessions[:live] {
			st.of(ss).Put("x")
			st.handedOut(ss)
		}
		i := live
		return testing.AllocsPerRun(20, func() {
			st.of(sessions[i])
			i++
		})
	}
	few, many := allocs(10), allocs(2000)
	t.Logf("allocations per new session's store: %.0f with 10 sessions alive, %.0f with 2,000", few, many)
	if many > few+50 {
		t.Errorf("a new session's store costs %.0f allocations with 2,000 sessions alive, %.0f with 10: want it independent of their number", many, few)
	}

	st := newStores(&Options{PerSession: true})
	ss := liveSessions(t, 4)
	a := st.of(ss[0])
	for range 3 {
		a.Put("a")
	}
	st.handedOut(ss[0]) // r1..r3 answered
	if h := st.of(ss[1]).Next(); h != "r4" {
		t.Errorf("a session made after r1..r3 were handed out starts at %s, want r4", h)
	}
	a.Put("a") // r4 of a
	ss[0].Close()
	waitFor(t, func() bool { _, ok := st.live.all.Load(ss[0]); return !ok })
	if h := st.of(ss[2]).Next(); h != "r5" {
		t.Errorf("a session made after one that handed out r4 ended starts at %s, want r5", h)
	}
}
