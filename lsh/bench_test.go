package lsh

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// The costs at SLIDE's Amazon-670k output layer (hidden 128, K 6, L 50):
// hashing one vector, building the tables over 100,000 rows (a seventh of
// the labels), and retrieving up to 0.5% of the rows for one input.
func BenchmarkHash(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	v := randVec(r, 128)
	codes := make([]uint32, 50)
	for _, name := range []string{"srp", "dwta"} {
		f := familyFor(b, name, 128, 6, 50)
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				f.Hash(codes, v)
			}
		})
	}
}

func familyFor(b *testing.B, name string, dim, k, l int) Family {
	var f Family
	var err error
	if name == "srp" {
		f, err = NewSRP(dim, k, l, 1)
	} else {
		f, err = NewDWTA(dim, k, l, 1)
	}
	if err != nil {
		b.Fatal(err)
	}
	return f
}

func BenchmarkBuild(b *testing.B) {
	const rows, dim = 100_000, 128
	w := matrix(rand.New(rand.NewPCG(1, 2)), rows, dim)
	for _, name := range []string{"srp", "dwta"} {
		ix, _ := NewIndex(familyFor(b, name, dim, 6, 50), rows, 128)
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				ix.Build(w, dim, 1)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/rows, "ns/row")
		})
	}
}

func BenchmarkActive(b *testing.B) {
	const rows, dim = 100_000, 128
	r := rand.New(rand.NewPCG(1, 3))
	w := matrix(r, rows, dim)
	q := randVec(r, dim)
	for _, name := range []string{"srp", "dwta"} {
		ix, _ := NewIndex(familyFor(b, name, dim, 6, 50), rows, 128)
		ix.Build(w, dim, 1)
		s, _ := NewSampler(ix, rows/200, 1)
		dst := make([]int32, 0, rows/200)
		b.Run(fmt.Sprint(name), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				dst = s.Retrieve(dst, q, []int32{1, 2, 3, 4, 5})
			}
		})
	}
}

// BenchmarkDWTABin sets the branch-free bin against the definition's loop
// (binReference), over the 300 bins of K 6 × L 50 for a dense vector (an
// output row) and for a ReLU-like one, half zeros (a hidden vector):
//
//	go test ./lsh -run NONE -bench DWTABin -count 3
func BenchmarkDWTABin(b *testing.B) {
	d, err := NewDWTA(128, 6, 50, 1)
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, kind := range []string{"dense", "relu"} {
		vs := make([][]float32, 64)
		for k := range vs {
			vs[k] = randVec(r, 128)
			for i, x := range vs[k] {
				if kind == "relu" && x < 0 {
					vs[k][i] = 0
				}
			}
		}
		for _, impl := range []string{"reference", "branchless"} {
			b.Run(kind+"/"+impl, func(b *testing.B) {
				var sum, k int
				for b.Loop() {
					v := vs[k&63]
					k++
					for bin := range d.k * d.l {
						if impl == "reference" {
							sum += int(binReference(d, v, bin))
						} else {
							sum += int(d.bin(v, bin))
						}
					}
				}
				benchSink = sum
			})
		}
	}
}

var benchSink int
