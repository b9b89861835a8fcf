package mcpproxy

import (
	"runtime/debug"
	"testing"
)

func TestModuleVersion(t *testing.T) {
	for _, tc := range []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{"no build info", nil, "(devel)"},
		{"the agentvalues command, installed at a tag", &debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "v1.2.3"}}, "v1.2.3"},
		{"the agentvalues command, built in a checkout", &debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "v0.0.0-20261205051054-4d21b64e0a1b"}}, "v0.0.0-20261205051054-4d21b64e0a1b"},
		{"the agentvalues command, no version known", &debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "(devel)"}}, "(devel)"},
		{"a program importing mcpproxy", &debug.BuildInfo{
			Main: debug.Module{Path: "example.com/agent", Version: "v9.9.9"},
			Deps: []*debug.Module{{Path: "golang.org/x/sys", Version: "v0.1.0"}, {Path: modulePath, Version: "v1.4.0"}},
		}, "v1.4.0"},
		{"a program importing a replaced mcpproxy", &debug.BuildInfo{
			Main: debug.Module{Path: "example.com/agent"},
			Deps: []*debug.Module{{Path: modulePath, Version: "v1.4.0", Replace: &debug.Module{Path: "example.com/fork", Version: "v1.4.1"}}},
		}, "v1.4.1"},
		{"a program whose build info lacks the module", &debug.BuildInfo{Main: debug.Module{Path: "example.com/agent", Version: "v9.9.9"}}, "(devel)"},
	} {
		if got := moduleVersion(tc.info); got != tc.want {
			t.Errorf("%s: moduleVersion = %q, want %q", tc.name, got, tc.want)
		}
	}
}
