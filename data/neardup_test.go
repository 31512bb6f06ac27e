package data

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// bruteNearDuplicates is nearDuplicateShare by comparing every pair.
func bruteNearDuplicates(rows [][]int32) float64 {
	n := 0
	for i, x := range rows {
		if len(x) < nearDuplicateMinFeatures {
			continue
		}
		for j, y := range rows {
			if i == j || len(y) < nearDuplicateMinFeatures {
				continue
			}
			c := 0
			for _, f := range x {
				if slices.Contains(y, f) {
					c++
				}
			}
			// c/(|x|+|y|−c) ≥ p/q, in whole numbers.
			if jaccardDen*c >= jaccardNum*(len(x)+len(y)-c) {
				n++
				break
			}
		}
	}
	return float64(n) / float64(max(len(rows), 1))
}

// The prefix-filtered join finds exactly the rows that comparing every
// pair finds, on sets with families of perturbed copies, exact copies,
// rows of every length and features of skewed frequencies.
func TestNearDuplicateShareMatchesEveryPair(t *testing.T) {
	between := 0
	for seed := range uint64(40) {
		r := rand.New(rand.NewPCG(seed, 7))
		D := 20 + r.IntN(60)
		fresh := func() []int32 {
			m := 1 + r.IntN(14)
			var row []int32
			for len(row) < m {
				f := int32(float64(D) * r.Float64() * r.Float64()) // frequent low ids
				if !slices.Contains(row, f) {
					row = append(row, f)
				}
			}
			return row
		}
		var rows [][]int32
		for range 50 + r.IntN(150) {
			if len(rows) > 0 && r.Float64() < 0.4 {
				// A copy of an earlier row, some features swapped.
				row := slices.Clone(rows[r.IntN(len(rows))])
				for k := range row {
					if f := int32(r.IntN(D)); r.Float64() < 0.3 && !slices.Contains(row, f) {
						row[k] = f
					}
				}
				r.Shuffle(len(row), func(i, j int) { row[i], row[j] = row[j], row[i] })
				rows = append(rows, row)
				continue
			}
			rows = append(rows, fresh())
		}
		got, want := nearDuplicateShare(rows), bruteNearDuplicates(rows)
		if got != want {
			t.Fatalf("seed %d, %d rows over %d features: share %.4f, every pair %.4f", seed, len(rows), D, got, want)
		}
		if want > 0 && want < 1 {
			between++
		}
	}
	if between < 30 {
		t.Errorf("a share strictly between 0 and 1 at %d seeds of 40: the sets test little", between)
	}
}

// The join against comparing every pair, on rows the fuzzer writes: each
// byte a feature (of 40) of the current row, 255 starting the next.
func FuzzNearDuplicateShare(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 255, 1, 2, 3, 4, 7, 8, 255, 9, 8, 7, 6, 5})
	f.Add([]byte{0, 1, 2, 3, 4, 255, 4, 3, 2, 1, 0, 255, 0, 1, 2, 3, 255, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14})
	f.Fuzz(func(t *testing.T, b []byte) {
		rows := [][]int32{nil}
		for _, c := range b {
			if c == 255 {
				rows = append(rows, nil)
				continue
			}
			r := &rows[len(rows)-1]
			if f := int32(c % 40); !slices.Contains(*r, f) {
				*r = append(*r, f)
			}
		}
		if got, want := nearDuplicateShare(rows), bruteNearDuplicates(rows); got != want {
			t.Fatalf("%v: share %v, every pair %v", rows, got, want)
		}
	})
}

// Known answers at the bounds: a Jaccard index of exactly one half is a
// near-duplicate, one under it is not, and rows of fewer than
// nearDuplicateMinFeatures features never are, even when equal.
func TestNearDuplicateShareBounds(t *testing.T) {
	for _, c := range []struct {
		rows [][]int32
		want float64
	}{
		{[][]int32{{1, 2, 3, 4, 5, 6}, {1, 2, 3, 4, 7, 8}}, 1},           // 4 of 8
		{[][]int32{{1, 2, 3, 4, 5, 6}, {1, 2, 3, 7, 8, 9}}, 0},           // 3 of 9
		{[][]int32{{1, 2, 3, 4, 5}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}}, 1}, // 5 of 10
		{[][]int32{{1, 2, 3, 4, 5}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}}, 0},
		{[][]int32{{1, 2, 3, 4}, {1, 2, 3, 4}, {9, 8, 7, 6, 5}}, 0},
		{[][]int32{{5, 6, 7, 8, 9}, {9, 8, 7, 6, 5}, {9, 8, 7, 6, 5}, {1, 2}}, 0.75},
		{nil, 0},
	} {
		if got := nearDuplicateShare(c.rows); got != c.want {
			t.Errorf("%v: share %v, want %v", c.rows, got, c.want)
		}
	}
}

// The report sets the share of near-duplicates beside the set's, and
// says so when the set has more than nearDuplicateMismatch more.
func TestStandInReportSaysTheSetHasNearDuplicates(t *testing.T) {
	for _, c := range []struct {
		real, stand float64
		note        bool
	}{{0.03, 0.02, false}, {0.1726, 0.0216, true}, {0, 0.05, false}} {
		s := HandMadeStandIn()
		s.Real = &Summary{Points: 3000, NearDuplicates: c.real, NearDuplicatePoints: 3000}
		train := GenStats{Summary: &Summary{NearDuplicates: c.stand, NearDuplicatePoints: 3000}}
		var b strings.Builder
		if err := WriteStandInReport(&b, s, train, GenStats{}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), fmt.Sprintf("near-duplicates              %.4f       %.4f", c.real, c.stand)) {
			t.Errorf("set %.4f, stand-in %.4f: no near-duplicates row in\n%s", c.real, c.stand, b.String())
		}
		if got := strings.Contains(b.String(), "have a near-duplicate"); got != c.note {
			t.Errorf("set %.4f, stand-in %.4f: note %v, want %v, in\n%s", c.real, c.stand, got, c.note, b.String())
		}
	}
}

// A generated training split and a summarized set count their
// near-duplicates on the same number of points, spread evenly over the
// set: a set whose second half copies its first has them all.
func TestSummarizeCountsNearDuplicates(t *testing.T) {
	var b strings.Builder
	fmt.Fprintf(&b, "400 1000 3\n")
	for i := range 400 {
		k := i % 200
		fmt.Fprintf(&b, "%d %d:1 %d:1 %d:1 %d:1 %d:1\n", i%3, k, 200+k, 400+k, 600+k, 800+k)
	}
	d, err := ReadXC(strings.NewReader(b.String()), "copies")
	if err != nil {
		t.Fatal(err)
	}
	sm := Summarize(d, 0)
	if sm.NearDuplicates != 1 || sm.NearDuplicatePoints != 400 {
		t.Errorf("near-duplicates %.4f on %d points, want 1 on 400", sm.NearDuplicates, sm.NearDuplicatePoints)
	}
}

// The near-duplicates are counted on at most nearDuplicateMaxPoints
// points, and fewer when their rows are long.
func TestNearDuplicateRows(t *testing.T) {
	for _, c := range []struct {
		n        int
		perPoint float64
		want     int
	}{{10, 5, 10}, {100000, 75, 20000}, {100000, 301, 13934}, {100000, 1e7, 1}, {100000, 0, 20000}} {
		if got := nearDuplicateRows(c.n, c.perPoint); got != c.want {
			t.Errorf("%d points of %g features: %d rows, want %d", c.n, c.perPoint, got, c.want)
		}
	}
}

func BenchmarkNearDuplicateShare(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	rows := make([][]int32, 10000)
	for i := range rows {
		if i > 0 && r.Float64() < 0.2 {
			rows[i] = slices.Clone(rows[r.IntN(i)])
			continue
		}
		for range 10 + r.IntN(60) {
			rows[i] = append(rows[i], int32(2000*r.Float64()*r.Float64()))
		}
		slices.Sort(rows[i])
		rows[i] = slices.Compact(rows[i])
	}
	b.ResetTimer()
	for range b.N {
		nearDuplicateShare(rows)
	}
}
