package layout_test

import (
	"context"
	"fmt"
	"math"

	"github.com/mapthenet/mapthenet/layout"
	"github.com/mapthenet/mapthenet/rank"
)

// Map lays out the best-ranked nodes and places the rest beside them.
func ExampleMap() {
	names := []string{"a.example", "b.example", "c.example", "d.example", "e.example"}
	// a ⇄ b, a → c, b → c, c → d; e links to a but nothing links to e.
	src := []uint32{0, 1, 0, 1, 2, 4}
	dst := []uint32{1, 0, 2, 2, 3, 0}
	g, err := rank.BuildCSR(uint32(len(names)), src, dst, 0)
	if err != nil {
		panic(err)
	}
	res, err := rank.PageRank(context.Background(), g, rank.Params{})
	if err != nil {
		panic(err)
	}
	_, order, err := rank.Ranks(g, res.Scores, names)
	if err != nil {
		panic(err)
	}
	in := layout.MapInput{
		Graph: g,
		Order: order,
		Top:   3, // laid out; the fourth ranked domain is placed beside its neighbour
		Key:   func(v uint32) uint64 { return layout.Key(names[v]) },
	}
	x, _, st, err := layout.Map(context.Background(), in, layout.Params{})
	if err != nil {
		panic(err)
	}
	for v, name := range names {
		fmt.Printf("%s placed: %v\n", name, !math.IsNaN(x[v]))
	}
	fmt.Printf("by layout %d, by neighbours %d\n", st.ByLayout, st.ByNeighbours)
	// Output:
	// a.example placed: true
	// b.example placed: true
	// c.example placed: true
	// d.example placed: true
	// e.example placed: false
	// by layout 3, by neighbours 1
}
