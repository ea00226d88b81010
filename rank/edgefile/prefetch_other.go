//go:build !amd64

package edgefile

// prefetch touches the first slots that names of the hashes hs probe with
// loads (no prefetch instruction without assembly), so that their cache
// misses overlap; the result means nothing but must be used, or the loads
// are optimised away. Call between enter and exit.
func (t *table) prefetch(hs []uint64) uint32 {
	var sink uint32
	for _, h := range hs {
		sink += t.touch(h)
	}
	return sink
}
