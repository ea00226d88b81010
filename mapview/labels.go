package mapview

// rect is an axis-aligned box in pixels: x0 <= x1, y0 <= y1.
type rect struct{ x0, y0, x1, y1 float64 }

func (r rect) overlaps(o rect) bool {
	return r.x0 < o.x1 && o.x0 < r.x1 && r.y0 < o.y1 && o.y0 < r.y1
}

func (r rect) inside(o rect) bool {
	return r.x0 >= o.x0 && r.y0 >= o.y0 && r.x1 <= o.x1 && r.y1 <= o.y1
}

// labeler places labels greedily: each label takes the first of its
// candidate boxes that stays inside the frame and overlaps nothing taken
// so far, or is dropped. Callers offer labels best rank first, so the top
// domains are the ones labelled. A linear scan per candidate is enough for
// the few hundred labels a picture can hold.
type labeler struct {
	frame rect
	taken []rect
}

// block marks a box no label may cover (the legend, the caption, a point).
func (l *labeler) block(r rect) { l.taken = append(l.taken, r) }

// place returns the index of the candidate taken, or -1.
func (l *labeler) place(cands []rect) int {
next:
	for i, c := range cands {
		if !c.inside(l.frame) {
			continue
		}
		for _, t := range l.taken {
			if c.overlaps(t) {
				continue next
			}
		}
		l.taken = append(l.taken, c)
		return i
	}
	return -1
}

// labelCandidates are the boxes a label of size w×h may take beside a
// point at (x, y) of radius r: right, left, above, below, in that order.
// gap separates the text from the point.
func labelCandidates(x, y, r, w, h, gap float64) []rect {
	d := r + gap
	return []rect{
		{x + d, y - h/2, x + d + w, y + h/2},
		{x - d - w, y - h/2, x - d, y + h/2},
		{x - w/2, y - d - h, x + w/2, y - d},
		{x - w/2, y + d, x + w/2, y + d + h},
	}
}
