package layout

import "math"

// meanDisplacement is the mean distance between two layouts' positions
// over the nodes placed in both.
func meanDisplacement(x0, y0, x1, y1 []float64) float64 {
	var sum float64
	var n int
	for i := range x0 {
		if math.IsNaN(x0[i]) || math.IsNaN(x1[i]) {
			continue
		}
		sum += math.Hypot(x1[i]-x0[i], y1[i]-y0[i])
		n++
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}
