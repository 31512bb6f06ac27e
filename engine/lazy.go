package engine

import (
	"unsafe"

	"github.com/hetsgd/hetsgd/workload"
)

// lazyRows is a rank's record of the rows its devices' last batches
// touched, for workers that update lazily (LazyApplier): a mask of one
// float a row, which the all-reduce sums across ranks as it sums the
// gradients (a row any rank marked is nonzero), and the rows it marks,
// listed once for every device of the rank. Its devices use it one at a
// time. Both are sized once for every row, so neither grows in a run.
type lazyRows struct {
	mask []float32
	rows []int32
}

// lazyRowBytes is what the record takes a row, read off its fields' element
// types (Sizeof does not evaluate its operand); the memory estimate counts
// workload.LazyRecordBytes, and each constant below fails to compile (a
// negative uintptr) if the two differ.
const lazyRowBytes = unsafe.Sizeof((*lazyRows)(nil).mask[0]) + unsafe.Sizeof((*lazyRows)(nil).rows[0])

const (
	_ = workload.LazyRecordBytes - lazyRowBytes
	_ = lazyRowBytes - workload.LazyRecordBytes
)

func newLazyRows(n int) *lazyRows {
	return &lazyRows{mask: make([]float32, n), rows: make([]int32, 0, n)}
}

// mark sets the mask's entries of the rows la's last batch touched.
func (z *lazyRows) mark(la LazyApplier) {
	z.rows = la.AppendLast(z.rows[:0])
	for _, r := range z.rows {
		z.mask[r] = 1
	}
}

// list makes rows the mask's nonzero entries.
func (z *lazyRows) list() {
	z.rows = z.rows[:0]
	for i, v := range z.mask {
		if v != 0 {
			z.rows = append(z.rows, int32(i))
		}
	}
}
