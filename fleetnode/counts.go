package fleetnode

import (
	"context"
	"errors"
	"io/fs"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/fleet"
	"github.com/mapthenet/mapthenet/snapshot"
)

// CountsEvery is how often a node counts its shards' due domains for
// fleet status (and whenever its schedule or its shards change): a count
// looks up every due row of its shards in the store, which is not worth
// doing every --recheck.
const CountsEvery = time.Minute

// Count counts, per shard the node holds, what is left of the schedule
// it pulled into DataDir as of now (fleet.ShardCounts): Due, the rows due
// by now of domains visited before and not visited since the snapshot's
// as-of; Waiting, those of domains never visited, and the shard's seeds
// of this run that are still unvisited and not in the schedule. A shard
// whose partition has not been pulled counts its seeds only.
func (h *Handler) Count(now time.Time) (map[int]fleet.ShardCounts, error) {
	held := h.Held()
	out := make(map[int]fleet.ShardCounts, len(held))
	if len(held) == 0 {
		return out, nil
	}
	holds := map[int]bool{}
	for _, s := range held {
		holds[s] = true
		out[s] = fleet.ShardCounts{At: now}
	}
	local := snapshot.Local(h.o.DataDir)
	id, err := local.Current()
	if err != nil {
		return nil, err
	}
	counted := map[string]bool{}
	add := func(s int, domain string, fromSchedule bool, asOf time.Time) error {
		st, found, err := h.o.Store.Domain(domain)
		if err != nil {
			return err
		}
		visited := found && st.Visited()
		c := out[s]
		switch {
		case visited && !fromSchedule:
			return nil // a seed visited already
		case visited && !st.LastVisit.Before(asOf):
			// visited since the schedule was made
		case visited:
			c.Due++
		default:
			c.Waiting++
		}
		counted[domain] = true
		out[s] = c
		return nil
	}
	if id != "" {
		m, err := snapshot.ReadManifest(local, id)
		if err != nil {
			return nil, err
		}
		files := snapshot.At(local, id)
		each := func(fn func([]data.ScheduleRow) error) error {
			// A snapshot without partitions: its whole schedule, once.
			return files.EachSchedule(fn)
		}
		if m.SchedulePartitions != nil {
			each = func(fn func([]data.ScheduleRow) error) error {
				for _, s := range held {
					err := files.EachSchedulePartition(s, fn)
					if err != nil && !errors.Is(err, fs.ErrNotExist) {
						return err
					}
				}
				return nil
			}
		}
		err = each(func(rows []data.ScheduleRow) error {
			for _, r := range rows {
				if r.NextVisit.After(now) {
					continue
				}
				if s := h.o.Store.ShardOf(r.Domain); holds[s] {
					if err := add(s, r.Domain, true, m.AsOf); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		for s, c := range out {
			c.Snapshot = id
			out[s] = c
		}
	}
	for _, d := range h.o.Seeds {
		if s := h.o.Store.ShardOf(d); holds[s] && !counted[d] {
			if err := add(s, d, false, time.Time{}); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// ReportCounts counts (Count) and writes each held shard's counts to the
// fleet (fleet.Gate.PutShardCounts) under its holding; a shard given up
// meanwhile is skipped.
func (h *Handler) ReportCounts(ctx context.Context, now time.Time) error {
	counts, err := h.Count(now)
	if err != nil {
		return err
	}
	h.mu.Lock()
	g := h.gate
	fences := make(map[int]fleet.Fence, len(counts))
	for s := range counts {
		if f, ok := h.fences[s]; ok {
			fences[s] = f
		}
	}
	h.mu.Unlock()
	if g == nil {
		return nil
	}
	for s, f := range fences {
		if err := g.PutShardCounts(ctx, f, counts[s]); err != nil {
			var nn *fleet.NotNowError
			if errors.As(err, &nn) {
				continue // given up, or the deadline passed: the next count
			}
			return err
		}
	}
	return nil
}
