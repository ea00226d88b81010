// Package graphgen makes seeded, deterministic synthetic domain graphs that
// look like a real host graph: power-law in-degree (preferential targets),
// mean out-degree about 10, a third of the domains dangling (no out-links),
// names that are valid registrable domains and a small share of nofollow
// edges. Optionally the domains fall into planted communities, dense inside
// and sparse across.
//
// It is a helper for tests, benchmarks and the demo; the pipeline's own
// packages never import it. The same Config always gives the same graph,
// edge for edge, on any machine: every source domain draws its links from
// its own random stream seeded by (Seed, source id).
package graphgen

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Config describes a graph. The zero values of the optional fields take
// the defaults documented on each.
type Config struct {
	Domains int   // number of domains (ids 0..Domains-1)
	Edges   int64 // exact number of distinct src→dst edges (no self-loops)
	Seed    uint64

	// DanglingShare is the share of domains with no out-link: default 0.35.
	DanglingShare float64
	// NofollowShare is the share of edges marked nofollow: default 0.03.
	NofollowShare float64
	// ZipfS is the exponent of the preferential (Zipf) target choice:
	// default 1.2. Higher concentrates links on fewer popular domains.
	ZipfS float64
	// UniformShare is the share of targets drawn uniformly instead of
	// preferentially, so that most domains get a few in-links: default 0.3.
	UniformShare float64

	// Communities > 1 plants that many communities (domain id mod
	// Communities); a link stays inside its source's community with
	// probability Intra (default 0.9). 0 or 1: no communities.
	Communities int
	Intra       float64

	// SinkShare is the share of domains, taken from the dangling ones,
	// that form rank sinks: closed cycles of 2 and 3 domains in turn, each
	// linking only to the next, as sister sites and link rings do on the
	// web. PageRank's power iteration changes by a steady 0.8 an iteration
	// or so on such a graph, where it changes by a third without them.
	// 0 (the default): none. The size presets take it with the suffix
	// "+sinks" (Size: "L+sinks" is L with SinkShare 0.02).
	SinkShare float64
}

// DefaultSinkShare is the SinkShare of a size "+sinks".
const DefaultSinkShare = 0.02

// Sizes are the benchmark presets: S, M, L and XL (web scale's order of
// magnitude: 100 million domains, a billion edges; written as an edge
// file of ids, WriteIDEdgesParquet).
var Sizes = map[string]Config{
	"S":  {Domains: 100_000, Edges: 1_000_000, Seed: 1},
	"M":  {Domains: 1_000_000, Edges: 10_000_000, Seed: 1},
	"L":  {Domains: 10_000_000, Edges: 100_000_000, Seed: 1},
	"XL": {Domains: 100_000_000, Edges: 1_000_000_000, Seed: 1},
}

// Size returns the preset called name (S, M, L or XL, case-insensitive),
// with rank sinks (SinkShare DefaultSinkShare) when name ends in "+sinks".
func Size(name string) (Config, error) {
	base, sinks := strings.CutSuffix(strings.ToUpper(name), "+SINKS")
	c, ok := Sizes[base]
	if !ok {
		return Config{}, fmt.Errorf("graphgen: unknown size %q (want S, M, L or XL, each maybe with +sinks)", name)
	}
	if sinks {
		c.SinkShare = DefaultSinkShare
	}
	return c, nil
}

func (c Config) withDefaults() Config {
	if c.DanglingShare == 0 {
		c.DanglingShare = 0.35
	}
	if c.NofollowShare == 0 {
		c.NofollowShare = 0.03
	}
	if c.ZipfS == 0 {
		c.ZipfS = 1.2
	}
	if c.UniformShare == 0 {
		c.UniformShare = 0.3
	}
	if c.Intra == 0 {
		c.Intra = 0.9
	}
	return c
}

// Generator produces one Config's graph. It is cheap to hold: the
// out-degrees (4 bytes a domain) are all it keeps; edges are made on
// demand by Edges. A Generator may be used by one goroutine at a time.
type Generator struct {
	cfg    Config
	outDeg []uint32
	// perm scatters popularity over ids so that popular domains are not
	// simply the low ids: target = (permA*k + permB) mod m.
	permA, permB uint64
	commA        uint64 // the same within a community
	// sinkNext is the domain a sink's member links to (see SinkShare);
	// nil when there are none.
	sinkNext  map[uint32]uint32
	sinkEdges int64
}

// New checks cfg and draws the out-degrees.
func New(cfg Config) (*Generator, error) {
	cfg = cfg.withDefaults()
	switch {
	case cfg.Domains < 2:
		return nil, errors.New("graphgen: need at least 2 domains")
	case cfg.Domains > math.MaxUint32/2:
		return nil, fmt.Errorf("graphgen: %d domains is too many", cfg.Domains)
	case cfg.Edges < 0:
		return nil, errors.New("graphgen: negative edge count")
	case cfg.DanglingShare < 0 || cfg.DanglingShare >= 1:
		return nil, fmt.Errorf("graphgen: DanglingShare %v not in [0,1)", cfg.DanglingShare)
	case cfg.NofollowShare < 0 || cfg.NofollowShare > 1:
		return nil, fmt.Errorf("graphgen: NofollowShare %v not in [0,1]", cfg.NofollowShare)
	case cfg.ZipfS <= 1:
		return nil, fmt.Errorf("graphgen: ZipfS %v must be > 1", cfg.ZipfS)
	case cfg.SinkShare < 0 || cfg.SinkShare > cfg.DanglingShare:
		return nil, fmt.Errorf("graphgen: SinkShare %v not in [0, DanglingShare %v]", cfg.SinkShare, cfg.DanglingShare)
	case cfg.Communities > cfg.Domains/2:
		return nil, fmt.Errorf("graphgen: %d communities for %d domains: need at least 2 domains each", cfg.Communities, cfg.Domains)
	}
	g := &Generator{cfg: cfg}
	if err := g.drawDegrees(); err != nil {
		return nil, err
	}
	return g, nil
}

// Config returns the generator's configuration with defaults filled in.
func (g *Generator) Config() Config { return g.cfg }

// Domains is the number of domains (ids 0..Domains()-1).
func (g *Generator) Domains() int { return g.cfg.Domains }

// NumEdges is the exact number of edges Edges produces: cfg.Edges, and
// the sinks' (see SinkShare).
func (g *Generator) NumEdges() int64 { return g.cfg.Edges + g.sinkEdges }

// OutDegree is domain id's number of out-edges.
func (g *Generator) OutDegree(id uint32) int { return int(g.outDeg[id]) }

// Community is the planted community of id (0 when there are none).
func (g *Generator) Community(id uint32) int {
	if g.cfg.Communities <= 1 {
		return 0
	}
	return int(id) % g.cfg.Communities
}

// drawDegrees gives every non-dangling domain a heavy-tailed out-degree
// (log-normal) and then nudges them so they add up to exactly cfg.Edges.
func (g *Generator) drawDegrees() error {
	c := g.cfg
	n := c.Domains
	maxDeg := uint32(n - 1)
	if c.Communities > 1 {
		// Keep degrees small enough to find distinct targets quickly.
		maxDeg = uint32(n / 2)
	}
	r := rand.New(rand.NewPCG(c.Seed, 0x9e3779b97f4a7c15))
	g.outDeg = make([]uint32, n)
	var linking []uint32
	for i := range n {
		if r.Float64() >= c.DanglingShare {
			linking = append(linking, uint32(i))
		}
	}
	if c.Edges > 0 && len(linking) == 0 {
		linking = append(linking, 0)
	}
	if c.Edges > int64(len(linking))*int64(maxDeg) {
		return fmt.Errorf("graphgen: %d edges do not fit %d linking domains", c.Edges, len(linking))
	}
	if len(linking) == 0 {
		return nil
	}
	mean := float64(c.Edges) / float64(len(linking))
	// Log-normal with sigma 1: mean = exp(mu + 1/2).
	mu := math.Log(max(mean, 1)) - 0.5
	var sum int64
	for _, id := range linking {
		d := math.Exp(mu + r.NormFloat64())
		deg := uint32(min(max(math.Round(d), 1), float64(maxDeg)))
		g.outDeg[id] = deg
		sum += int64(deg)
	}
	// Nudge one random linking domain at a time to reach the exact total.
	for sum != c.Edges {
		id := linking[r.IntN(len(linking))]
		if sum < c.Edges && g.outDeg[id] < maxDeg {
			g.outDeg[id]++
			sum++
		} else if sum > c.Edges && g.outDeg[id] > 1 {
			g.outDeg[id]--
			sum--
		} else if sum > c.Edges && g.outDeg[id] == 1 && int64(len(linking)) >= sum {
			// (Nearly) every linking domain is at 1: drop one.
			g.outDeg[id] = 0
			sum--
		}
	}
	g.permA, g.permB = coprimeMultiplier(uint64(n), r), r.Uint64N(uint64(n))
	if c.Communities > 1 {
		g.commA = coprimeMultiplier(uint64(n/c.Communities), r)
	}
	g.drawSinks()
	return nil
}

// drawSinks makes the rank sinks (see SinkShare) of the first dangling
// domains, in id order: cycles of 2 and 3 in turn, each member linking to
// the next. It draws nothing from the degrees' random stream, so the rest
// of the graph is the same with sinks or without.
func (g *Generator) drawSinks() {
	want := int(math.Round(g.cfg.SinkShare * float64(g.cfg.Domains)))
	var cycle []uint32
	cycles := 0
	for id := uint32(0); int(id) < g.cfg.Domains && want > 0; id++ {
		if g.outDeg[id] != 0 {
			continue
		}
		cycle = append(cycle, id)
		if len(cycle) < 2+cycles%2 { // cycles of 2, 3, 2, 3, ...
			continue
		}
		if len(cycle) > want {
			break
		}
		if g.sinkNext == nil {
			g.sinkNext = make(map[uint32]uint32, want)
		}
		for i, m := range cycle {
			g.sinkNext[m] = cycle[(i+1)%len(cycle)]
			g.outDeg[m] = 1
		}
		g.sinkEdges += int64(len(cycle))
		want -= len(cycle)
		cycle = cycle[:0]
		cycles++
	}
}

func coprimeMultiplier(m uint64, r *rand.Rand) uint64 {
	for {
		a := r.Uint64N(m) | 1
		if gcd(a, m) == 1 {
			return a
		}
	}
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// Edges calls fn for every edge, grouped by source in increasing source
// id; within a source the targets are distinct and in draw order. It
// stops at and returns fn's first error.
func (g *Generator) Edges(fn func(src, dst uint32, nofollow bool) error) error {
	return g.EdgesOf(0, uint32(g.cfg.Domains), fn)
}

// EdgesOf is Edges for the sources lo..hi-1 only. Unlike the rest of a
// Generator, it may be called by several goroutines at once: each call
// has its own random streams (one per source, as Edges has).
func (g *Generator) EdgesOf(lo, hi uint32, fn func(src, dst uint32, nofollow bool) error) error {
	c := g.cfg
	n := uint64(c.Domains)
	pcg := rand.NewPCG(0, 0)
	r := rand.New(pcg)
	// Popularity ranks: P(k) ∝ (v+k)^-s; v flattens the very top a little.
	zipfAll := rand.NewZipf(r, c.ZipfS, 8, n-1)
	var zipfComm *rand.Zipf
	var commSize uint64
	if c.Communities > 1 {
		commSize = n / uint64(c.Communities) // members c, c+k, c+2k, ... below commSize*k
		zipfComm = rand.NewZipf(r, c.ZipfS, 8, commSize-1)
	}
	seen := make(map[uint32]struct{}, 64)
	for src := lo; src < hi && src < uint32(n); src++ {
		deg := g.outDeg[src]
		if deg == 0 {
			continue
		}
		if next, ok := g.sinkNext[src]; ok { // (a nil map finds nothing)
			if err := fn(src, next, false); err != nil {
				return err
			}
			continue
		}
		pcg.Seed(c.Seed, uint64(src)+1)
		clear(seen)
		for uint32(len(seen)) < deg {
			var dst uint32
			if c.Communities > 1 && r.Float64() < c.Intra {
				comm := uint64(src) % uint64(c.Communities)
				var k uint64
				if r.Float64() < c.UniformShare {
					k = r.Uint64N(commSize)
				} else {
					k = (zipfComm.Uint64()*g.commA + g.permB) % commSize
				}
				dst = uint32(k*uint64(c.Communities) + comm)
			} else if r.Float64() < c.UniformShare {
				dst = uint32(r.Uint64N(n))
			} else {
				dst = uint32((zipfAll.Uint64()*g.permA + g.permB) % n)
			}
			if dst == src {
				continue
			}
			if _, dup := seen[dst]; dup {
				continue
			}
			seen[dst] = struct{}{}
			nofollow := r.Float64() < c.NofollowShare
			if err := fn(src, dst, nofollow); err != nil {
				return err
			}
		}
	}
	return nil
}

// name patterns: each TLD has exactly one pattern, a prefix of letters (and
// maybe a hyphen) followed by digits, so a name parses back to one id and
// names never collide.
var patterns = []struct{ prefix, tld string }{
	{"d", ".com"},
	{"x-", ".org"},
	{"site", ".net"},
	{"web", ".co.uk"},
	{"n", ".io"},
	{"blog-", ".de"},
	{"shop", ".fr"},
	{"m", ".nl"},
	{"info", ".com.au"},
	{"k", ".jp"},
}

// Name is domain id's name: a valid registrable domain such as
// "d123456.com", "x-77.org" or "web42.co.uk", unique per id.
func (g *Generator) Name(id uint32) string {
	return string(g.AppendName(nil, id))
}

// AppendName appends Name(id) to b, without allocating when b has room.
func (g *Generator) AppendName(b []byte, id uint32) []byte {
	// Weighted towards .com as on the real web: half the names are .com.
	h := mix(uint64(id) ^ g.cfg.Seed*0x9e3779b97f4a7c15)
	var p int
	if h%2 == 0 {
		p = 0
	} else {
		p = 1 + int((h>>1)%uint64(len(patterns)-1))
	}
	b = append(b, patterns[p].prefix...)
	b = strconv.AppendUint(b, uint64(id), 10)
	return append(b, patterns[p].tld...)
}

// mix is SplitMix64's finaliser.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
