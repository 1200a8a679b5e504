// Package version says which build of loadlab this is, from the module's
// build information: the version of a go install, or dev-COMMIT (and
// +modified) for a build from a checkout. It is read once: the User-Agent
// loadlab sends and `loadlab version` print the same.
package version

import (
	"runtime/debug"
	"sync"
)

// String is this build's version.
func String() string { return once() }

var once = sync.OnceValue(read)

func read() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	v := info.Main.Version
	if v == "" || v == "(devel)" {
		v = "dev"
		dirty := false
		for _, s := range info.Settings {
			switch {
			case s.Key == "vcs.revision" && len(s.Value) >= 12:
				v = "dev-" + s.Value[:12]
			case s.Key == "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if dirty {
			v += "+modified" // built from a checkout with changes: not that commit
		}
	}
	return v
}
