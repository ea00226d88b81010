//go:build !linux

package hugepage

// adviseHuge does nothing here: transparent huge pages are Linux's.
func adviseHuge(b []byte) {}
