package data

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestRankInfoKeys pins the manifest's rank keys DESIGN.md names
// (algorithm, parameters, iterations, extrapolations, residual, ranked).
func TestRankInfoKeys(t *testing.T) {
	b, err := json.Marshal(RankInfo{Iterations: 54, Extrapolations: 4})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"algorithm", "damping", "extrapolations", "iterations", "max_iterations", "ranked", "residual", "tolerance"}
	if !slices.Equal(keys, want) || m["extrapolations"] != 4.0 {
		t.Fatalf("keys %v (extrapolations %v), want %v", keys, m["extrapolations"], want)
	}
}
