package rank

import "math"

// PageRank's power iteration shrinks the L1 change of an iteration by a
// rate that depends on the graph. On graphgen's graphs it is about 0.3,
// and 18 iterations reach the stopping rule. On graphs with rank sinks
// (groups of domains that link only among themselves, which the web has
// many of: sister sites, link rings) it is near d: on graphgen's M graph
// with 2% of its domains in closed cycles of 2 and 3 (SinkShare) it
// shrank by a steady 0.8 an iteration, and 100 iterations stopped short
// of the stopping rule. Graphs of dense communities are in between (0.55
// to 0.6: 33 iterations).
//
// When the rate is slow and steady, the error is mostly one slow mode:
// x_k ≈ x* + c·r^k. Comparing iterations m apart, x_k - x* ≈ r^m·(x_{k-m}
// - x*), which holds as well for a mode of rate -r (a pair of domains
// passing its score back and forth) when m is even, and for any mode
// whose rate is r times an m-th root of unity (a cycle of 3 domains, m =
// 3 or 6). So
//
//	x* ≈ (x_k - q·x_{k-m}) / (1 - q),  q = r^m,
//
// with q measured as the ratio of the L1 changes of iterations k and k-m.
// This is the power extrapolation of Haveliwala, Kamvar, Klein, Manning and
// Golub ("Computing PageRank using Power Extrapolation", Stanford, 2003),
// there with r taken to be d; measured here, because rates differ from d
// (0.8 to 0.84 on the graphs below) and every iteration counts: graphgen's
// M graph with sinks (M+sinks) took 52 iterations, 58 with r = d, against
// 100 without extrapolation, unfinished (an L1 change of 2.2e-9 left);
// M's graph with 4% of its domains in pairs, 39, 50 with r = d (before
// the changes settleSpansBelow tells of: M+sinks now takes 49). m = 2 is
// tried first; where it does not help (cycles of 3: modes of rate
// r·e^(2πi/3), which it amplifies), m = 6.
//
// The stopping rule is unchanged: PageRank stops only when a plain
// iteration (from an extrapolated vector or not) changes the scores by
// less than the tolerance in L1, so the bound on the error it gives
// (d/(1-d) times the change) holds as before. Extrapolation starts only
// when three successive ratios of changes (an iteration's change over the
// one before's) are at least minExtrapolationRate, each within a tenth of
// the one before it: graphgen's graphs never start it, so their
// scores are the same bit for bit. An extrapolation is judged by the next
// iteration: if that changes the scores by a larger share than the
// iteration before the extrapolation did, x goes back to the scores before
// it (that iteration is lost; the scores are then those of the plain
// iteration, one iteration later) and its span is not tried again: the
// next span starts from those scores at once, as the rate was steady. So
// a graph no span helps (cycles of 4 and 5) loses one iteration a span.
// Every decision is taken on the sums of changes, which are added up in
// chunk order, so the scores are the same for any number of workers.
const (
	minExtrapolationRate = 0.55
	steadyRates          = 0.1 // two ratios agree when they differ by less than this share of the last
)

// extrapolationSpans are the numbers of iterations between the two
// vectors combined, each tried in turn when the one before did not help.
// A variable so that tests can turn extrapolation off (nil).
var extrapolationSpans = []int{2, 6}

// settleSpansBelow: after an extrapolation it keeps, the extrapolator arms
// again at once, from the scores of the iteration that checked it. That
// iteration's change still carries the fast modes the extrapolation
// stirred up, so the ratio then measured over the next span (q) comes out
// a little low. Over a span of 6 that costs little; over a span of 2, q
// is near 1 (0.7 at a rate of 0.84) and the extrapolation's sensitivity to
// it, 1/(1-q)², is 11 against 2.4: spans shorter than settleSpansBelow
// wait one more iteration (settling) before arming. In iterations, on
// TestExtrapolation's graphs (float64 and float32 shares) and M+sinks:
//
//	                    pairs    cycles of 3  of 2 and 3  M+sinks
//	settling after all  41, 41   70, 70       63, 63      50
//	after none          49, 50   67, 67       61, 62      49
//	below 3 (this)      41, 41   67, 67       61, 61      49
//
// (41, 44; 69, 71; 63, 65 and 52 when the extrapolator also watched for
// three steady ratios again after an extrapolation it undid, and after
// the switch from float32 shares. L+sinks: 50 iterations, where it was 54.)
const settleSpansBelow = 3

// extrapolator decides when PageRank extrapolates, and does it. Its one
// vector, hist, is allocated the first time it is needed (n float64s:
// graphs that converge quickly never pay for it).
type extrapolator struct {
	state    extrapolationState
	hist     []float64 // armed: x as of iteration at; checking: x before the extrapolation
	at       int
	atChange float64 // the L1 change of iteration at
	// fromChange is the L1 change of the iteration whose scores the last
	// extrapolation started from (kept in hist while checking).
	fromChange float64
	// ratio is the last iteration's change over the one before; before is
	// the ratio of the iteration just before the last extrapolation.
	ratio, before float64
	steady        int // successive slow, steady ratios seen (watching)
	span          int // the index in extrapolationSpans of the span in use
	count         int // extrapolations kept
}

type extrapolationState int

const (
	watching extrapolationState = iota // for a slow, steady rate
	armed                              // hist holds iteration at
	checking                           // this iteration started from an extrapolation: did it help?
	settling                           // it did: one more plain iteration, then arm again
	off                                // it did not: never again in this run
)

// after is called after PageRank's iteration it (counted from 1), which
// changed the scores by change (the one before it by prev; 0 for the
// first) and did not meet the stopping rule. It returns true when it has
// changed x (extrapolated, or gone back to the scores before an
// extrapolation that did not help): PageRank must then derive the shares
// from x again.
func (e *extrapolator) after(it int, change, prev float64, x []float64, bounds []uint32, workers int) bool {
	if len(extrapolationSpans) == 0 {
		return false
	}
	ratio := 0.0
	if prev > 0 {
		ratio = change / prev
	}
	last := e.ratio
	e.ratio = ratio
	switch e.state {
	case watching:
		if ratio >= minExtrapolationRate && ratio < 1 && math.Abs(ratio-last) < steadyRates*ratio {
			e.steady++
		} else {
			e.steady = 0
		}
		if e.steady >= 2 {
			e.snapshot(it, change, x, bounds, workers)
		}
	case armed:
		if it-e.at < extrapolationSpans[e.span] {
			break
		}
		q := change / e.atChange
		if !(q > 0 && q < 1) {
			e.state, e.steady = watching, 0
			break
		}
		e.extrapolate(q, x, bounds, workers)
		e.state, e.before, e.fromChange = checking, ratio, change
		return true
	case checking:
		if ratio >= e.before {
			// Worse than a plain iteration would have done: back to the
			// scores before the extrapolation (this iteration is lost),
			// which hist still holds: the rate was steady, so they are
			// the next span's start.
			copyChunks(x, e.hist, bounds, workers)
			e.state, e.at, e.atChange = armed, it, e.fromChange
			if e.span++; e.span == len(extrapolationSpans) {
				e.state, e.hist = off, nil
			}
			return true
		}
		// Kept. Arm again from these scores, at once after a long span,
		// an iteration later after a short one (see settleSpansBelow).
		e.count++
		if extrapolationSpans[e.span] < settleSpansBelow {
			e.state = settling
			break
		}
		e.snapshot(it, change, x, bounds, workers)
	case settling:
		e.snapshot(it, change, x, bounds, workers)
	}
	return false
}

// restart is called when PageRank changes x by other means (the switch
// from float32 shares to float64, which also takes away the error of the
// scores' sum): the ratios seen while watching no longer predict the next
// ones, so watching starts over. An armed extrapolation keeps its span (q
// is measured over it, not predicted; PageRank rescales x after each
// extrapolation), and one waiting for its check keeps waiting.
func (e *extrapolator) restart() {
	if e.state == watching {
		e.steady, e.ratio = 0, 0
	}
}

// snapshot keeps x as iteration it's, of change change.
func (e *extrapolator) snapshot(it int, change float64, x []float64, bounds []uint32, workers int) {
	if e.hist == nil {
		e.hist = makeLarge[float64](len(x), len(x))
	}
	copyChunks(e.hist, x, bounds, workers)
	e.state, e.at, e.atChange = armed, it, change
}

// extrapolate sets x to (x - q·hist)/(1 - q), node by node, and keeps
// the x it replaces in hist (to go back to). A node whose extrapolated
// score would not be positive (a score falling fast from far above its
// limit) keeps its score.
func (e *extrapolator) extrapolate(q float64, x []float64, bounds []uint32, workers int) {
	hist, scale := e.hist, 1/(1-q)
	forChunks(len(bounds)-1, workers, func(c int) {
		for v := bounds[c]; v < bounds[c+1]; v++ {
			xv := x[v]
			if y := (xv - q*hist[v]) * scale; y > 0 {
				x[v] = y
			}
			hist[v] = xv
		}
	})
}

// copyChunks copies src into dst, a chunk at a time on workers.
func copyChunks(dst, src []float64, bounds []uint32, workers int) {
	forChunks(len(bounds)-1, workers, func(c int) {
		lo, hi := bounds[c], bounds[c+1]
		copy(dst[lo:hi], src[lo:hi])
	})
}
