package hugepage

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// adviseHuge asks the kernel to back the memory of b with transparent huge
// pages (2 MiB) where the system leaves that to the program
// (/sys/kernel/mm/transparent_hugepage/enabled set to madvise, Debian's
// default). Only the part of b aligned to huge pages is advised. Errors
// are ignored: this is a hint.
func adviseHuge(b []byte) {
	const huge = 2 << 20
	if len(b) < 2*huge {
		return
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo := (start + huge - 1) &^ (huge - 1)
	hi := (start + uintptr(len(b))) &^ (huge - 1)
	if hi <= lo {
		return
	}
	_ = unix.Madvise(b[lo-start:hi-start], unix.MADV_HUGEPAGE)
}
