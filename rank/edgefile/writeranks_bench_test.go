package edgefile

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
)

// BenchmarkWriteRanks writes the rank file of 2 million domains, ranked
// in an order unrelated to their ids (as PageRank's is), 2 workers.
func BenchmarkWriteRanks(b *testing.B) {
	const n = 2_000_000
	r := rand.New(rand.NewPCG(1, 2))
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("d%x-%d.example.com", r.Uint32(), i)
	}
	nms, err := NamesOf(names)
	if err != nil {
		b.Fatal(err)
	}
	scores, out := make([]float64, n), make([]uint32, n)
	order := make([]uint32, 0, n)
	for v := range n {
		scores[v], out[v] = r.Float64(), uint32(r.IntN(100))
		if v%5 != 0 {
			order = append(order, uint32(v))
		}
	}
	r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	t := Ranked{Names: nms, Scores: scores, OutDomains: out, Order: order,
		InDomains: func(v uint32) uint32 { return uint32(v%5) * 3 }}
	path := filepath.Join(b.TempDir(), "ranks.parquet")
	b.ResetTimer()
	for range b.N {
		if err := WriteRanks(path, t, 2); err != nil {
			b.Fatal(err)
		}
	}
}
