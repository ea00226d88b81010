//go:build !linux

package rank

// adviseHuge does nothing here: transparent huge pages are Linux's.
func adviseHuge(b []byte) {}
