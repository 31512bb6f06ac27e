package kernel

import (
	"math/rand/v2"
	"testing"

	"github.com/hetsgd/hetsgd/internal/hugepage"
)

// The row kernels against their references with every implementation,
// widths across the SIMD blocks' edges, rows repeated.
func TestRowKernels(t *testing.T) {
	forEachImpl(t, func(name string) {
		r := rand.New(rand.NewPCG(4, 4))
		for _, width := range []int{1, 3, 8, 15, 16, 17, 64, 128, 131} {
			const n = 40
			w := randSlice(r, n*width)
			h := randSlice(r, width)
			rows := []int32{0, 5, 5, 39, 12, 1}
			a := randSlice(r, len(rows))
			z, zr := make([]float32, len(rows)), make([]float32, len(rows))
			RowDots(z, w, rows, h)
			RowDotsRef(zr, w, rows, h)
			if i, ok := closeTo(z, zr, 1e-5, float64(width)); !ok {
				t.Fatalf("%s width %d: RowDots[%d] = %v, reference %v", name, width, i, z[i], zr[i])
			}
			y, yr := append([]float32(nil), h...), append([]float32(nil), h...)
			RowsAxpy(y, w, rows, a)
			RowsAxpyRef(yr, w, rows, a)
			if i, ok := closeTo(y, yr, 1e-5, float64(len(rows))); !ok {
				t.Fatalf("%s width %d: RowsAxpy[%d] = %v, reference %v", name, width, i, y[i], yr[i])
			}
			v, vr := append([]float32(nil), w...), append([]float32(nil), w...)
			AxpyRows(v, rows, a, h)
			AxpyRowsRef(vr, rows, a, h)
			if i, ok := closeTo(v, vr, 1e-5, 2); !ok {
				t.Fatalf("%s width %d: AxpyRows[%d] = %v, reference %v", name, width, i, v[i], vr[i])
			}
			// Split at rows 5 and 13: the same sums, bit for bit.
			u := append([]float32(nil), w...)
			for _, cut := range [][2]int32{{13, n}, {0, 5}, {5, 13}} {
				AxpyRowsIn(u, rows, a, h, cut[0], cut[1])
			}
			for i := range u {
				if u[i] != v[i] {
					t.Fatalf("%s width %d: AxpyRowsIn in three ranges [%d] = %v, AxpyRows %v", name, width, i, u[i], v[i])
				}
			}
		}
	})
}

// BenchmarkUpdateRows is the sampled layer's lazy Adam at the Amazon-670K
// shape: 200,000 random rows of 129 floats (a batch's union, about) of a
// 670,091-row layer, 28 bytes moved a parameter. It is bound by memory,
// not by the cores: run it on one core and on two to see what a second
// core adds,
//
//	go test -c -o kernel.test ./kernel
//	taskset -c 0 ./kernel.test -test.run NONE -test.bench UpdateRows -test.cpu 1
//	./kernel.test -test.run NONE -test.bench UpdateRows
func BenchmarkUpdateRows(b *testing.B) {
	const layer, width, touched = 670_091, 129, 200_000
	rows := make([]int32, 0, touched)
	r := rand.New(rand.NewPCG(1, 1))
	for _, k := range r.Perm(layer)[:touched] {
		rows = append(rows, int32(k))
	}
	// The vectors as plain slices, and as a run allocates them (huge pages
	// advised, internal/hugepage).
	for _, pages := range []string{"plain", "huge"} {
		alloc := func(n int) []float32 { return make([]float32, n) }
		if pages == "huge" {
			alloc = hugepage.Floats
		}
		p, g := alloc(layer*width), alloc(layer*width)
		u := &Update{Rule: AdamRule, LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, C2: 1,
			M: alloc(layer * width), V: alloc(layer * width)}
		for _, v := range [][]float32{p, g, u.M, u.V} {
			for i := range v {
				v[i] = 1 // fault every page in before timing
			}
		}
		b.Run(pages, func(b *testing.B) {
			for b.Loop() {
				ApplyUpdateRows(p, g, u, 0, rows, width)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e6, "ms/update")
			b.ReportMetric(28*float64(touched*width)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

// Codes8 against the portable loop on every implementation, empty bins
// (tops below 8) flagged by row.
func TestCodes8(t *testing.T) {
	r := rand.New(rand.NewPCG(63, 64))
	for _, kl := range [][2]int{{1, 1}, {6, 50}, {10, 3}, {3, 7}} {
		k, l := kl[0], kl[1]
		top := make([]uint64, 8*k*l)
		for i := range top {
			top[i] = r.Uint64()>>4 | 8
			if r.IntN(200) == 0 {
				top[i] = uint64(r.IntN(8)) // no winner
			}
		}
		top[2], top[3] = 8, 7 // the edge: 8 has a winner, 7 none
		want := make([]uint64, 8*l)
		wantEmpty := codes8Go(want, top, k, l)
		if wantEmpty&(1<<3) == 0 {
			t.Fatalf("reference empty rows %08b: row 3 not flagged", wantEmpty)
		}
		// The definition, on lane 5 of table 0.
		var c uint64
		for j := range k {
			c = c<<3 | uint64(7-int(top[8*j+5]&7))
		}
		if want[5] != c {
			t.Fatalf("reference lane 5 = %#x, want %#x", want[5], c)
		}
		forEachImpl(t, func(name string) {
			got := make([]uint64, 8*l+1)
			if e := Codes8(got, top, k, l); e != wantEmpty {
				t.Fatalf("%s K %d L %d: empty rows %08b, want %08b", name, k, l, e, wantEmpty)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("%s K %d L %d: codes[%d] = %#x, want %#x", name, k, l, i, got[i], want[i])
				}
			}
			if got[8*l] != 0 {
				t.Fatalf("%s: wrote past the tables", name)
			}
		})
	}
}

// MaxKeys8 against the portable loop, on every implementation, and its
// check of the indices.
func TestMaxKeys8(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 62))
	const entries, groups = 37, 50
	keys := make([]uint64, 8*entries)
	for i := range keys {
		keys[i] = r.Uint64() &^ 7
		if r.IntN(4) == 0 {
			keys[i] = 0
		}
		if r.IntN(8) == 0 {
			keys[i] = keys[max(i-8, 0)] // ties with another entry's lane
		}
	}
	idx := make([]int32, 8*groups)
	for i := range idx {
		idx[i] = int32(r.IntN(entries))
	}
	want := make([]uint64, 8*groups)
	maxKeys8Go(want, keys, idx)
	g, err := NewGroups(idx)
	if err != nil {
		t.Fatal(err)
	}
	forEachImpl(t, func(name string) {
		got := make([]uint64, 8*groups+1)
		MaxKeys8(got, keys, g)
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s: top[%d] = %#x, want %#x", name, i, got[i], want[i])
			}
		}
		if got[8*groups] != 0 {
			t.Fatalf("%s: wrote past the groups", name)
		}
	})
	// A spot check of the definition: lane 3 of group 0.
	var m uint64
	for j := range 8 {
		m = max(m, keys[8*int(idx[j])+3]|uint64(7-j))
	}
	if want[3] != m {
		t.Fatalf("reference lane 3 = %#x, want %#x", want[3], m)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Errorf("an index past %d entries accepted", entries-8)
			}
		}()
		MaxKeys8(want, keys[:8*(entries-8)], g)
	}()
	if _, err := NewGroups([]int32{1, 2, 3}); err == nil {
		t.Error("3 indices made groups")
	}
	if _, err := NewGroups([]int32{0, 1, 2, 3, 4, 5, 6, -1}); err == nil {
		t.Error("a negative index accepted")
	}
}
