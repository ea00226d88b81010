package mapview

import (
	"fmt"
	"slices"
	"testing"

	"github.com/mapthenet/mapthenet/data"
)

func TestColors(t *testing.T) {
	var m Map
	m.Tiers = data.DefaultTiers
	add := func(n int, domain, op string, tier int32) {
		for i := range n {
			m.Points = append(m.Points, Point{Domain: fmt.Sprintf("%d%s", i, domain), Operator: op, Tier: tier})
		}
	}
	add(5, ".example.com", "Hetzner", 1)
	add(3, ".example.org", "", 6)
	add(3, ".example.de", "OVH", 9) // a tier the table lacks: the last one
	for i := range 10 {             // ten more TLDs of one domain each: only some get a colour
		add(1, fmt.Sprintf(".t%02d", i), fmt.Sprintf("Op%02d", i), 2)
	}

	// Only the tiers present, with their counts; tier 9 is not in the
	// table and counts as the last.
	tier := m.colors(ColorTier)
	var labels []string
	for _, e := range tier.Legend {
		labels = append(labels, e.Label)
	}
	if want := []string{"tier 1: rank 1–100k (5)", "tier 2: rank 100k–500k (10)", "tier 6: rank above 20M, unranked (6)"}; !slices.Equal(labels, want) {
		t.Errorf("tier legend %q, want %q", labels, want)
	}
	if tier.Legend[2].Color != tierPalette[5] {
		t.Errorf("tier 6 is coloured %v", tier.Legend[2].Color)
	}
	if tier.Index[0] != 0 || tier.Index[5] != 2 || tier.Index[8] != 2 || tier.Index[11] != 1 {
		t.Errorf("tier index %v", tier.Index)
	}

	tlds := m.colors(ColorTLD)
	if len(tlds.Legend) != len(categoryPalette)+1 {
		t.Fatalf("tld legend has %d entries, want %d colours and other", len(tlds.Legend), len(categoryPalette))
	}
	if tlds.Legend[0].Label != ".com (5)" || tlds.Legend[1].Label != ".de (3)" || tlds.Legend[2].Label != ".org (3)" {
		t.Errorf("tld legend starts %+v", tlds.Legend[:3])
	}
	if last := tlds.Legend[len(tlds.Legend)-1]; last.Label != "other TLDs (4)" || last.Color != otherColor {
		t.Errorf("tld legend ends %+v", last)
	}
	if tlds.Index[len(m.Points)-1] != uint8(len(tlds.Legend)-1) {
		t.Errorf("the last TLD is not other: %v", tlds.Index)
	}

	ops := m.colors(ColorOperator)
	if ops.Legend[0].Label != "Hetzner (5)" || ops.Legend[1].Label != "(unknown) (3)" {
		t.Errorf("operator legend %+v", ops.Legend)
	}
}

func TestParseColorBy(t *testing.T) {
	for _, s := range []string{"tier", "tld", "operator"} {
		if c, err := ParseColorBy(s); err != nil || string(c) != s {
			t.Errorf("%q: %v %v", s, c, err)
		}
	}
	for _, s := range []string{"", "Tier", "rank"} {
		if _, err := ParseColorBy(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

func TestShortCount(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1k", 100_000: "100k", 2_500_000: "2.5M", 20_000_000: "20M", 12345: "12345", 1500: "1.5k"} {
		if got := shortCount(n); got != want {
			t.Errorf("shortCount(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestColorsCommunity(t *testing.T) {
	var m Map
	m.Tiers = data.DefaultTiers
	// Points come best rank first: a community's first points name it.
	add := func(n int, comm int32, prefix string) {
		for i := range n {
			m.Points = append(m.Points, Point{Domain: fmt.Sprintf("%s%d.example", prefix, i), Community: comm})
		}
	}
	add(2, 7, "small")
	add(5, 3, "big")
	add(1, -1, "none")
	for k := range len(communityPalette) { // more communities than colours
		add(1, int32(100+k), fmt.Sprintf("c%d-", k))
	}
	by, legend, index := m.Coloring(ColorCommunity)
	if by != ColorCommunity {
		t.Fatalf("coloured by %q", by)
	}
	if want := "big0.example, big1.example, big2.example (5)"; legend[0].Label != want {
		t.Errorf("biggest community's legend %q, want %q", legend[0].Label, want)
	}
	if want := "small0.example, small1.example (2)"; legend[1].Label != want {
		t.Errorf("second community's legend %q, want %q", legend[1].Label, want)
	}
	last := legend[len(legend)-1]
	if len(legend) != len(communityPalette)+1 || last.Color != otherColor || last.Label != "other communities (3)" {
		t.Errorf("legend has %d entries, last %+v", len(legend), last)
	}
	if index[0] != 1 || index[2] != 0 || index[7] != uint8(len(legend)-1) {
		t.Errorf("index %v", index[:8])
	}
	if _, err := ParseColorBy("community"); err != nil {
		t.Error(err)
	}
}
