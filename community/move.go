package community

import (
	"context"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
)

// Local moving (Louvain's first phase) in sweeps of node order: a node is
// visited when it is active, and it is active at first (unless it has no
// edge) and again when a neighbour moves to another community than its
// own (as in Leiden's fast local moving, Traag et al. 2019): only nodes
// whose surroundings changed are looked at again. A visited node joins
// the neighbouring community that most raises modularity; staying wins
// ties, then the smallest community. Sweeps go on until no node is active
// or after MaxSweeps × n visits.
//
// Sweeping in index order (the graph's nodes come by degree, highest
// first) reads the adjacency lists front to back, and the hubs settle
// first. The package's earlier local moving visited the nodes in a fixed
// pseudo-random order, reading each list at random: with it, Detect took
// 2.1 to 2.8 times the CPU time on graphgen's M graph, for a modularity of
// 0.163 (now 0.166).
//
// With Params.MoveWorkers above 1, big levels are swept in batches of
// consecutive nodes with the same result as one node at a time: the workers gather, in parallel, each
// active node's weight to every neighbouring community and its best move
// against the communities as they stand (the costly part: a random read
// per edge); meanwhile the moves are applied one node at a time, in order,
// as soon as a node's chunk is gathered, and a node's choice is recomputed
// where something it depends on has changed since the batch began: a
// neighbour earlier in the batch moved (then it is gathered again), or the
// total degree of a community it weighed changed (then its gains are
// recomputed). Only nodes earlier in the batch have moved by the time a
// node is applied, whenever its chunk was gathered, so these checks are
// enough: the result is that of the sequential sweep, for any number of
// workers and any batch size.

// cand is a node's total edge weight w to community c, and the gain of
// joining c (of staying, for its own community): NaN until pick needs it.
type cand struct {
	c    int32
	w    uint32
	gain float64
}

// mover is one level's local moving.
type mover struct {
	g      *graph
	comm   []int32  // node → community (a node index)
	tot    []uint32 // community → total weighted degree
	active bitset
	gamma  float64 // resolution / m2
	visits int
	limit  int
	moved  bool // some node moved
}

// localMove runs local moving on g, at most maxSweeps × g.n visits, from
// the communities init (init[i]: a node of g; nil: each node its own): each
// node's community (a node of g), whether any node moved, and the visits
// in units of g.n, rounded up.
func (g *graph) localMove(ctx context.Context, p Params, maxSweeps int, init []int32) (comm []int32, moved bool, sweeps int, err error) {
	n := g.n
	m := &mover{g: g, comm: make([]int32, n), tot: make([]uint32, n), active: make(bitset, (n+63)/64),
		gamma: p.Resolution / g.m2, limit: maxSweeps * n}
	for i := range n {
		c := int32(i)
		if init != nil {
			c = init[i]
		}
		m.comm[i] = c
		m.tot[c] += g.k[i]
		if g.k[i] > 0 {
			m.active.set(i)
		}
	}
	if p.MoveWorkers > 1 && n >= parallelMin {
		err = m.batched(ctx, p.MoveWorkers)
	} else {
		err = m.sequential(ctx)
	}
	if err != nil {
		return nil, false, 0, err
	}
	return m.comm, m.moved, (m.visits + n - 1) / n, nil
}

// parallelMin is the least level that is swept in parallel batches, and
// batchEdges about how many adjacency entries of active nodes a batch
// holds (variables so that tests can make small graphs take the parallel
// path in small batches).
var (
	parallelMin = 1 << 15
	batchEdges  = 1 << 16
)

// sequential sweeps one node at a time.
func (m *mover) sequential(ctx context.Context) error {
	var t table
	var cands []cand
	n := m.g.n
	for more := true; more && m.visits < m.limit; {
		if err := ctx.Err(); err != nil {
			return err
		}
		more = false
		for i := 0; i < n && m.visits < m.limit; i++ {
			if !m.active.has(i) {
				continue
			}
			m.active.unset(i)
			m.visits++
			if m.visits%(1<<16) == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			nbr := m.gather(i, &t)
			cands = t.drain(cands[:0])
			if best := m.pick(i, cands); best != m.comm[i] {
				m.move(i, best, nbr)
				more = true
			}
		}
	}
	return nil
}

// gather fills t with node i's weight to each community of its neighbours
// and returns the neighbours' communities, in adjacency order (in t's
// buffer: valid until the next gather).
func (m *mover) gather(i int, t *table) []int32 {
	g := m.g
	lo, hi := g.off[i], g.off[i+1]
	t.reset(int(hi - lo))
	t.add(m.comm[i], 0) // its own community is always a candidate
	t.buf = m.neighbourComms(i, t.buf)
	nbr := t.buf
	if g.w == nil {
		for _, c := range nbr {
			t.add(c, 1)
		}
	} else {
		w := g.w[lo:hi]
		for k, c := range nbr {
			t.add(c, w[k])
		}
	}
	return nbr
}

// neighbourComms returns node i's neighbours' communities, in adjacency
// order, in buf (grown as needed).
func (m *mover) neighbourComms(i int, buf []int32) []int32 {
	g := m.g
	row := g.adj[g.off[i]:g.off[i+1]]
	if cap(buf) < len(row) {
		buf = make([]int32, len(row))
	}
	buf = buf[:len(row)]
	comm := m.comm
	for k, j := range row { // independent loads: many cache misses in flight at once
		buf[k] = atomic.LoadInt32(&comm[j])
	}
	return buf
}

// unknown marks a candidate whose gain is not computed (NaN).
var unknown = math.NaN()

// forget marks the gains of node i's candidates in f (the communities
// whose total degree changed in this batch, and a few others) as unknown:
// the others' are still right. It says whether it marked any.
func forget(cands []cand, f *filter) bool {
	any := false
	for k := range cands {
		if f.has(cands[k].c) {
			cands[k].gain = unknown
			any = true
		}
	}
	return any
}

// pick is the community node i joins: of greatest gain, staying on a tie,
// else the smallest community of equal gain. Its own community must be
// among cands. It does not depend on the order of cands.
//
// The gain of joining c is the weight to c minus γ·tot(c)·k(i)/m2, tot(c)
// without i (ΔQ up to a factor): less than the weight, as tot(c) ≥ 1 for
// a neighbour's community. So a candidate whose weight is no more than
// staying's gain, or no more than the best gain so far, can be neither
// chosen nor tied, and its tot(c), a random read that costs more than the
// rest of pick, is not read. The heaviest candidate goes first, so that
// the best gain so far is high early and prunes most of the others (on
// graphgen's M graph a third fewer reads). pick computes the gains it
// needs that are unknown and keeps them in cands.
func (m *mover) pick(i int, cands []cand) int32 {
	ci := m.comm[i]
	gk := m.gamma * float64(m.g.k[i])
	own, heavy := -1, -1
	var heavyW uint32
	for k := range cands { // in the first-level cache: cheap
		if cands[k].c == ci {
			own = k
		} else if cands[k].w > heavyW {
			heavy, heavyW = k, cands[k].w
		}
	}
	x := &cands[own]
	if x.gain != x.gain {
		x.gain = float64(x.w) - gk*(float64(atomic.LoadUint32(&m.tot[ci]))-float64(m.g.k[i]))
	}
	stay := x.gain
	if heavy < 0 || float64(heavyW) <= stay {
		return ci
	}
	x = &cands[heavy]
	if x.gain != x.gain {
		x.gain = float64(x.w) - gk*float64(atomic.LoadUint32(&m.tot[x.c]))
	}
	best, bestGain := x.c, x.gain
	for k := range cands {
		x := &cands[k]
		w := float64(x.w)
		if k == own || k == heavy || w <= stay || w <= bestGain {
			continue
		}
		if x.gain != x.gain {
			x.gain = w - gk*float64(atomic.LoadUint32(&m.tot[x.c]))
		}
		if x.gain > bestGain || (x.gain == bestGain && x.c < best) {
			best, bestGain = x.c, x.gain
		}
	}
	if bestGain <= stay {
		return ci
	}
	return best
}

// move moves node i to community to; nbr holds its neighbours'
// communities, which become active unless they are in to.
func (m *mover) move(i int, to int32, nbr []int32) {
	g := m.g
	ci := m.comm[i]
	// Atomic: gathering reads them meanwhile (see batched).
	atomic.AddUint32(&m.tot[ci], -g.k[i])
	atomic.AddUint32(&m.tot[to], g.k[i])
	atomic.StoreInt32(&m.comm[i], to)
	m.moved = true
	for k, j := range g.adj[g.off[i]:g.off[i+1]] {
		if nbr[k] != to {
			m.active.set(int(j))
		}
	}
}

// slot is what the gathering phase of a batch found for one active node.
type slot struct {
	node  int32
	best  int32 // its choice against the batch's starting state
	chunk int32 // where its lists are
	// Its lists in the chunk's buffers: candidate communities, the
	// neighbours in the batch before it, and (when best is a move) its
	// neighbours' communities, at nbr (its degree long).
	cands, candsEnd uint32
	early, earlyEnd uint32
	nbr             uint32
}

// chunk is a share of a batch's active nodes, gathered by one worker, and
// its output.
type chunk struct {
	slots  []slot // the batch's slots lo..hi
	lo, hi int
	cands  []cand
	early  []uint32
	nbr    []int32
}

// noNbr marks a slot whose neighbours' communities were not kept.
const noNbr = ^uint32(0)

// batched sweeps in batches, gathering in parallel (see the top of this
// file).
func (m *mover) batched(ctx context.Context, workers int) error {
	g := m.g
	n := g.n
	nchunks := 4 * workers
	chunks := make([]chunk, nchunks)
	done := make([]chan struct{}, nchunks)
	for c := range done {
		done[c] = make(chan struct{}, 1)
	}
	tables := make([]table, workers)
	var slots []slot
	var bounds []int // chunk boundaries in slots
	var serial table
	var cands []cand
	stamp := make([]uint32, n) // the batch in which a node last moved (batches count from 1)
	var batch uint32
	var changed filter

	for more := true; more && m.visits < m.limit; {
		more = false
		for lo := 0; lo < n && m.visits < m.limit; {
			if err := ctx.Err(); err != nil {
				return err
			}
			// The batch: nodes lo..hi-1, holding about batchEdges
			// adjacency entries of active nodes, cut into chunks of about
			// equal edges.
			slots = slots[:0]
			hi, edges := lo, 0
			for ; hi < n && edges < batchEdges; hi++ {
				if m.active.has(hi) {
					slots = append(slots, slot{node: int32(hi)})
					edges += int(g.off[hi+1] - g.off[hi])
				}
			}
			bounds = bounds[:0]
			bounds = append(bounds, 0)
			per, acc := max(edges/nchunks, 1), 0
			for s := range slots {
				v := slots[s].node
				acc += int(g.off[v+1] - g.off[v])
				if acc >= per && len(bounds) < nchunks {
					bounds = append(bounds, s+1)
					acc = 0
				}
			}
			if bounds[len(bounds)-1] != len(slots) {
				bounds = append(bounds, len(slots))
			}
			used := len(bounds) - 1

			// Gather in parallel, chunks taken in turn, while the apply
			// below goes through the chunks already gathered: each
			// chunk's done receives a token when it is gathered.
			var next atomic.Int32
			gatherNext := func(w int) bool {
				c := int(next.Add(1)) - 1
				if c >= used {
					return false
				}
				ch := &chunks[c]
				ch.slots, ch.lo = slots, lo
				m.gatherChunk(ch, int32(c), bounds[c], bounds[c+1], &tables[w])
				done[c] <- struct{}{}
				return true
			}
			var wg sync.WaitGroup
			for w := 1; w < min(workers, used); w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for gatherNext(w) {
					}
				}()
			}
			// awaited is how many chunks the apply has waited for.
			awaited := 0
			await := func(c int) {
				for ; awaited <= c; awaited++ {
				wait:
					for {
						select {
						case <-done[awaited]:
							break wait
						default:
						}
						// Not gathered yet: gather the next chunk not
						// taken (this one or a later one), else wait.
						if !gatherNext(0) {
							<-done[awaited]
							break
						}
					}
				}
			}

			// Apply in order, recomputing what changed. A slot's chunk
			// may have been gathered while earlier moves of this batch
			// were applied, reading some communities before and some
			// after them; but those moves are by nodes before it in the
			// batch, so what the checks below redo (a neighbour before it
			// moved; a candidate's total changed) covers them too.
			batch++
			moves := 0
			s, c := 0, 0
			for i := lo; i < hi; i++ {
				var sl *slot
				if s < len(slots) && int(slots[s].node) == i {
					for s >= bounds[c+1] {
						c++
					}
					await(c)
					sl = &slots[s]
					s++
				}
				if !m.active.has(i) {
					continue
				}
				if m.visits >= m.limit {
					break
				}
				m.active.unset(i)
				m.visits++
				ci := m.comm[i]
				var best int32
				var nbr []int32
				switch {
				case sl == nil || (moves > 0 && m.earlyMoved(&chunks[sl.chunk], sl, stamp, batch)):
					// Not gathered (activated in this batch), or a
					// neighbour before it in the batch moved: again.
					nbr = m.gather(i, &serial)
					cands = serial.drain(cands[:0])
					best = m.pick(i, cands)
				default:
					ch := &chunks[sl.chunk]
					best = sl.best
					if moves > 0 {
						// Gains again for the communities whose total
						// changed in this batch (and a few others); with
						// none, its choice stands.
						cs := ch.cands[sl.cands:sl.candsEnd]
						if forget(cs, &changed) {
							best = m.pick(i, cs)
						}
					}
					if best != ci {
						if sl.nbr != noNbr {
							nbr = ch.nbr[sl.nbr : sl.nbr+g.off[i+1]-g.off[i]]
						} else {
							serial.buf = m.neighbourComms(i, serial.buf)
							nbr = serial.buf
						}
					}
				}
				if best == ci {
					continue
				}
				if moves == 0 {
					changed.clear()
				}
				changed.add(ci)
				changed.add(best)
				m.move(i, best, nbr)
				stamp[i] = batch
				moves++
				more = true
			}
			await(used - 1) // the chunks the apply did not reach (at the visit limit)
			wg.Wait()
			lo = hi
		}
	}
	return nil
}

// gatherChunk gathers slots a..b of a batch that begins at node ch.lo
// into ch, using t.
func (m *mover) gatherChunk(ch *chunk, id int32, a, b int, t *table) {
	g := m.g
	ch.cands, ch.early, ch.nbr = ch.cands[:0], ch.early[:0], ch.nbr[:0]
	lo := uint32(ch.lo)
	for s := a; s < b; s++ {
		sl := &ch.slots[s]
		i := int(sl.node)
		nbr := m.gather(i, t)
		sl.chunk = id
		sl.cands = uint32(len(ch.cands))
		ch.cands = t.drain(ch.cands)
		sl.candsEnd = uint32(len(ch.cands))
		sl.best = m.pick(i, ch.cands[sl.cands:])
		sl.early = uint32(len(ch.early))
		for _, j := range g.adj[g.off[i]:g.off[i+1]] {
			if j-lo < uint32(i)-lo { // lo <= j < i
				ch.early = append(ch.early, j)
			}
		}
		sl.earlyEnd = uint32(len(ch.early))
		sl.nbr = noNbr
		if sl.best != m.comm[i] {
			sl.nbr = uint32(len(ch.nbr))
			ch.nbr = append(ch.nbr, nbr...)
		}
	}
}

// earlyMoved says whether a neighbour of sl's node that comes before it in
// the batch has moved in this batch.
func (m *mover) earlyMoved(ch *chunk, sl *slot, stamp []uint32, batch uint32) bool {
	for _, j := range ch.early[sl.early:sl.earlyEnd] {
		if stamp[j] == batch {
			return true
		}
	}
	return false
}

// bitset is a set of nodes, a bit each: the active nodes of a level of a
// million fit the second-level cache, which the random writes of moves
// hit.
type bitset []uint64

func (b bitset) has(i int) bool { return b[i>>6]&(1<<(i&63)) != 0 }
func (b bitset) set(i int)      { b[i>>6] |= 1 << (i & 63) }
func (b bitset) unset(i int)    { b[i>>6] &^= 1 << (i & 63) }

// filter is a set of communities, with false positives: those whose total
// degree changed in the current batch. A bit per hash of 2¹⁷, 16 KiB,
// stays in the first-level cache.
type filter [1 << 11]uint64

func filterBit(c int32) uint32 { return (uint32(c) * 0x9e3779b1) >> 15 }

func (f *filter) clear()      { *f = filter{} }
func (f *filter) add(c int32) { b := filterBit(c); f[b>>6] |= 1 << (b & 63) }
func (f *filter) has(c int32) bool {
	b := filterBit(c)
	return f[b>>6]&(1<<(b&63)) != 0
}

// table sums one node's weight to each neighbouring community: open
// addressing over a power-of-two array sized for the node's degree, so
// that it stays in the first-level cache for all but the hubs.
type table struct {
	keys  []int32  // -1: empty
	vals  []uint32 // weight to keys[h]
	used  []uint32 // slots taken, in order
	mask  uint32
	shift uint32
	buf   []int32 // the neighbours' communities (gather's result)
}

// reset readies t for a node of degree d.
func (t *table) reset(d int) {
	size := 16
	for size < 2*d {
		size <<= 1
	}
	if len(t.keys) < size {
		t.keys = make([]int32, size)
		t.vals = make([]uint32, size)
		for h := range t.keys {
			t.keys[h] = -1
		}
	}
	t.mask = uint32(size - 1)
	t.shift = uint32(32 - bits.TrailingZeros(uint(size)))
}

func (t *table) add(c int32, w uint32) {
	h := (uint32(c) * 0x9e3779b1) >> t.shift
	for {
		switch t.keys[h] {
		case c:
			t.vals[h] += w
			return
		case -1:
			t.keys[h], t.vals[h] = c, w
			t.used = append(t.used, h)
			return
		}
		h = (h + 1) & t.mask
	}
}

// drain appends t's sums to out, in the order first met, and empties t.
func (t *table) drain(out []cand) []cand {
	for _, h := range t.used {
		out = append(out, cand{c: t.keys[h], w: t.vals[h], gain: unknown})
		t.keys[h] = -1
	}
	t.used = t.used[:0]
	return out
}
