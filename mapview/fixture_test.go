package mapview

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/schedule"
	"github.com/mapthenet/mapthenet/snapshot"
)

// fixtureAsOf is the as-of time of every test snapshot.
var fixtureAsOf = time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)

// writeSnapshot publishes a snapshot with the given domains.parquet and
// link_words.parquet through package snapshot, as a rebuild does, as the
// current one of dataDir, and opens it as the command does. Until the
// layout fills map_x/map_y, this is where positions come from.
func writeSnapshot(t testing.TB, dataDir string, domains []data.DomainRow, words []data.LinkWordRow) *snapshot.Snapshot {
	t.Helper()
	return writeSnapshotEdges(t, dataDir, domains, words, nil)
}

// writeSnapshotEdges is writeSnapshot with an edges.parquet too, when
// edges is not nil.
func writeSnapshotEdges(t testing.TB, dataDir string, domains []data.DomainRow, words []data.LinkWordRow, edges []data.EdgeRow) *snapshot.Snapshot {
	t.Helper()
	id := snapshot.ID(fixtureAsOf)
	d := snapshot.Local(dataDir)
	b, err := snapshot.Begin(d, id)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Abort()
	w, err := b.CreateDomains("")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(domains...); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.WriteLinkWords(words); err != nil {
		t.Fatal(err)
	}
	if edges != nil {
		ew, err := b.CreateEdges()
		if err != nil {
			t.Fatal(err)
		}
		if err := ew.Write(edges...); err != nil {
			t.Fatal(err)
		}
		if err := ew.Close(); err != nil {
			t.Fatal(err)
		}
	}
	m := &data.Manifest{ID: id, AsOf: fixtureAsOf, SchemaVersion: data.SchemaVersion, Tiers: schedule.DefaultTiers,
		Counts: map[string]int64{data.DomainsFile: int64(len(domains))}, CreatedAt: fixtureAsOf}
	if err := b.Commit(m); err != nil {
		t.Fatal(err)
	}
	if err := d.SetCurrent(id); err != nil {
		t.Fatal(err)
	}
	s, err := snapshot.Open(dataDir, "")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// genWeb makes n domains, all placed, in a few clusters (as a force layout
// groups linked sites), ranked 1..n except every tenth unranked, with link
// words for the first hundred. The same n and seed give the same rows.
func genWeb(n int, seed uint64) ([]data.DomainRow, []data.LinkWordRow) {
	rng := rand.New(rand.NewPCG(seed, 42))
	tlds := []string{"com", "org", "net", "de", "fr", "io", "co.uk", "xn--p1ai", "jp", "nl", "neocities.org", "es"}
	ops := []string{"Cloudflare", "Amazon", "Hetzner", "OVH", "Google", "Fastly", "DigitalOcean", "Akamai", "Linode", "Contabo", "Scaleway"}
	type cluster struct{ x, y, r float64 }
	var cl []cluster
	for range 12 {
		cl = append(cl, cluster{rng.NormFloat64() * 40, rng.NormFloat64() * 30, 4 + rng.Float64()*10})
	}
	rows := make([]data.DomainRow, n)
	var words []data.LinkWordRow
	vocab := []string{"news", "blog", "shop", "weather", "music", "forum", "wiki", "recipes", "travel", "games", "code", "photos"}
	ranked := int64(0)
	for i := range rows {
		c := cl[rng.IntN(len(cl))]
		x, y := c.x+rng.NormFloat64()*c.r, c.y+rng.NormFloat64()*c.r
		r := data.DomainRow{
			ID:     int32(i),
			Domain: fmt.Sprintf("site%d.%s", i, tlds[(i*7+i/3)%len(tlds)]),
			MapX:   &x, MapY: &y,
			FirstSeen: fixtureAsOf.Add(-time.Hour),
		}
		if i%10 != 9 {
			ranked++
			rk := ranked
			r.Rank = &rk
			r.Score = 1 / float64(rk)
			// Tiers spread as over a web of 25M domains, so that a small
			// fixture shows every tier's colour.
			r.Tier = int32(schedule.DefaultTiers.For(rk * 25_000_000 / int64(n)).Number)
		} else {
			r.Tier = int32(schedule.DefaultTiers.Lowest().Number)
		}
		if i%5 != 4 {
			op := ops[int(math.Abs(x))%len(ops)]
			r.NetworkOperator = &op
		}
		rows[i] = r
		if i < 100 {
			for k := range 4 {
				words = append(words, data.LinkWordRow{Domain: r.Domain, Word: vocab[(i+k*5)%len(vocab)], Sites: int64(10 - k)})
			}
		}
	}
	return rows, words
}

// genMap makes a Map of n points like genWeb's, directly: the big tests
// need the points, not another pass through Parquet (Load's own tests cover
// that), and building 200,000 rows of pointers costs seconds under -race.
func genMap(n int, seed uint64) *Map {
	rng := rand.New(rand.NewPCG(seed, 42))
	tlds := []string{".com", ".org", ".net", ".de", ".fr", ".io", ".co.uk", ".xn--p1ai", ".jp", ".nl", ".neocities.org", ".es"}
	type cluster struct{ x, y, r float64 }
	cl := make([]cluster, 12)
	for i := range cl {
		cl[i] = cluster{rng.NormFloat64() * 40, rng.NormFloat64() * 30, 4 + rng.Float64()*10}
	}
	m := &Map{Snapshot: fixtureAsOf.Format(data.SnapshotIDLayout), AsOf: fixtureAsOf, Tiers: schedule.DefaultTiers,
		Known: int64(n), Points: make([]Point, n)}
	ranked := int64(0)
	for i := range m.Points {
		c := cl[rng.IntN(len(cl))]
		p := &m.Points[i]
		p.Domain = "site" + strconv.Itoa(i) + tlds[(i*7+i/3)%len(tlds)]
		p.X, p.Y = c.x+rng.NormFloat64()*c.r, c.y+rng.NormFloat64()*c.r
		p.Tier = int32(schedule.DefaultTiers.Lowest().Number)
		if i%10 != 9 {
			ranked++
			p.Rank = ranked
			p.Tier = int32(schedule.DefaultTiers.For(ranked * 25_000_000 / int64(n)).Number)
		}
		if i < 100 {
			p.Words = []string{"news", "blog", "shop"}
		}
	}
	m.MaxRank = ranked
	slices.SortFunc(m.Points, comparePoints)
	return m
}
