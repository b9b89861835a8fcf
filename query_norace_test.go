//go:build !race

package values

// queryRaceEnabled tells the query tests that the race detector runs,
// which multiplies the memory a program touches.
const queryRaceEnabled = false
