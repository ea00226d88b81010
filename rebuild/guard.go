package rebuild

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/mapthenet/mapthenet/data"
)

// DefaultMaxShrink is the snapshot guard's default (Options.MaxShrink): a
// rebuild whose domains or edges fall by more than half from the current
// snapshot does not become current by itself.
const DefaultMaxShrink = 0.5

// ErrShrunk: the snapshot was written but is not current, because it is
// much smaller than the current one (the guard); the error says why.
var ErrShrunk = errors.New("snapshot not made current")

// ShrinkError is the guard's refusal.
type ShrinkError struct {
	ID, Current string // the new snapshot, and the one that stays current
	Reason      string
}

func (e *ShrinkError) Error() string {
	return fmt.Sprintf("%s: snapshot %s was written but %s stays on %s: %s. If the shrink is expected "+
		"(domains removed on purpose, a new store), rebuild again with --accept-shrink; otherwise check the "+
		"store (`mapthenet store verify`) and the --data-dir", ErrShrunk, e.ID, CurrentLink, e.Current, e.Reason)
}

func (e *ShrinkError) Unwrap() error { return ErrShrunk }

// shrinkReason compares the new snapshot's counts with the current one's
// and says why the guard holds it back ("" when it does not). An empty
// snapshot never replaces a non-empty one (even with the guard off);
// only Options.AcceptShrink lets either through.
func shrinkReason(prev *data.Manifest, counts map[string]int64, maxShrink float64) string {
	if prev == nil {
		return ""
	}
	pd, pe := prev.Counts[data.DomainsFile], prev.Counts[data.EdgesFile]
	nd, ne := counts[data.DomainsFile], counts[data.EdgesFile]
	if nd == 0 && pd > 0 {
		return fmt.Sprintf("the store is empty, and the current snapshot has %d domains (an empty store never replaces a snapshot by itself)", pd)
	}
	if maxShrink < 0 {
		return ""
	}
	var why []string
	if float64(nd) < float64(pd)*(1-maxShrink) {
		why = append(why, fmt.Sprintf("domains fell from %d to %d", pd, nd))
	}
	if float64(ne) < float64(pe)*(1-maxShrink) {
		why = append(why, fmt.Sprintf("edges fell from %d to %d", pe, ne))
	}
	if len(why) == 0 {
		return ""
	}
	return strings.Join(why, " and ") + " (more than the guard's " + strconv.FormatFloat(maxShrink*100, 'g', -1, 64) + "%, --max-shrink)"
}

// umask is the process's file mode creation mask, read without changing
// it (syscall.Umask sets it, racing every goroutine that creates files);
// Linux says it in /proc/self/status. 022 when it cannot be read.
func umask() os.FileMode {
	b, err := os.ReadFile("/proc/self/status")
	if err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Umask:"); ok {
				if m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
					return os.FileMode(m)
				}
			}
		}
	}
	return 0o022
}

// dirMode is the mode a new directory gets under the umask: what MkdirAll
// gives, and what a snapshot's folder, made 0700 by os.MkdirTemp, is set
// to, so that the operator's DuckDB users can read it (issue 13).
func dirMode() os.FileMode { return 0o777 &^ umask() }
