// Package buildinfo says which build of mapthenet is running: the module
// version, the commit and its time, as Go's build information records them
// (go build in a git checkout stamps vcs.revision and vcs.time; go install
// of a tagged module stamps the version). It imports nothing of ours, so
// every package may use it.
package buildinfo

import (
	"runtime/debug"
	"sync"
)

// Info is one build's identity.
type Info struct {
	Version   string `json:"version"`    // module version, "(devel)" for a checkout build
	Revision  string `json:"revision"`   // VCS commit, "" when not stamped
	Time      string `json:"time"`       // commit time, RFC 3339, "" when not stamped
	Modified  bool   `json:"modified"`   // the work tree had uncommitted changes
	GoVersion string `json:"go_version"` // the toolchain that built it
}

var (
	once sync.Once
	info Info
)

// Get returns this binary's build information.
func Get() Info {
	once.Do(func() { info = fromBuildInfo(debug.ReadBuildInfo()) })
	return info
}

func fromBuildInfo(bi *debug.BuildInfo, ok bool) Info {
	in := Info{Version: "(unknown)"}
	if !ok || bi == nil {
		return in
	}
	in.GoVersion = bi.GoVersion
	if v := bi.Main.Version; v != "" {
		in.Version = v
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.time":
			in.Time = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	return in
}

// String is the one-line form `mapthenet --version` prints:
// "v1.2.3 (commit 0123abcd4567, 2026-12-03T10:00:00Z) go1.26.8".
func (in Info) String() string {
	s := in.Version
	if in.Revision != "" {
		rev := in.Revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if in.Modified {
			rev += "+dirty"
		}
		s += " (commit " + rev
		if in.Time != "" {
			s += ", " + in.Time
		}
		s += ")"
	}
	if in.GoVersion != "" {
		s += " " + in.GoVersion
	}
	return s
}
