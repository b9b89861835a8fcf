package contrib

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// TestModules runs `go vet ./...` and `go test ./...` in every adapter
// module under contrib/, each with GOWORK=off (it builds with only the
// dependencies its go.mod declares; the core module comes from the
// repository through its replace directive) and under the race detector
// when this test runs under it. A module's first run downloads and builds
// its framework: .ci/run does that beforehand, so that this stays within
// go test's default timeout.
func TestModules(t *testing.T) {
	mods, err := filepath.Glob(filepath.Join("*", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if len(mods) == 0 {
		t.Fatal("no adapter module under contrib/")
	}
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	test := []string{"test", "-count=1", "./..."}
	if raceEnabled {
		test = []string{"test", "-race", "-count=1", "./..."}
	}
	for _, mod := range mods {
		dir := filepath.Dir(mod)
		t.Run(dir, func(t *testing.T) {
			for _, args := range [][]string{{"vet", "./..."}, test} {
				cmd := exec.Command(goBin, args...)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("go %v in contrib/%s: %v\n%s", args, dir, err, out)
				}
			}
		})
	}
}
