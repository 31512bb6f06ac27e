package hugepage

// Min is the smallest vector Floats advises: below a few huge pages the
// TLB covers it anyway.
const Min = 4 << 20 / 4

// Floats returns a zeroed vector of n floats, advised to be backed by huge
// pages when it is at least Min long. Its pages are not touched here: the
// advice takes effect when they are first written.
func Floats(n int) []float32 {
	s := make([]float32, n)
	if n >= Min {
		advise(s)
	}
	return s
}

// Clone returns a copy of x in a vector from Floats.
func Clone(x []float32) []float32 {
	s := Floats(len(x))
	copy(s, x)
	return s
}
