//go:build race

package contrib

// raceEnabled says whether the test runs under the race detector, so that
// the adapter modules' tests do too.
const raceEnabled = true
