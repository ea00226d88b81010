// Package hugepage makes the big arrays of ranking (edges, the interning
// tables, the CSR, the score vectors) in memory backed by huge pages where
// the system allows: packages rank and rank/edgefile share it.
package hugepage

import "unsafe"

// Make is make([]T, n, c) for the big arrays of ranking, whose memory it
// asks to have backed by huge pages (adviseHuge) before it is first
// written.
func Make[T any](n, c int) []T {
	s := make([]T, n, c)
	if c > 0 {
		var zero T
		adviseHuge(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), uintptr(c)*unsafe.Sizeof(zero)))
	}
	return s
}
