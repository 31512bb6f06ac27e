package hugepage

import (
	"slices"
	"testing"
)

// Vectors from Floats are zero and as long as asked, advised or not; Clone
// copies; the advice changes no value.
func TestFloats(t *testing.T) {
	for _, n := range []int{0, 1, Min - 1, Min, 3*Min + 5} {
		s := Floats(n)
		if len(s) != n {
			t.Fatalf("Floats(%d): %d long", n, len(s))
		}
		for i, v := range s {
			if v != 0 {
				t.Fatalf("Floats(%d)[%d] = %v", n, i, v)
			}
		}
		for i := range s {
			s[i] = float32(i)
		}
		c := Clone(s)
		if !slices.Equal(c, s) || (n > 0 && &c[0] == &s[0]) {
			t.Fatalf("Clone of %d: not an equal copy", n)
		}
	}
}
