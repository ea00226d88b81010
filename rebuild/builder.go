package rebuild

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/rank"
	"github.com/mapthenet/mapthenet/schedule"
	"github.com/mapthenet/mapthenet/shard"
	"github.com/mapthenet/mapthenet/snapshot"
)

// builder holds what a rebuild keeps in memory between stages: arrays
// indexed by a dense domain index (the store's ids may have gaps), a few
// bytes per domain. Edges and visits are streamed; ranks read the edges
// back from edges.parquet.
type builder struct {
	opts Options
	log  *slog.Logger
	snap *snapshot.Build // the snapshot being written
	prev *snapshot.Files // the current snapshot, the previous one to this; nil when none

	began  time.Time
	counts map[string]int64
	stages []data.StageTiming

	dense    []int32  // store id → dense index, -1 where no domain
	identity bool     // dense[id] == id for every id: the store has no gaps
	names    []string // dense → name
	in, out  []uint32 // dense → distinct followed linking / linked domains

	scores   []float64
	ranks    []int64 // 0: unranked
	rankInfo data.RankInfo

	graph      *rank.CSR // the followed graph, kept from ranks to layout
	community  []int32   // dense → community id; -1: none (nil: not computed)
	order      []uint32  // ranked domains, best first
	mapX, mapY []float64 // dense → position on the map; NaN: not placed
	mapPrint   string    // the layout's fingerprint, kept in domains.parquet

	partitions *data.SchedulePartitions // the schedule by shard (Options.ScheduleShards)
}

const progressEvery = 1 << 16

// stage is called at each stage boundary: cancellation, and the tests'
// failure injection.
func (b *builder) stage(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if b.opts.failAt == name {
		return fmt.Errorf("rebuild: injected failure at stage %s", name)
	}
	return nil
}

// tick reports progress and checks for cancellation every progressEvery rows.
func (b *builder) tick(ctx context.Context, stage string, rows int64) error {
	if rows%progressEvery != 0 {
		return nil
	}
	if b.opts.Progress != nil {
		b.opts.Progress(stage, rows)
	}
	return ctx.Err()
}

func (b *builder) timed(stage string, start time.Time, rows int64) {
	if b.began.IsZero() {
		b.began = start
	}
	d := time.Since(start)
	b.stages = append(b.stages, data.StageTiming{Stage: stage, Seconds: d.Seconds(), Rows: rows})
	if b.opts.Progress != nil {
		b.opts.Progress(stage, rows)
	}
	b.log.Info("rebuild stage done", "stage", stage, "rows", rows, "seconds", d.Seconds())
}

func (b *builder) build(ctx context.Context, src Source) error {
	steps := []struct {
		name string
		fn   func(context.Context, Source) (int64, error)
	}{
		{"domains", b.readDomains},
		{"edges", b.writeEdges},
		{"link_words", b.writeLinkWords},
		{"visits", b.writeVisits},
		{"ranks", b.computeRanks},
		{"communities", b.computeCommunities},
		{"layout", b.computeLayout},
		{"write", b.writeDomainsAndSchedule},
	}
	for _, s := range steps {
		if err := b.stage(ctx, s.name); err != nil {
			return err
		}
		start := time.Now()
		rows, err := s.fn(ctx, src)
		if err != nil {
			return fmt.Errorf("rebuild stage %s: %w", s.name, err)
		}
		if r, ok := src.(edgesReleaser); ok && s.name == "visits" {
			if err := r.ReleaseEdges(); err != nil {
				return fmt.Errorf("rebuild stage %s: %w", s.name, err)
			}
		}
		b.timed(s.name, start, rows)
	}
	return nil
}

// edgesReleaser is a Source that can let go of what it holds for its
// edges, visits and link words once they are read (a Merge of local
// shards: most of its memory); the stages after the visits read only the
// domains, and the ranks' and map's own memory comes then.
type edgesReleaser interface {
	Source
	ReleaseEdges() error
}

// namedSource is a Source that has its names at hand, by id, its ids
// dense (a Merge: it numbered the domains by their names): the name table
// without a walk of every domain's state.
type namedSource interface {
	Source
	Names() []string
}

// readDomains builds the id → name table.
func (b *builder) readDomains(ctx context.Context, src Source) (int64, error) {
	if ns, ok := src.(namedSource); ok && uint32(len(ns.Names())) == src.NumDomains() {
		b.names = ns.Names()
		b.dense = make([]int32, len(b.names))
		for i := range b.dense {
			b.dense[i] = int32(i)
		}
		b.identity = true
		b.in = make([]uint32, len(b.names))
		b.out = make([]uint32, len(b.names))
		return int64(len(b.names)), nil
	}
	b.dense = make([]int32, src.NumDomains())
	for i := range b.dense {
		b.dense[i] = -1
	}
	var rows int64
	err := src.Domains(func(st *data.DomainState) error {
		if int(st.ID) >= len(b.dense) {
			return fmt.Errorf("domain %q has id %d, beyond the store's %d", st.Name, st.ID, len(b.dense))
		}
		if b.dense[st.ID] >= 0 {
			return fmt.Errorf("domain id %d appears twice (%q)", st.ID, st.Name)
		}
		b.dense[st.ID] = int32(len(b.names))
		b.names = append(b.names, st.Name)
		rows++
		return b.tick(ctx, "domains", rows)
	})
	if err != nil {
		return 0, err
	}
	b.identity = len(b.names) == len(b.dense)
	b.in = make([]uint32, len(b.names))
	b.out = make([]uint32, len(b.names))
	return rows, nil
}

// denseOf maps a store id to its dense index.
func (b *builder) denseOf(id uint32) (int32, bool) {
	if b.identity {
		// Ids without gaps (the common case) are their own dense index:
		// no lookup, which per edge is a cache miss.
		return int32(id), int(id) < len(b.dense)
	}
	if int(id) >= len(b.dense) || b.dense[id] < 0 {
		return 0, false
	}
	return b.dense[id], true
}

// writeEdges streams the edges into edges.parquet and counts the followed
// ones and their link words (ranks read the file back, streamed).
func (b *builder) writeEdges(ctx context.Context, src Source) (int64, error) {
	fw, err := b.snap.CreateEdges()
	if err != nil {
		return 0, err
	}
	fw.Prepare(b.edgeNames)
	var rows int64
	var prevS, prevD uint32
	err = src.Edges(func(e *data.EdgeRecord) error {
		s, ok1 := b.denseOf(e.SrcID)
		d, ok2 := b.denseOf(e.DstID)
		if !ok1 || !ok2 {
			return fmt.Errorf("edge %d→%d names a domain id the store does not list", e.SrcID, e.DstID)
		}
		if rows > 0 && (e.SrcID < prevS || (e.SrcID == prevS && e.DstID <= prevD)) {
			return fmt.Errorf("edges out of order or repeated: %d→%d after %d→%d", e.SrcID, e.DstID, prevS, prevD)
		}
		prevS, prevD = e.SrcID, e.DstID
		// The names are filled in by edgeNames, on the encoders.
		err := fw.Add(data.EdgeRow{
			SrcID: int32(e.SrcID), DstID: int32(e.DstID),
			FirstSeen: e.FirstSeen.UTC(), LastSeen: e.LastSeen.UTC(),
			Nofollow: e.Nofollow, Sitewide: e.Sitewide,
		})
		if err != nil {
			return err
		}
		if !e.Nofollow && s != d {
			b.out[s]++
			b.in[d]++
		}
		rows++
		return b.tick(ctx, "edges", rows)
	})
	if err != nil {
		fw.Abort()
		return 0, err
	}
	b.counts[data.EdgesFile] = rows
	return rows, fw.Close()
}

// edgeNames fills in the src and dst names of edge rows whose ids writeEdges
// checked: a lookup in a table far larger than the caches per name, done
// by the Parquet encoders in parallel rather than by the single goroutine
// that reads the store.
func (b *builder) edgeNames(rows []data.EdgeRow) {
	for i := range rows {
		r := &rows[i]
		s, _ := b.denseOf(uint32(r.SrcID))
		d, _ := b.denseOf(uint32(r.DstID))
		r.Src, r.Dst = b.names[s], b.names[d]
	}
}

// writeLinkWords keeps each target's top words from the source's counts,
// written as each target ends.
func (b *builder) writeLinkWords(ctx context.Context, src Source) (int64, error) {
	fw, err := b.snap.CreateLinkWords()
	if err != nil {
		return 0, err
	}
	var rows int64
	p := wordPicker{emit: func(lw linkWord) error {
		rows++
		if err := fw.Add(data.LinkWordRow{Domain: b.names[lw.dst], Word: lw.word, Sites: lw.sites}); err != nil {
			return err
		}
		return b.tick(ctx, "link_words", rows)
	}}
	err = src.LinkWords(func(dst uint32, word string, sites int64) error {
		d, ok := b.denseOf(dst)
		if !ok {
			return fmt.Errorf("link words name domain id %d, which the store does not list", dst)
		}
		return p.add(uint32(d), word, sites)
	})
	if err == nil {
		err = p.flush()
	}
	if err != nil {
		fw.Abort()
		return 0, err
	}
	b.counts[data.LinkWordsFile] = rows
	return rows, fw.Close()
}

// writeVisits streams the visit log into visits.parquet: the writer holds
// one row group at most, so memory does not grow with the log.
func (b *builder) writeVisits(ctx context.Context, src Source) (int64, error) {
	fw, err := b.snap.CreateVisits()
	if err != nil {
		return 0, err
	}
	var rows int64
	err = src.Visits(func(v *data.VisitLogEntry) error {
		d, ok := b.denseOf(v.DomainID)
		if !ok {
			return fmt.Errorf("a visit names domain id %d, which the store does not list", v.DomainID)
		}
		if err := fw.Add(visitRow(b.names[d], v)); err != nil {
			return err
		}
		rows++
		return b.tick(ctx, "visits", rows)
	})
	if err != nil {
		fw.Abort()
		return 0, err
	}
	b.counts[data.VisitsFile] = rows
	return rows, fw.Close()
}

func visitRow(name string, v *data.VisitLogEntry) data.VisitRow {
	r := data.VisitRow{
		Domain:     name,
		StartedAt:  v.StartedAt.UTC(),
		FinishedAt: v.FinishedAt.UTC(),
		Outcome:    string(v.Outcome),
		HTTPStatus: int32(v.HTTPStatus),
		Pages:      int32(v.Pages),
		Bytes:      v.Bytes,
	}
	if !v.RobotsReadAt.IsZero() {
		r.RobotsReadAt = ptr(v.RobotsReadAt.UTC())
	}
	if v.RobotsStatus != 0 {
		r.RobotsStatus = ptr(int32(v.RobotsStatus))
	}
	if v.Error != "" {
		r.Error = ptr(v.Error)
	}
	return r
}

func (b *builder) computeRanks(ctx context.Context, _ Source) (int64, error) {
	p := b.opts.Rank
	b.rankInfo = data.RankInfo{
		Algorithm: "pagerank", Damping: p.Damping, Tolerance: p.Tolerance, MaxIterations: p.MaxIterations,
	}
	n := uint32(len(b.names))
	if n == 0 {
		return 0, nil
	}
	var dense []int32 // edges.parquet has store ids
	if !b.identity {
		dense = b.dense
	}
	if p.Progress == nil {
		p.Progress = rank.LogProgress(b.log, pageRankLogEvery)
	}
	scores, ranks, res, g, order, err := rankDomains(ctx, b.snap.Staged(data.EdgesFile), n, dense, b.names, p)
	if err != nil {
		return 0, err
	}
	b.graph, b.order = g, order
	b.scores, b.ranks = scores, ranks
	b.rankInfo.Iterations = res.Iterations
	b.rankInfo.Extrapolations = res.Extrapolations
	b.rankInfo.Residual = res.Residual
	for _, r := range b.ranks {
		if r > 0 {
			b.rankInfo.Ranked++
		}
	}
	b.log.Info("ranks computed", "domains", n, "ranked", b.rankInfo.Ranked,
		"iterations", res.Iterations, "extrapolations", res.Extrapolations, "residual", res.Residual)
	return int64(n), nil
}

// writeDomainsAndSchedule makes a second pass over the domains (the view is
// consistent, so it sees the same ones) to write every column of
// domains.parquet and the schedule.
func (b *builder) writeDomainsAndSchedule(ctx context.Context, src Source) (int64, error) {
	prev, err := b.loadPrevRanks()
	if err != nil {
		// An unreadable previous snapshot must not stop new ones.
		b.log.Warn("previous ranks unavailable: prev_rank left empty", "err", err)
	}
	fw, err := b.snap.CreateDomains(b.mapPrint)
	if err != nil {
		return 0, err
	}
	policy := schedule.Policy{Tiers: b.opts.Tiers, MinInDomains: b.opts.MinInDomains}
	// At most one row a domain, and nearly every domain has one: room for
	// all at once, rather than a slice grown by append (copied whole at
	// each step, the old and the new held at the last: up to twice its
	// 700 MB at L).
	sched := make([]data.ScheduleRow, 0, len(b.names))
	var rows int64
	err = src.Domains(func(st *data.DomainState) error {
		d, ok := b.denseOf(st.ID)
		if !ok || b.names[d] != st.Name {
			return fmt.Errorf("domain %q (id %d) changed between two passes over one snapshot", st.Name, st.ID)
		}
		rank := b.ranks[d]
		tier := policy.Tiers.For(rank)
		row := domainRow(st, tier)
		row.Score = b.scores[d]
		row.InDomains, row.OutDomains = int64(b.in[d]), int64(b.out[d])
		if rank > 0 {
			row.Rank = ptr(rank)
		}
		if p := prev[d]; p > 0 {
			row.PrevRank = ptr(p)
		}
		if b.community != nil && b.community[d] >= 0 {
			row.Community = ptr(b.community[d])
		}
		if b.mapX != nil && !math.IsNaN(b.mapX[d]) {
			row.MapX, row.MapY = ptr(b.mapX[d]), ptr(b.mapY[d])
		}
		if s, ok := policy.Next(st, tier, row.InDomains, b.opts.Now); ok {
			sched = append(sched, s)
			row.NextVisit = ptr(s.NextVisit)
			row.PagesPerVisit = s.Pages
		}
		if err := fw.Add(row); err != nil {
			return err
		}
		rows++
		return b.tick(ctx, "write", rows)
	})
	if err != nil {
		fw.Abort()
		return 0, err
	}
	// The schedule sorts while the encoders finish domains.parquet.
	sorted := make(chan struct{})
	go func() {
		schedule.Sort(sched)
		close(sorted)
	}()
	err = fw.Close()
	<-sorted
	if err != nil {
		return 0, err
	}
	if rows != int64(len(b.names)) {
		return 0, fmt.Errorf("the store listed %d domains, then %d, in one snapshot", len(b.names), rows)
	}
	b.counts[data.DomainsFile] = rows

	n, err := b.snap.WriteSchedule(sched)
	b.counts[data.ScheduleFile] = n
	if err != nil {
		return rows, err
	}
	if r := b.opts.ScheduleShards; r != nil {
		if b.partitions, err = writePartitions(b.snap, *r, sched); err != nil {
			return rows, fmt.Errorf("schedule partitions: %w", err)
		}
	}
	return rows, nil
}

// writePartitions splits the sorted schedule by the shard of each row's
// domain, keeping the order, and writes one partition per shard (an
// empty one too: a node always finds its shard's file).
func writePartitions(snap *snapshot.Build, r shard.Router, sched []data.ScheduleRow) (*data.SchedulePartitions, error) {
	byShard := make([][]data.ScheduleRow, r.Shards())
	for _, row := range sched {
		s := r.Of(row.Domain)
		byShard[s] = append(byShard[s], row)
	}
	out := &data.SchedulePartitions{Shards: r.Shards(), Platforms: r.Platforms(), Files: make([]data.SchedulePartition, 0, r.Shards())}
	for s, rows := range byShard {
		p, err := snap.WriteSchedulePartition(s, rows)
		if err != nil {
			return nil, err
		}
		out.Files = append(out.Files, p)
	}
	return out, nil
}

// domainRow fills the columns that come from the store's state and tier.
func domainRow(st *data.DomainState, tier data.Tier) data.DomainRow {
	r := data.DomainRow{
		ID:            int32(st.ID),
		Domain:        st.Name,
		Tier:          int32(tier.Number),
		RevisitDays:   int32(tier.RevisitDays),
		PagesPerVisit: int32(tier.Pages),
		FirstSeen:     st.FirstSeen.UTC(),
		HTTPS:         st.HTTPS,
		IPv6:          st.IPv6,
		OptedOut:      st.OptedOut,
		Failures:      int32(st.Failures),
	}
	if st.Visited() {
		r.LastVisit = ptr(st.LastVisit.UTC())
		r.LastStatus = ptr(int32(st.LastStatus))
	}
	if st.LastOutcome != "" {
		r.LastOutcome = ptr(string(st.LastOutcome))
	}
	if st.ASN != 0 {
		r.ASN = ptr(st.ASN)
	}
	if st.NetworkOperator != "" {
		r.NetworkOperator = ptr(st.NetworkOperator)
	}
	return r
}

// loadPrevRanks is each domain's rank in the previous snapshot, by dense
// index (0: unranked there, or not in it), matched by name as the
// communities are (nameFinder): 8 bytes a domain, where a map by name
// held about 70 (700 MB at L).
func (b *builder) loadPrevRanks() ([]int64, error) {
	prev := make([]int64, len(b.names))
	if b.prev == nil {
		return prev, nil
	}
	find := newNameFinder(b.names)
	err := b.prev.EachRank(func(name string, rank int64) error {
		if d := find.index([]byte(name)); d >= 0 {
			prev[d] = rank
		}
		return nil
	})
	if err != nil {
		clear(prev)
	}
	return prev, err
}

func ptr[T any](v T) *T { return &v }
