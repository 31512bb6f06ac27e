package kernel

// The sampled output layer's kernels: a layer stored a row per output
// (rows of width floats, row-major) of which only some rows — an active
// set — are computed for a given input. Each walks the listed rows in
// order on the calling goroutine, with the SIMD inner loops of the
// implementation in use; the caller parallelizes over inputs.

// RowDots sets z[j] = ⟨w[r_j], h⟩ for the rows r_j = rows[j] of the matrix
// w of rows of width = len(h) floats.
func RowDots(z, w []float32, rows []int32, h []float32) {
	width := len(h)
	z = z[:len(rows)]
	for j, r := range rows {
		lo := int(r) * width
		z[j], _ = cur.dot2(w[lo:lo+width], h)
	}
}

// RowDotsRef is the reference for RowDots.
func RowDotsRef(z, w []float32, rows []int32, h []float32) {
	width := len(h)
	for j, r := range rows {
		var s float32
		for i, x := range h {
			s += w[int(r)*width+i] * x
		}
		z[j] = s
	}
}

// RowsAxpy computes y += Σ_j a[j]·w[rows[j]], the rows of width = len(y).
func RowsAxpy(y, w []float32, rows []int32, a []float32) {
	width := len(y)
	a = a[:len(rows)]
	for j, r := range rows {
		lo := int(r) * width
		axpyUnitary(a[j], w[lo:lo+width], y)
	}
}

// RowsAxpyRef is the reference for RowsAxpy.
func RowsAxpyRef(y, w []float32, rows []int32, a []float32) {
	width := len(y)
	for j, r := range rows {
		for i := range y {
			y[i] += a[j] * w[int(r)*width+i]
		}
	}
}

// AxpyRows computes w[rows[j]] += a[j]·x for every j, the rows of width =
// len(x); a row listed twice gets both.
func AxpyRows(w []float32, rows []int32, a, x []float32) {
	width := len(x)
	a = a[:len(rows)]
	for j, r := range rows {
		lo := int(r) * width
		axpyUnitary(a[j], x, w[lo:lo+width])
	}
}

// AxpyRowsIn is AxpyRows for the listed rows r with lo ≤ r < hi only: the
// others are skipped. Parts that own disjoint ranges of the rows run it
// side by side over the same list, and each row then gets its terms in the
// list's order, as AxpyRows gives them: the sum is the same, bit for bit,
// however the rows are split.
func AxpyRowsIn(w []float32, rows []int32, a, x []float32, lo, hi int32) {
	width := len(x)
	a = a[:len(rows)]
	for j, r := range rows {
		if r >= lo && r < hi {
			at := int(r) * width
			axpyUnitary(a[j], x, w[at:at+width])
		}
	}
}

// AxpyRowsRef is the reference for AxpyRows.
func AxpyRowsRef(w []float32, rows []int32, a, x []float32) {
	width := len(x)
	for j, r := range rows {
		for i, v := range x {
			w[int(r)*width+i] += a[j] * v
		}
	}
}
