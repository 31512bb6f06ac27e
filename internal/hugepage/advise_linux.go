package hugepage

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugeSize is the huge page size advised for.
const hugeSize = 2 << 20

// advise marks the huge-page-aligned interior of s MADV_HUGEPAGE. An error
// (a kernel without transparent huge pages) leaves s as it is.
func advise(s []float32) {
	p := unsafe.Pointer(unsafe.SliceData(s))
	start := uintptr(p)
	end := start + uintptr(len(s))*4
	lo, hi := (start+hugeSize-1)&^(hugeSize-1), end&^(hugeSize-1)
	if hi <= lo {
		return
	}
	b := unsafe.Slice((*byte)(unsafe.Add(p, lo-start)), hi-lo)
	_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
}
