package model

// TopK writes into dst the indices of the k largest values of row, largest
// first (ties: lower index first), and returns dst[:k]. k ≤ len(row) and
// len(dst) ≥ k. One pass with an insertion-sorted buffer: O(len(row)·k) in the
// worst case, O(len(row)) for the small k of P@k.
func TopK(row []float32, k int, dst []int32) []int32 {
	k = min(k, len(row))
	dst = dst[:k]
	if k == 0 {
		return dst
	}
	n := 0
	for j, v := range row {
		if n == k && !(v > row[dst[k-1]]) {
			continue
		}
		// Insert j, shifting smaller entries down.
		pos := min(n, k-1)
		for pos > 0 && v > row[dst[pos-1]] {
			dst[pos] = dst[pos-1]
			pos--
		}
		dst[pos] = int32(j)
		if n < k {
			n++
		}
	}
	return dst
}
