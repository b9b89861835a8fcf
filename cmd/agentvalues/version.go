package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// versionCommand prints what the binary was built from (see versionText).
func versionCommand(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("version", stderr)
	if err := parseFlags(fs, args, stdout, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: version takes no arguments", errUsage)
	}
	info, _ := debug.ReadBuildInfo()
	fmt.Fprint(stdout, versionText(info))
	return nil
}

// versionText is what `agentvalues version` prints, from the build info of
// the binary (nil when it has none): three lines,
//
//	agentvalues VERSION
//	revision REVISION (TIME, modified)
//	built with GOVERSION GOOS/GOARCH
//
// VERSION is the main module's version: a release tag for a binary built by
// `go install …@vX.Y.Z`, a pseudo-version for one built by `go build` in a
// git checkout, "(devel)" when the go command knew none. REVISION is the
// commit it was built from, "unknown" without version control information
// (a build outside a checkout, with -buildvcs=false, or a test binary);
// the parentheses give the commit's time and "modified" when the checkout
// had changes not committed, and are left out when there is neither.
func versionText(info *debug.BuildInfo) string {
	version, revision, goVersion := "(devel)", "unknown", runtime.Version()
	var extra []string
	if info != nil {
		if info.Main.Version != "" {
			version = info.Main.Version
		}
		if info.GoVersion != "" {
			goVersion = info.GoVersion
		}
		var when, modified string
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		if when != "" {
			extra = append(extra, when)
		}
		if modified == "true" {
			extra = append(extra, "modified")
		}
	}
	rev := "revision " + revision
	for i, e := range extra {
		if i == 0 {
			rev += " (" + e
		} else {
			rev += ", " + e
		}
		if i == len(extra)-1 {
			rev += ")"
		}
	}
	return fmt.Sprintf("agentvalues %s\n%s\nbuilt with %s %s/%s\n", version, rev, goVersion, runtime.GOOS, runtime.GOARCH)
}
