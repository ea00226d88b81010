package mapview

import "testing"

func TestLabeler(t *testing.T) {
	l := labeler{frame: rect{0, 0, 100, 100}}
	l.block(rect{0, 0, 30, 30}) // a legend
	for _, tc := range []struct {
		name  string
		cands []rect
		want  int
	}{
		{"free", []rect{{40, 40, 60, 50}}, 0},
		{"overlaps the first label: second choice", []rect{{50, 45, 70, 55}, {70, 45, 90, 55}}, 1},
		{"under the legend", []rect{{10, 10, 20, 20}}, -1},
		{"outside the frame", []rect{{90, 90, 110, 95}}, -1},
		{"touching edges do not overlap", []rect{{60, 40, 70, 50}}, 0},
		{"nothing fits", []rect{{41, 41, 59, 49}, {71, 46, 89, 54}}, -1},
	} {
		if got := l.place(tc.cands); got != tc.want {
			t.Errorf("%s: placed %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestPNGLabelsDoNotOverlap draws a crowded map and checks, through the
// labeler's record, that no two labels overlap and none leaves the frame.
func TestPNGLabelsDoNotOverlap(t *testing.T) {
	m := testMap(t, 500)
	p := newPainter(m, PNGOptions{Width: 600, Height: 400, Labels: 200})
	blocked := len(p.lab.taken)
	p.labels()
	// taken holds the legend, caption, 200 point boxes, then the labels.
	taken := p.lab.taken
	labels := taken[blocked+200:]
	if len(labels) < 5 {
		t.Fatalf("only %d labels placed", len(labels))
	}
	for i, a := range labels {
		if !a.inside(p.lab.frame) {
			t.Errorf("label %d %+v leaves the frame", i, a)
		}
		for j, b := range taken[:blocked+200+i] {
			if a.overlaps(b) {
				t.Errorf("label %d %+v overlaps box %d %+v", i, a, j, b)
			}
		}
	}
}
