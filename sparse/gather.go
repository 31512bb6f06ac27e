package sparse

// Gather copies the given rows of src, in order, into dst, reusing dst's
// buffers. It allocates only when dst's buffers are too small, so a caller that
// sizes them once with Reserve gathers without allocating.
func Gather(dst *CSR, src *CSR, rows []int32) {
	n := 0
	for _, r := range rows {
		n += src.RowNNZ(int(r))
	}
	dst.Reserve(len(rows), n, src.Values == nil)
	dst.Rows, dst.Cols = len(rows), src.Cols
	dst.Indptr = dst.Indptr[:len(rows)+1]
	dst.Indices = dst.Indices[:n]
	if src.Values != nil {
		dst.Values = dst.Values[:n]
	} else {
		dst.Values = nil
	}
	dst.Indptr[0] = 0
	var at int64
	for i, r := range rows {
		lo, hi := src.Indptr[r], src.Indptr[r+1]
		copy(dst.Indices[at:], src.Indices[lo:hi])
		if src.Values != nil {
			copy(dst.Values[at:], src.Values[lo:hi])
		}
		at += hi - lo
		dst.Indptr[i+1] = at
	}
}

// Reserve grows m's buffers to hold rows rows and nnz entries without
// changing its contents' meaning. With pattern false it also reserves values.
func (m *CSR) Reserve(rows, nnz int, pattern bool) {
	if cap(m.Indptr) < rows+1 {
		m.Indptr = make([]int64, rows+1)
	}
	if cap(m.Indices) < nnz {
		m.Indices = make([]int32, nnz)
	}
	if !pattern && cap(m.Values) < nnz {
		// Keep the backing array across pattern/non-pattern gathers.
		m.Values = make([]float32, nnz)
	}
}

// MaxNNZ returns the largest number of entries any k rows of m can hold
// together: the sum of the k largest row lengths. A batch buffer reserved with
// it never grows.
func (m *CSR) MaxNNZ(k int) int {
	if k >= m.Rows {
		return m.NNZ()
	}
	// Counting sort over row lengths keeps this O(rows + max length).
	maxLen := 0
	for i := 0; i < m.Rows; i++ {
		maxLen = max(maxLen, m.RowNNZ(i))
	}
	count := make([]int, maxLen+1)
	for i := 0; i < m.Rows; i++ {
		count[m.RowNNZ(i)]++
	}
	total := 0
	for l := maxLen; l >= 0 && k > 0; l-- {
		take := min(count[l], k)
		total += take * l
		k -= take
	}
	return total
}
