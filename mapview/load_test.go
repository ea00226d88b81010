package mapview

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/mapthenet/mapthenet/data"
)

func f64(v float64) *float64 { return &v }
func i64(v int64) *int64     { return &v }
func str(v string) *string   { return &v }

func TestLoad(t *testing.T) {
	rows := []data.DomainRow{
		{ID: 0, Domain: "c.example", Rank: i64(2), Tier: 1, MapX: f64(1), MapY: f64(2), NetworkOperator: str("Hetzner")},
		{ID: 1, Domain: "a.example", Rank: i64(1), Tier: 1, MapX: f64(-1), MapY: f64(0)},
		{ID: 2, Domain: "unplaced.example", Rank: i64(3), Tier: 1},                                 // no position
		{ID: 3, Domain: "half.example", Rank: i64(4), Tier: 1, MapX: f64(3)},                       // half a position
		{ID: 4, Domain: "nan.example", Rank: i64(5), Tier: 1, MapX: f64(math.NaN()), MapY: f64(0)}, // not finite
		{ID: 5, Domain: "z.example", Tier: 6, MapX: f64(5), MapY: f64(5)},                          // unranked
		{ID: 6, Domain: "b.example", Tier: 6, MapX: f64(0), MapY: f64(-5)},                         // unranked
	}
	words := []data.LinkWordRow{
		{Domain: "a.example", Word: "zebra", Sites: 5},
		{Domain: "a.example", Word: "apple", Sites: 5},
		{Domain: "a.example", Word: "top", Sites: 9},
		{Domain: "a.example", Word: "dropped", Sites: 3},
		{Domain: "unplaced.example", Word: "never", Sites: 50},
	}
	m, err := Load(writeSnapshot(t, t.TempDir(), rows, words), DefaultWords)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range m.Points {
		got = append(got, p.Domain)
	}
	if want := []string{"a.example", "c.example", "b.example", "z.example"}; !slices.Equal(got, want) {
		t.Errorf("points %q, want %q (by rank, unranked last by name, only placed ones)", got, want)
	}
	if w := m.Points[0].Words; !slices.Equal(w, []string{"top", "apple", "zebra"}) {
		t.Errorf("a.example's words %q, want the three most used, ties by word", w)
	}
	if m.Points[1].Operator != "Hetzner" || m.Points[0].Operator != "" {
		t.Errorf("operators %q %q", m.Points[1].Operator, m.Points[0].Operator)
	}
	if m.Known != 7 || m.MaxRank != 2 || m.Snapshot != "2026-12-01T030000Z" || !m.AsOf.Equal(fixtureAsOf) {
		t.Errorf("known %d, max rank %d, snapshot %s as of %v", m.Known, m.MaxRank, m.Snapshot, m.AsOf)
	}
	if b := m.bounds(); b != (bounds{-1, -5, 5, 5}) {
		t.Errorf("bounds %+v", b)
	}
}

func TestLoadNoPlacedDomains(t *testing.T) {
	for name, rows := range map[string][]data.DomainRow{
		"empty":    nil,
		"unplaced": {{ID: 0, Domain: "a.example", Rank: i64(1)}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Load(writeSnapshot(t, t.TempDir(), rows, nil), DefaultWords)
			if !errors.Is(err, ErrNoPlacedDomains) {
				t.Errorf("got %v, want ErrNoPlacedDomains", err)
			}
		})
	}
}

func TestSizeWeight(t *testing.T) {
	m := &Map{MaxRank: 1000}
	prev := 2.0
	for _, r := range []int64{1, 2, 10, 100, 999, 1000} {
		w := m.sizeWeight(r)
		if w < 0 || w > 1 || w >= prev {
			t.Errorf("rank %d: weight %v after %v (want decreasing in [0, 1])", r, w, prev)
		}
		prev = w
	}
	if w := m.sizeWeight(0); w != 0 {
		t.Errorf("unranked weight %v", w)
	}
	if w := (&Map{MaxRank: 1}).sizeWeight(1); w != 1 {
		t.Errorf("a lone rank 1 weighs %v", w)
	}
}
