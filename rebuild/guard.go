package rebuild

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/snapshot"
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
		"store (`mapthenet store verify`) and the --data-dir", ErrShrunk, e.ID, snapshot.CurrentName, e.Current, e.Reason)
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
