package main

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestVersionText(t *testing.T) {
	t.Parallel()
	platform := runtime.GOOS + "/" + runtime.GOARCH
	for _, tc := range []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{"no build info", nil, "agentvalues (devel)\nrevision unknown\nbuilt with " + runtime.Version() + " " + platform + "\n"},
		{"no vcs", &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Path: "github.com/agentvalues/values"}},
			"agentvalues (devel)\nrevision unknown\nbuilt with go1.99.1 " + platform + "\n"},
		{"clean checkout", &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Version: "v0.0.0-20261205000431-fe15adcaa274"}, Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "fe15adcaa2741f65e4349f8bcaef99b68bc3725b"},
			{Key: "vcs.time", Value: "2026-12-05T00:04:31Z"}, {Key: "vcs.modified", Value: "false"}}},
			"agentvalues v0.0.0-20261205000431-fe15adcaa274\nrevision fe15adcaa2741f65e4349f8bcaef99b68bc3725b (2026-12-05T00:04:31Z)\nbuilt with go1.99.1 " + platform + "\n"},
		{"modified", &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Version: "v1.2.3+dirty"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "fe15adcaa2741f65e4349f8bcaef99b68bc3725b"}, {Key: "vcs.modified", Value: "true"}}},
			"agentvalues v1.2.3+dirty\nrevision fe15adcaa2741f65e4349f8bcaef99b68bc3725b (modified)\nbuilt with go1.99.1 " + platform + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, versionText(tc.info)); diff != "" {
				t.Errorf("versionText (-want +got):\n%s", diff)
			}
		})
	}
}

// versionShape is what `agentvalues version` prints, whatever the build.
var versionShape = regexp.MustCompile(`^agentvalues (\(devel\)|v\S+)\nrevision (unknown|[0-9a-f]{40}( \(\S+\))?|[0-9a-f]{40} \((\S+, )?modified\))\nbuilt with go\S+ \S+/\S+\n$`)

// TestVersionCommand runs version, --version and -version in the test
// binary, which has no version control information.
func TestVersionCommand(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"version", "--version", "-version"} {
		var out, errs bytes.Buffer
		if code := run([]string{arg}, nil, &out, &errs); code != 0 || errs.Len() > 0 {
			t.Errorf("%s: exit %d, stderr %q", arg, code, errs.String())
		}
		if !versionShape.MatchString(out.String()) {
			t.Errorf("%s printed %q", arg, out.String())
		}
	}
	var out, errs bytes.Buffer
	if code := run([]string{"version", "extra"}, nil, &out, &errs); code != 2 || !strings.Contains(errs.String(), "usage: agentvalues version") {
		t.Errorf("version extra: exit %d, stderr %q; want 2 and the usage", code, errs.String())
	}
}

// TestVersionBuilt builds the command with `go build` in a git repository
// of its own (the module's Go files, committed), as a user's clone builds
// it, and checks that --version prints that commit, and "modified" once
// the checkout has changes not committed. The repository is made here
// because the go command stamps no revision in a git worktree, nor
// outside a checkout.
func TestVersionBuilt(t *testing.T) {
	t.Parallel()
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	gitCmd, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("git is needed to check the revision a build prints: %v", err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	repo := t.TempDir()
	copyModule(t, root, repo)
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(gitCmd, args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
			"GIT_AUTHOR_NAME=test", "GIT_AUTHOR_EMAIL=test@example.com", "GIT_COMMITTER_NAME=test", "GIT_COMMITTER_EMAIL=test@example.com",
			"GIT_AUTHOR_DATE=2026-01-02T03:04:05Z", "GIT_COMMITTER_DATE=2026-01-02T03:04:05Z")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %q: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", ".")
	git("commit", "-q", "-m", "the module")
	head := git("rev-parse", "HEAD")

	var bin string
	version := func() string {
		t.Helper()
		bin = filepath.Join(t.TempDir(), "agentvalues")
		// -buildvcs=true over a GOFLAGS that may turn stamping off;
		// -trimpath lets the build reuse the cache's packages.
		build := exec.Command(goCmd, "build", "-buildvcs=true", "-trimpath", "-o", bin, "./cmd/agentvalues")
		build.Dir = repo
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
		out, err := exec.Command(bin, "--version").Output()
		if err != nil {
			t.Fatalf("agentvalues --version: %v", err)
		}
		if !versionShape.Match(out) {
			t.Errorf("agentvalues --version printed %q", out)
		}
		return string(out)
	}
	clean := version()
	if want := "\nrevision " + head + " (2026-01-02T03:04:05Z)\n"; !strings.Contains(clean, want) {
		t.Errorf("built at commit %s, --version printed %q; want %q", head, clean, want)
	}
	if v := strings.SplitN(clean, "\n", 2)[0]; !strings.HasPrefix(v, "agentvalues v0.0.0-20260102030405-"+head[:12]) {
		t.Errorf("built at commit %s, --version printed the version %q; want its pseudo-version", head, v)
	}
	// The proxy tells its client (and its servers) the same version.
	cmd := exec.Command(bin, "proxy", "--", os.Args[0], blobServerArg)
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting to the built proxy: %v", err)
	}
	defer cs.Close()
	if got, want := cs.InitializeResult().ServerInfo.Version, strings.TrimPrefix(strings.SplitN(clean, "\n", 2)[0], "agentvalues "); got != want {
		t.Errorf("the built proxy calls itself version %q; --version says %q", got, want)
	}
	if err := os.WriteFile(filepath.Join(repo, "cmd", "agentvalues", "local.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if dirty := version(); !strings.Contains(dirty, "\nrevision "+head+" (2026-01-02T03:04:05Z, modified)\n") {
		t.Errorf("built with a change not committed, --version printed %q; want %s and modified", dirty, head)
	}
}

// copyModule copies what building cmd/agentvalues needs of the module at
// root (go.mod, go.sum, the Go files that are not tests, outside testdata
// and the contrib modules) to dir.
func copyModule(t *testing.T, root, dir string) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		name := d.Name()
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(name, ".") || name == "testdata" || rel == "contrib") {
				return filepath.SkipDir
			}
			return nil
		}
		// The sources (Go and assembly: internal/jsontext's kernels), and
		// the files a //go:embed takes (the value browser's page:
		// mcpproxy/browse/static).
		embedded := strings.HasSuffix(name, ".html") || strings.HasSuffix(name, ".css") || strings.HasSuffix(name, ".js")
		source := strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") || strings.HasSuffix(name, ".s")
		if !(rel == "go.mod" || rel == "go.sum" || embedded || source) {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), data, 0o644)
	})
	if err != nil {
		t.Fatalf("copying the module: %v", err)
	}
}
