package edgefile

import (
	"path/filepath"
	"testing"
)

// BenchmarkWriteRanks writes the rank file of 2 million domains, ranked
// in an order unrelated to their ids (as PageRank's is), 2 workers.
func BenchmarkWriteRanks(b *testing.B) {
	_, t := randomRanked(b, 2_000_000)
	path := filepath.Join(b.TempDir(), "ranks.parquet")
	b.ResetTimer()
	for range b.N {
		if err := WriteRanks(path, t, 2); err != nil {
			b.Fatal(err)
		}
	}
}
