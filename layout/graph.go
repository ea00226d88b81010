package layout

import (
	"fmt"
	"slices"

	"github.com/mapthenet/mapthenet/rank"
)

// Graph is an undirected graph of N nodes as a symmetric CSR: the
// neighbours of i are Adj[Offsets[i]:Offsets[i+1]], in increasing order,
// each once, never i itself.
type Graph struct {
	Offsets []uint32 // len N+1
	Adj     []uint32
	// Community holds each node's community (-1: none), or is nil: none
	// known. The layout starts each community as a region of its own and
	// pulls less along links between two communities (see Params.Between).
	Community []int32
}

// N is the number of nodes.
func (g *Graph) N() int { return len(g.Offsets) - 1 }

// Degree is the number of neighbours of i.
func (g *Graph) Degree(i int) int { return int(g.Offsets[i+1] - g.Offsets[i]) }

// Neighbours are i's neighbours.
func (g *Graph) Neighbours(i int) []uint32 { return g.Adj[g.Offsets[i]:g.Offsets[i+1]] }

// NumEdges is the number of undirected edges.
func (g *Graph) NumEdges() int { return len(g.Adj) / 2 }

// FromEdges builds the undirected graph of n nodes with edges a[i]–b[i]
// (either direction; repeats and self-loops dropped).
func FromEdges(n int, a, b []uint32) (*Graph, error) {
	if len(a) != len(b) {
		return nil, fmt.Errorf("layout: %d edge ends but %d other ends", len(a), len(b))
	}
	deg := make([]uint32, n+1)
	for i := range a {
		if int(a[i]) >= n || int(b[i]) >= n {
			return nil, fmt.Errorf("layout: edge %d–%d names a node outside 0..%d", a[i], b[i], n-1)
		}
		if a[i] != b[i] {
			deg[a[i]]++
			deg[b[i]]++
		}
	}
	return fill(n, deg, func(add func(u, v uint32)) {
		for i := range a {
			if a[i] != b[i] {
				add(a[i], b[i])
			}
		}
	}), nil
}

// Induced returns the undirected graph among the given nodes of g (node i
// of the result is g's node nodes[i]; an edge either way is one undirected
// edge) and index, g's node → result node or -1. The result depends on g
// and nodes only.
func Induced(g *rank.CSR, nodes []uint32) (*Graph, []int32, error) {
	index := make([]int32, g.N)
	for i := range index {
		index[i] = -1
	}
	for i, v := range nodes {
		if v >= g.N {
			return nil, nil, fmt.Errorf("layout: node %d not in a graph of %d", v, g.N)
		}
		if index[v] >= 0 {
			return nil, nil, fmt.Errorf("layout: node %d listed twice", v)
		}
		index[v] = int32(i)
	}
	n := len(nodes)
	deg := make([]uint32, n+1)
	each := func(add func(u, v uint32)) {
		for i, v := range nodes {
			for _, u := range g.In(v) {
				if j := index[u]; j >= 0 {
					add(uint32(i), uint32(j))
				}
			}
		}
	}
	each(func(u, v uint32) { deg[u]++; deg[v]++ })
	return fill(n, deg, each), index, nil
}

// fill lays out the symmetric CSR whose row sizes (before removing
// repeats) are deg, from the edges each reports, then sorts each row and
// drops repeats (u→v and v→u are one undirected edge).
func fill(n int, deg []uint32, each func(add func(u, v uint32))) *Graph {
	offsets := make([]uint32, n+1)
	var total uint32
	for i := range n {
		offsets[i] = total
		total += deg[i]
		deg[i] = offsets[i] // becomes the write cursor
	}
	offsets[n] = total
	adj := make([]uint32, total)
	each(func(u, v uint32) {
		adj[deg[u]] = v
		deg[u]++
		adj[deg[v]] = u
		deg[v]++
	})
	// Sort and compact each row, rows apart on GOMAXPROCS goroutines (each
	// row is its own: the result is the same), then move the rows down.
	size := make([]uint32, n)
	forChunks(n, 0, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			row := adj[offsets[i]:offsets[i+1]]
			slices.Sort(row)
			size[i] = uint32(len(slices.Compact(row)))
		}
	})
	w := uint32(0)
	for i := range n {
		start := offsets[i]
		copy(adj[w:], adj[start:start+size[i]])
		offsets[i] = w
		w += size[i]
	}
	offsets[n] = w
	return &Graph{Offsets: offsets, Adj: slices.Clip(adj[:w])}
}
