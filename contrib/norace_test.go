//go:build !race

package contrib

const raceEnabled = false
