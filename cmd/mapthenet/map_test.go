package main

import (
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/schedule"
	"github.com/mapthenet/mapthenet/snapshot"
)

// writeMapSnapshot publishes a snapshot with the given domains, a ring of
// links between them (and no other files than map reads) as the current
// one of dataDir.
func writeMapSnapshot(t *testing.T, dataDir string, rows []data.DomainRow) {
	t.Helper()
	id := snapshot.ID(testNow)
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
	if err := w.Write(rows...); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ew, err := b.CreateEdges()
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows { // a ring of links: 0 → 1 → … → 0
		j := (i + 1) % len(rows)
		if err := ew.Write(data.EdgeRow{Src: rows[i].Domain, Dst: rows[j].Domain, SrcID: rows[i].ID, DstID: rows[j].ID, FirstSeen: testNow, LastSeen: testNow}); err != nil {
			t.Fatal(err)
		}
	}
	if err := ew.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.WriteLinkWords([]data.LinkWordRow{{Domain: "a.example", Word: "news", Sites: 4}}); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(&data.Manifest{ID: id, AsOf: testNow, SchemaVersion: data.SchemaVersion, Tiers: schedule.DefaultTiers}); err != nil {
		t.Fatal(err)
	}
	if err := d.SetCurrent(id); err != nil {
		t.Fatal(err)
	}
}

func placedRows(placed bool) []data.DomainRow {
	var rows []data.DomainRow
	for i, name := range []string{"a.example", "b.example", "c.example", "d.example"} {
		r := data.DomainRow{ID: int32(i), Domain: name, Tier: 1, FirstSeen: testNow}
		rank := int64(i + 1)
		r.Rank = &rank
		if placed {
			x, y := float64(i), float64(i*i)
			r.MapX, r.MapY = &x, &y
		}
		rows = append(rows, r)
	}
	return rows
}

func TestMapCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeMapSnapshot(t, dir, placedRows(true))
	pngPath, htmlPath := filepath.Join(dir, "out.png"), filepath.Join(dir, "out.html")
	code, out, errOut := runIn(t, dir, "map", "--png", pngPath, "--html", htmlPath, "--width", "640", "--height", "480", "--color", "tld")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"wrote " + pngPath + ": 640×480 picture of 4 placed domains", "wrote " + htmlPath + ": page of 4 placed domains"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	f, err := os.Open(pngPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil || cfg.Width != 640 || cfg.Height != 480 {
		t.Errorf("picture %dx%d, %v", cfg.Width, cfg.Height, err)
	}
	page, err := os.ReadFile(htmlPath)
	if err != nil || !strings.Contains(string(page), `"c.example"`) || !strings.Contains(string(page), "news") {
		t.Errorf("page lacks the domains or link words (%v)", err)
	}
}

func TestMapCommandHTMLPoints(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeMapSnapshot(t, dir, placedRows(true))
	htmlPath := filepath.Join(dir, "top.html")
	code, out, errOut := runIn(t, dir, "map", "--html", htmlPath, "--html-points", "2")
	if code != 0 || !strings.Contains(out, "page of the top 2 of 4 placed domains") {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	page, _ := os.ReadFile(htmlPath)
	if !strings.Contains(string(page), `"b.example"`) || strings.Contains(string(page), `"c.example"`) {
		t.Error("the page does not hold exactly the top 2")
	}
}

func TestMapCommandErrors(t *testing.T) {
	t.Parallel()
	empty := t.TempDir()
	unplaced := t.TempDir()
	writeMapSnapshot(t, unplaced, placedRows(false))
	out := func(dir string) string { return filepath.Join(dir, "m.png") }
	for _, tc := range []struct {
		name string
		dir  string
		args []string
		code int
		want string
	}{
		{"no output", empty, []string{"map"}, exitUsage, "give --png FILE, --html FILE or both"},
		{"bad colour", empty, []string{"map", "--png", out(empty), "--color", "rank"}, exitUsage, "want community, tier, tld or operator"},
		{"too small", empty, []string{"map", "--png", out(empty), "--width", "10"}, exitUsage, "each side must be"},
		{"negative points", empty, []string{"map", "--html", out(empty), "--html-points", "-5"}, exitUsage, "--html-points -5"},
		{"negative labels", empty, []string{"map", "--png", out(empty), "--labels", "-1"}, exitUsage, "--labels -1"},
		{"argument", empty, []string{"map", "--png", out(empty), "extra"}, exitUsage, "unknown command"},
		{"no snapshot", empty, []string{"map", "--png", out(empty)}, exitFailure, "no snapshot yet"},
		{"unknown snapshot", unplaced, []string{"map", "--png", out(unplaced), "--snapshot", "2020-01-01T000000Z"}, exitFailure, "does not exist"},
		{"nothing placed", unplaced, []string{"map", "--html", out(unplaced)}, exitFailure, "no placed domains"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runIn(t, tc.dir, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d (want %d), stderr %q (want %q)", code, tc.code, errOut, tc.want)
			}
			if _, err := os.Stat(out(tc.dir)); !os.IsNotExist(err) {
				t.Errorf("a failed map left %s (%v)", out(tc.dir), err)
			}
		})
	}
}

func TestMapHelp(t *testing.T) {
	t.Parallel()
	code, out, _ := runIn(t, t.TempDir(), "map", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"mapthenet map --png map.png", "--color", "--labels", "self-contained"} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %q", want)
		}
	}
}
