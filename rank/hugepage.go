package rank

import "unsafe"

// makeLarge is make([]T, n, c) for the big arrays of ranking (edges, the
// interning tables, the CSR, the score vectors), whose memory it asks to
// have backed by huge pages (adviseHuge) before it is first written.
func makeLarge[T any](n, c int) []T {
	s := make([]T, n, c)
	if c > 0 {
		var zero T
		adviseHuge(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), uintptr(c)*unsafe.Sizeof(zero)))
	}
	return s
}
