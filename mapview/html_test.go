package mapview

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mapthenet/mapthenet/schedule"
)

const dataOpen = `<script type="application/json" id="mapdata">`

// pageDataOf cuts the data element out of a page and decodes it.
func pageDataOf(t testing.TB, page string) (pageData, string) {
	t.Helper()
	i := strings.Index(page, dataOpen)
	if i < 0 {
		t.Fatal("the page has no data element")
	}
	rest := page[i+len(dataOpen):]
	j := strings.Index(rest, "</script>")
	if j < 0 {
		t.Fatal("the data element is not closed")
	}
	raw := rest[:j]
	var d pageData
	if err := json.Unmarshal([]byte(raw), &d); err != nil {
		t.Fatalf("the data element is not JSON: %v", err)
	}
	return d, raw
}

func tinyMap() *Map {
	return &Map{
		Snapshot: "2026-12-01T030000Z", AsOf: fixtureAsOf, Tiers: schedule.DefaultTiers, Known: 5, MaxRank: 2,
		Points: []Point{
			{Domain: "a.example", X: 0, Y: 0, Rank: 1, Tier: 1, Words: []string{"news", "daily"}},
			{Domain: "b.example", X: 2, Y: 1, Rank: 2, Tier: 2},
			{Domain: "xn--bcher-kva.example", X: -2, Y: -1, Tier: 6, Operator: "Hetzner", Words: []string{"bücher"}},
		},
	}
}

// TestWriteHTMLData checks the page's embedded data against a golden file
// (testdata/page-data.golden.json; -update rewrites it).
func TestWriteHTMLData(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteHTML(&buf, tinyMap(), HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	d, _ := pageDataOf(t, page)
	got, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "page-data.golden.json")
	if *update {
		if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if string(want) != string(got)+"\n" {
		t.Errorf("page data differs from %s:\n%s", golden, got)
	}
	// The columns decode to what the points hold.
	xy, _ := base64.StdEncoding.DecodeString(d.XY)
	ranks, _ := base64.StdEncoding.DecodeString(d.Ranks)
	if len(xy) != 3*8 || len(ranks) != 3*4 || len(d.Names) != 3 {
		t.Errorf("columns: %d xy bytes, %d rank bytes, %d names", len(xy), len(ranks), len(d.Names))
	}
	for _, want := range []string{"<title>mapthenet map · 2026-12-01 03:00 UTC</title>", "snapshot 2026-12-01T030000Z"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// Self-contained: nothing to load from elsewhere.
	for _, ref := range []string{"src=", "href=", "url(", "@import", "fetch(", "XMLHttpRequest", "import("} {
		if strings.Contains(page, ref) {
			t.Errorf("the page refers to something outside itself: %q", ref)
		}
	}
}

func TestWriteHTMLMaxPoints(t *testing.T) {
	var buf bytes.Buffer
	m := tinyMap()
	if err := WriteHTML(&buf, m, HTMLOptions{MaxPoints: 2}); err != nil {
		t.Fatal(err)
	}
	d, _ := pageDataOf(t, buf.String())
	if len(d.Names) != 2 || d.Names[1] != "b.example" || d.Placed != 3 || d.MaxRank != 2 {
		t.Errorf("cut page: names %q, placed %d, max rank %d", d.Names, d.Placed, d.MaxRank)
	}
	if len(m.Points) != 3 {
		t.Error("cutting the page changed the map")
	}
}

func TestWriteHTMLNoPoints(t *testing.T) {
	if err := WriteHTML(&bytes.Buffer{}, &Map{}, HTMLOptions{}); err != ErrNoPlacedDomains {
		t.Errorf("got %v", err)
	}
}

// checkPageSafe is what no outside string may break: the page has exactly
// its two script elements, the data element holds no '<' at all (so no
// "</script" nor "<!--" that would change how HTML parses the script), and
// the strings come back out of it unchanged.
func checkPageSafe(t testing.TB, m *Map) {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteHTML(&buf, m, HTMLOptions{Color: ColorOperator}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if n := strings.Count(strings.ToLower(page), "</script"); n != 2 {
		t.Fatalf("the page has %d </script, want 2", n)
	}
	d, raw := pageDataOf(t, page)
	if strings.ContainsAny(raw, "<>&\u2028\u2029") {
		t.Fatalf("the data element holds a raw <, >, & or line separator")
	}
	for i, p := range m.Points {
		if utf8.ValidString(p.Domain) && d.Names[i] != p.Domain {
			t.Errorf("name %q came back as %q", p.Domain, d.Names[i])
		}
	}
	for _, w := range d.Words {
		i := int(w[0].(float64))
		if want := strings.Join(m.Points[i].Words, ", "); utf8.ValidString(want) && w[1] != want {
			t.Errorf("words %q came back as %q", want, w[1])
		}
	}
}

func TestWriteHTMLHostileText(t *testing.T) {
	for _, s := range []string{
		"</script><script>alert(1)</script>", "</SCRIPT >", "<!--<script>", "]]>", "\u2028\u2029",
		`"; alert(1); "`, "{{.Data}}", "&lt;", "\x00", "\xff\xfe",
	} {
		m := tinyMap()
		m.Points[0].Domain = s
		m.Points[1].Words = []string{s}
		m.Points[2].Operator = s
		checkPageSafe(t, m)
	}
}

func FuzzWriteHTML(f *testing.F) {
	f.Add("a.example", "news", "Hetzner")
	f.Add("</script><script>alert(1)</script>", "<!--", "</script")
	f.Add("x\u2028y", "\xff", "&amp;")
	f.Fuzz(func(t *testing.T, domain, word, operator string) {
		m := tinyMap()
		m.Points[0].Domain = domain
		m.Points[1].Words = []string{word}
		m.Points[2].Operator = operator
		checkPageSafe(t, m)
	})
}
