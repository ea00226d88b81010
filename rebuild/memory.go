package rebuild

import "github.com/mapthenet/mapthenet/internal/gctarget"

// rebuildGCPercent is the collector's target while a rebuild runs, in
// place of Go's 100. A rebuild's live heap is mostly tables that last
// from the merge to its end (the names by id, the id table, per-domain
// arrays; at L from 8 shards, 1.5-2.5 GiB), while each stage streams
// rows that are garbage at once (the edges stage allocates several times
// the live heap). With the default target the heap grows to twice the
// live tables between collections; at 50, to one and a half. Most of the
// live heap holds no pointers, so the collector's extra cycles cost
// little: graphgen M from 8 shards, max RSS 1062 MiB at 100, 919 at 50,
// 912 at 25, in 35.5, 35.1 and 39.2 CPU-seconds (one run each on a
// shared machine).
const rebuildGCPercent = 50

// boundGC holds the collector's target at rebuildGCPercent until the
// returned function is called (gctarget.Hold: the operator's GOGC or
// GOMEMLIMIT wins). It applies to the whole process: a crawl that runs a
// rebuild collects more often meanwhile.
func boundGC() (restore func()) { return gctarget.Hold(rebuildGCPercent) }
