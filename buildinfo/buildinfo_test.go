package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{"none", nil, false, "(unknown)"},
		{"test binary", &debug.BuildInfo{GoVersion: "go1.26.8"}, true, "(unknown) go1.26.8"},
		{"checkout build", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "6a708b3c0ffee0123456789"}, {Key: "vcs.time", Value: "2026-12-03T10:00:00Z"}}},
			true, "(devel) (commit 6a708b3c0ffe, 2026-12-03T10:00:00Z) go1.26.8"},
		{"dirty", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"}}},
			true, "(devel) (commit abc+dirty) go1.26.8"},
		{"tagged", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"}}, true, "v1.2.3 go1.26.8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fromBuildInfo(tc.bi, tc.ok).String(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
