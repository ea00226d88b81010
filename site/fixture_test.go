package site

import (
	"cmp"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graphgen"
	"github.com/mapthenet/mapthenet/schedule"
	"github.com/mapthenet/mapthenet/snapshot"
)

// fixtureAsOf is the as-of time of the first test snapshot.
var fixtureAsOf = time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)

// fixture describes a snapshot made from a graphgen graph.
type fixture struct {
	cfg  graphgen.Config
	asOf time.Time
	prev string // the previous snapshot's id, for the manifest
}

// world is what a fixture wrote, for tests to check against.
type world struct {
	id      string
	names   []string // by graphgen id
	rank    []int64  // 0: unranked
	placed  []bool
	outs    [][]uint32 // by graphgen id
	nofol   map[[2]uint32]bool
	ranked  []uint32 // ids best first
	visited []uint32 // ids with visits
}

// writeFixture writes a complete snapshot of a graphgen graph into
// dataDir's rebuilds/<id>/ and points current at it, as a rebuild would:
// ranks by followed in-degree (ties by name), positions around planted
// community centres, link words, visits and a schedule. The same fixture
// gives the same files.
func writeFixture(tb testing.TB, dataDir string, fx fixture) *world {
	tb.Helper()
	if fx.asOf.IsZero() {
		fx.asOf = fixtureAsOf
	}
	if fx.cfg.Communities == 0 {
		fx.cfg.Communities = 12
	}
	g, err := graphgen.New(fx.cfg)
	if err != nil {
		tb.Fatal(err)
	}
	n := g.Domains()
	w := &world{id: fx.asOf.Format(data.SnapshotIDLayout), names: make([]string, n), rank: make([]int64, n),
		placed: make([]bool, n), outs: make([][]uint32, n), nofol: map[[2]uint32]bool{}}
	for i := range n {
		w.names[i] = g.Name(uint32(i))
	}
	in := make([]int32, n)
	linked := make([]bool, n)
	dir := filepath.Join(dataDir, snapshot.DirName, w.id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	// Edges, in (src_id, dst_id) order as the rebuild writes them.
	ew := newParquetWriter[data.EdgeRow](tb, filepath.Join(dir, data.EdgesFile), parquet.MaxRowsPerRowGroup(1<<20),
		parquet.DictionaryMaxBytes(8<<20))
	var batch []data.EdgeRow
	var cur uint32 = math.MaxUint32
	var pending []data.EdgeRow
	flushSrc := func() {
		slices.SortFunc(pending, func(a, b data.EdgeRow) int { return cmp.Compare(a.DstID, b.DstID) })
		batch = append(batch, pending...)
		pending = pending[:0]
		if len(batch) >= 8192 {
			ew.write(batch)
			batch = batch[:0]
		}
	}
	err = g.Edges(func(src, dst uint32, nofollow bool) error {
		if src != cur {
			flushSrc()
			cur = src
		}
		pending = append(pending, data.EdgeRow{Src: w.names[src], Dst: w.names[dst], SrcID: int32(src), DstID: int32(dst),
			FirstSeen: fx.asOf.Add(-30 * 24 * time.Hour), LastSeen: fx.asOf.Add(-time.Hour), Nofollow: nofollow, Sitewide: (src+dst)%11 == 0})
		if n <= 100_000 { // the big fixtures are for benchmarks, which check nothing per link
			w.outs[src] = append(w.outs[src], dst)
			if nofollow {
				w.nofol[[2]uint32{src, dst}] = true
			}
		}
		if !nofollow {
			in[dst]++
			linked[src], linked[dst] = true, true
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	flushSrc()
	ew.write(batch)
	ew.close()

	// Ranks: followed in-degree, then name.
	for i := range n {
		if in[i] > 0 {
			w.ranked = append(w.ranked, uint32(i))
		}
	}
	slices.SortFunc(w.ranked, func(a, b uint32) int {
		if c := cmp.Compare(in[b], in[a]); c != 0 {
			return c
		}
		return cmp.Compare(w.names[a], w.names[b])
	})
	for k, id := range w.ranked {
		w.rank[id] = int64(k + 1)
	}

	// Domains, with positions around the planted communities' centres.
	golden := math.Pi * (3 - math.Sqrt(5))
	dw := newParquetWriter[data.DomainRow](tb, filepath.Join(dir, data.DomainsFile))
	rows := make([]data.DomainRow, 0, 4096)
	ops := []string{"Cloudflare", "Amazon", "Hetzner", "OVH", "Google"}
	outcomes := []string{"ok", "ok", "ok", "partial", "timeout"}
	for i := range n {
		id := uint32(i)
		rng := rand.New(rand.NewPCG(uint64(i), 7))
		r := data.DomainRow{ID: int32(i), Domain: w.names[i], InDomains: int64(in[i]), OutDomains: int64(g.OutDegree(id)),
			FirstSeen: fx.asOf.Add(-time.Duration(i%300) * 24 * time.Hour), OptedOut: i%97 == 5}
		r.Tier = int32(schedule.DefaultTiers.Lowest().Number)
		if rk := w.rank[i]; rk > 0 {
			r.Rank = &rk
			r.Score = 1 / float64(rk+10)
			r.Tier = int32(schedule.DefaultTiers.For(rk).Number)
			if i%5 != 0 {
				prev := max(1, rk+int64(i%21)-10)
				r.PrevRank = &prev
			}
		}
		t := schedule.DefaultTiers.For(max(w.rank[i], 0))
		r.RevisitDays, r.PagesPerVisit = int32(t.RevisitDays), int32(t.Pages)
		if linked[i] {
			c := int32(g.Community(id))
			r.Community = &c
			a := float64(c) * golden
			rad := 40 * math.Sqrt(float64(c)+0.5)
			x := rad*math.Cos(a) + rng.NormFloat64()*8
			y := rad*math.Sin(a) + rng.NormFloat64()*8
			r.MapX, r.MapY = &x, &y
			w.placed[i] = true
		}
		if i%3 == 0 {
			last := fx.asOf.Add(-time.Duration(i%10+1) * time.Hour)
			next := fx.asOf.Add(time.Duration(i%10+1) * 24 * time.Hour)
			status := int32(200)
			outcome := outcomes[i%len(outcomes)]
			https, ipv6 := i%2 == 0, i%4 == 0
			asn := int64(13335 + i%5)
			op := ops[i%len(ops)]
			r.LastVisit, r.NextVisit, r.LastStatus, r.LastOutcome = &last, &next, &status, &outcome
			r.HTTPS, r.IPv6, r.ASN, r.NetworkOperator = &https, &ipv6, &asn, &op
			w.visited = append(w.visited, id)
		}
		rows = append(rows, r)
		if len(rows) == cap(rows) {
			dw.write(rows)
			rows = rows[:0]
		}
	}
	dw.write(rows)
	dw.close()

	// Visits (by domain, then time), link words, schedule.
	vw := newParquetWriter[data.VisitRow](tb, filepath.Join(dir, data.VisitsFile))
	var visits []data.VisitRow
	for _, id := range w.visited {
		for k := range 1 + int(id)%3 {
			start := fx.asOf.Add(-time.Duration(int(id)%10+1)*time.Hour - time.Duration(2-k)*10*24*time.Hour)
			v := data.VisitRow{Domain: w.names[id], StartedAt: start, FinishedAt: start.Add(time.Minute), Outcome: "ok",
				HTTPStatus: 200, Pages: int32(5 + k), Bytes: int64(10000 * (k + 1))}
			if k == 0 && id%2 == 1 {
				e := "connection refused"
				v.Outcome, v.HTTPStatus, v.Pages, v.Error = "connect_error", 0, 0, &e
			}
			visits = append(visits, v)
		}
		if len(visits) > 8192 {
			vw.write(visits)
			visits = visits[:0]
		}
	}
	vw.write(visits)
	vw.close()

	var words []data.LinkWordRow
	vocab := []string{"news", "blog", "shop", "music", "forum", "wiki"}
	for _, id := range w.ranked[:min(len(w.ranked), 1000)] {
		for k := range 3 {
			words = append(words, data.LinkWordRow{Domain: w.names[id], Word: vocab[(int(id)+k)%len(vocab)], Sites: int64(10 - k)})
		}
	}
	writeParquetFile(tb, filepath.Join(dir, data.LinkWordsFile), words)

	sw := newParquetWriter[data.ScheduleRow](tb, filepath.Join(dir, data.ScheduleFile))
	var sched []data.ScheduleRow
	for i := range n {
		if w.rank[i] == 0 && i%3 != 0 {
			continue
		}
		reason := data.ReasonRevisit
		if i%3 != 0 {
			reason = data.ReasonNew
		}
		t := schedule.DefaultTiers.For(w.rank[i])
		sched = append(sched, data.ScheduleRow{Domain: w.names[i], NextVisit: fx.asOf.Add(time.Duration(i%10+1) * 24 * time.Hour),
			Tier: int32(t.Number), Pages: int32(t.Pages), Reason: reason, Priority: int64(in[i])})
		if len(sched) > 8192 {
			sw.write(sched)
			sched = sched[:0]
		}
	}
	sw.write(sched)
	sw.close()

	m := data.Manifest{ID: w.id, AsOf: fx.asOf, SchemaVersion: data.SchemaVersion, Previous: fx.prev, Tiers: schedule.DefaultTiers,
		Counts: map[string]int64{"domains": int64(n), "edges": g.NumEdges()}, CreatedAt: fx.asOf}
	raw, err := json.Marshal(m)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, data.ManifestFile), raw, 0o644); err != nil {
		tb.Fatal(err)
	}
	pointCurrent(tb, dataDir, w.id)
	return w
}

// pointCurrent moves rebuilds/current to id atomically, as rebuild does.
func pointCurrent(tb testing.TB, dataDir, id string) {
	tb.Helper()
	dir := filepath.Join(dataDir, snapshot.DirName)
	tmp := filepath.Join(dir, ".tmp-current")
	if err := os.Symlink(id, tmp); err != nil {
		tb.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, snapshot.CurrentName)); err != nil {
		tb.Fatal(err)
	}
}

type parquetWriter[T any] struct {
	tb testing.TB
	f  *os.File
	w  *parquet.GenericWriter[T]
}

// newParquetWriter writes a snapshot file as rebuild does (its row groups,
// zstd at its fastest level; edges.parquet passes its own row groups and
// dictionary limit as opts), so that what the server reads in the tests
// and benchmarks is what it reads in production.
func newParquetWriter[T any](tb testing.TB, path string, opts ...parquet.WriterOption) *parquetWriter[T] {
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	opts = append([]parquet.WriterOption{parquet.MaxRowsPerRowGroup(122_880), parquet.DataPageStatistics(true),
		parquet.Compression(&zstd.Codec{Level: zstd.SpeedFastest})}, opts...)
	return &parquetWriter[T]{tb: tb, f: f, w: parquet.NewGenericWriter[T](f, opts...)}
}

func (p *parquetWriter[T]) write(rows []T) {
	if _, err := p.w.Write(rows); err != nil {
		p.tb.Fatal(err)
	}
}

func (p *parquetWriter[T]) close() {
	if err := p.w.Close(); err != nil {
		p.tb.Fatal(err)
	}
	if err := p.f.Close(); err != nil {
		p.tb.Fatal(err)
	}
}

func writeParquetFile[T any](tb testing.TB, path string, rows []T) {
	w := newParquetWriter[T](tb, path)
	w.write(rows)
	w.close()
}

// smallWorld is the fixture most tests share: 3,000 domains, 30,000 links.
var smallWorld = fixture{cfg: graphgen.Config{Domains: 3000, Edges: 30_000, Seed: 3, Communities: 12}}

func TestLoadIndex(t *testing.T) {
	dir := t.TempDir()
	w := writeFixture(t, dir, smallWorld)
	src, err := openSource(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	ix, err := loadIndex(src, mapOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ix.Len() != 3000 || ix.ID != w.id {
		t.Fatalf("index of %d domains, id %s", ix.Len(), ix.ID)
	}
	// Every domain's out-links are its graph's, best-ranked target first,
	// with the nofollow flag; in-links mirror them.
	for id := range 3000 {
		r := ix.Find(w.names[id])
		if r < 0 {
			t.Fatalf("%s not found", w.names[id])
		}
		got := ix.outTo[ix.outOff[r]:ix.outOff[r+1]]
		if len(got) != len(w.outs[id]) {
			t.Fatalf("%s: %d out-links, want %d", w.names[id], len(got), len(w.outs[id]))
		}
		for k, l := range got {
			d := int32(l & linkRow)
			if k > 0 && ix.posOf[d] < ix.posOf[got[k-1]&linkRow] {
				t.Fatalf("%s: out-links not best-ranked first", w.names[id])
			}
			dstID := ix.storeID[d]
			if want := w.nofol[[2]uint32{uint32(id), uint32(dstID)}]; (l&linkNofollow != 0) != want {
				t.Fatalf("%s→%s nofollow %v, want %v", w.names[id], ix.name(d), !want, want)
			}
		}
	}
	if int64(len(ix.inFrom)) != ix.edges || ix.edges != 30_000 || ix.skipped != 0 {
		t.Errorf("%d in-links, %d edges, %d skipped", len(ix.inFrom), ix.edges, ix.skipped)
	}
	for k, r := range ix.byRank[:100] {
		if int(ix.rank[r]) != k+1 {
			t.Fatalf("byRank[%d] has rank %d", k, ix.rank[r])
		}
	}
	if ix.Find("nowhere.example") != -1 {
		t.Error("found a domain that is not there")
	}
}
