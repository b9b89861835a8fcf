package values

import (
	"testing"

	"github.com/agentvalues/values/internal/testkit"
)

// readAllPages reads ref forward from offset 0 with limit, checking every page
// against want, and returns the reassembled text. It returns the error of
// the first Read, if any; a later error fails the test.
func readAllPages(t testing.TB, s *SessionValues, ref string, limit int, want []byte) ([]byte, error) {
	t.Helper()
	got, pages, err := testkit.ReadPages(len(want)+3, func(off int) (testkit.Page, error) {
		p, err := s.Read(ref, off, limit)
		if err != nil {
			return testkit.Page{}, err
		}
		checkReadPage(t, p, limit, want)
		return testkit.Page{Content: p.Content, Offset: p.Offset, Next: p.Next, More: p.More}, nil
	})
	if err != nil && pages == 0 {
		return nil, err
	}
	if err != nil {
		t.Fatalf("%q limit %d: %v (after a first page succeeded)", ref, limit, err)
	}
	return []byte(got), nil
}
