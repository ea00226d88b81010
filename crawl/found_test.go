package crawl

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/data"
)

func TestFoundSet(t *testing.T) {
	f := newFoundSet(3)
	type step struct {
		add           string
		isNew, kept   bool
		wantLenAfter  int
		wantPopsAfter []string // pops (min 1) checked at the end only
	}
	for _, s := range []step{
		{"a.test", true, true, 1, nil},
		{"b.test", true, true, 2, nil},
		{"b.test", false, true, 2, nil},
		{"c.test", true, true, 3, nil},
		{"d.test", true, false, 3, nil}, // full: left to the next schedule
		{"c.test", false, true, 3, nil},
		{"c.test", false, true, 3, nil},
	} {
		isNew, kept := f.add(s.add)
		if isNew != s.isNew || kept != s.kept || f.Len() != s.wantLenAfter {
			t.Fatalf("add %s: new %v kept %v len %d; want %v %v %d", s.add, isNew, kept, f.Len(), s.isNew, s.kept, s.wantLenAfter)
		}
	}
	if d, ok := f.pop(4); ok {
		t.Fatalf("pop(4) = %s: no domain has 4 linking domains", d)
	}
	var got []string
	for {
		d, ok := f.pop(1)
		if !ok {
			break
		}
		got = append(got, d)
	}
	// Most linking domains first (c 3, b 2, a 1); each entry once.
	if strings.Join(got, " ") != "c.test b.test a.test" || len(f.index) != 0 {
		t.Fatalf("pops %v, index %v", got, f.index)
	}
	if isNew, kept := f.add("d.test"); !isNew || !kept {
		t.Fatal("room again once taken, but d.test not kept")
	}
}

func TestLinkSetCap(t *testing.T) {
	s := newLinkSet()
	for i := range MaxLinkDomains + 50 {
		d := fmt.Sprintf("d%05d.test", i)
		s.add(d, false, []string{"w"})
		s.onPage(d)
	}
	s.add("d00000.test", false, []string{"again"}) // a target kept still gathers words
	got := s.result(0)
	if len(got) != MaxLinkDomains {
		t.Fatalf("%d targets, want the cap %d", len(got), MaxLinkDomains)
	}
	if got[0].Dst != "d00000.test" || strings.Join(got[0].Words, ",") != "w,again" {
		t.Fatalf("first %+v", got[0])
	}
}

// TestRunFoundBounded: a page naming more new domains than the in-run
// queue holds fills the queue; the rest are in the store, never visited
// and followed-in, for the next schedule (reason new, by linking count).
func TestRunFoundBounded(t *testing.T) {
	w := newWeb(t)
	var links []string
	for i := range 30 {
		d := fmt.Sprintf("n%02d.test", i)
		links = append(links, "https://"+d+"/")
		w.html(d+"/", htmlPage())
	}
	w.html("hostile.test/", htmlPage(links...))
	store := openStore(t)
	opts := w.options()
	opts.Seeds = []string{writeFile(t, "seeds.txt", "hostile.test\n")}
	opts.UntilIdle = true
	opts.MaxFound = 10
	stats, err := Run(context.Background(), store, opts)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Discovered != 10 || stats.Deferred != 20 || stats.Visits != 11 {
		t.Fatalf("stats %+v", stats)
	}
	waiting := 0
	for i := range 30 {
		st, ok, err := store.Domain(fmt.Sprintf("n%02d.test", i))
		if err != nil || !ok {
			t.Fatalf("n%02d.test not in the store: %v", i, err)
		}
		if !st.Visited() {
			if !st.FollowedIn {
				t.Errorf("%s waits without its followed in-link: the schedule would skip it", st.Name)
			}
			waiting++
		}
	}
	if waiting != 20 {
		t.Errorf("%d domains wait in the store, want 20", waiting)
	}
	if stats.Outcomes[data.OutcomeOK] != 11 {
		t.Errorf("outcomes %v", stats.Outcomes)
	}
}

func TestReadDueTop(t *testing.T) {
	now := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	var rows []data.ScheduleRow
	for i := range 50 {
		rows = append(rows, data.ScheduleRow{Domain: fmt.Sprintf("d%02d.test", i), NextVisit: now.Add(-time.Hour), Priority: int64(i % 7)})
	}
	rows = append(rows, data.ScheduleRow{Domain: "later.test", NextVisit: now.Add(time.Hour), Priority: 100})
	writeSnapshot(t, dir, "", now, rows)
	sched, _ := currentSnapshot(dir)
	all, err := ReadDue(sched, now)
	if err != nil || len(all) != 50 {
		t.Fatalf("%d rows, %v", len(all), err)
	}
	top, total, err := ReadDueTop(sched, now, 4, func(d string) bool { return d == "d06.test" })
	if err != nil || total != 49 || len(top) != 4 {
		t.Fatalf("%d of %d rows, %v", len(top), total, err)
	}
	// The same first rows as the whole list, less the one skipped.
	var want []data.ScheduleRow
	for _, r := range all {
		if r.Domain != "d06.test" && len(want) < 4 {
			want = append(want, r)
		}
	}
	for i := range want {
		if top[i].Domain != want[i].Domain {
			t.Fatalf("top %v, want %v", top, want)
		}
	}
}

// TestRunDueBounded: a schedule with more due rows than MaxDue is read in
// parts, and every row is visited, most linked first.
func TestRunDueBounded(t *testing.T) {
	w := newWeb(t)
	now := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	var rows []data.ScheduleRow
	for i := range 12 {
		d := fmt.Sprintf("n%02d.test", i)
		w.html(d+"/", htmlPage())
		rows = append(rows, data.ScheduleRow{Domain: d, NextVisit: now, Pages: 1, Reason: data.ReasonNew, Priority: int64(i)})
	}
	writeSnapshot(t, dir, "", now, rows)
	store := openStore(t)
	opts := w.options()
	opts.DataDir, opts.Now, opts.UntilIdle = dir, now, true
	opts.MaxDue, opts.SitesInFlight = 5, 1
	stats, err := Run(context.Background(), store, opts)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Visits != 12 || stats.Due != 5 {
		t.Fatalf("%+v", stats)
	}
	// One at a time: the home pages were asked for by priority.
	var homes []string
	for _, r := range w.requests() {
		if strings.HasSuffix(r, " /") {
			homes = append(homes, strings.Fields(r)[0])
		}
	}
	if len(homes) != 12 || homes[0] != "n11.test" || homes[11] != "n00.test" {
		t.Fatalf("order %v", homes)
	}
}
