package lsh

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/hetsgd/hetsgd/kernel"
)

func randVec(r *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

func families(t *testing.T, dim, k, l int, seed uint64) map[string]Family {
	t.Helper()
	s, err := NewSRP(dim, k, l, seed)
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewDWTA(dim, k, l, seed)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]Family{"srp": s, "dwta": d}
}

// Both families see a vector and its positive multiples alike, keep their
// codes within their bits, and draw the same functions from the same seed.
func TestHashBasics(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for name, f := range families(t, 128, 6, 50, 7) {
		g := families(t, 128, 6, 50, 7)[name]
		a, b, c := make([]uint32, 50), make([]uint32, 50), make([]uint32, 50)
		for range 20 {
			v := randVec(r, 128)
			f.Hash(a, v)
			w := slices.Clone(v)
			for i := range w {
				w[i] *= 3.5
			}
			f.Hash(b, w)
			g.Hash(c, v)
			if !slices.Equal(a, b) || !slices.Equal(a, c) {
				t.Fatalf("%s: codes %v, of 3.5·v %v, of another family from the seed %v", name, a[:4], b[:4], c[:4])
			}
			for _, x := range a {
				if x >= 1<<f.Bits() {
					t.Fatalf("%s: code %d beyond %d bits", name, x, f.Bits())
				}
			}
		}
	}
}

// A table of K sign bits collides for two vectors at angle θ with
// probability (1 − θ/π)^K (Charikar); the measured rate over many pairs is
// within a few standard errors of it.
func TestSRPCollisionRate(t *testing.T) {
	const dim, k, l = 64, 2, 400
	s, err := NewSRP(dim, k, l, 3)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	a, b := make([]uint32, l), make([]uint32, l)
	for _, theta := range []float64{0.3, 1.0, 2.0} {
		hits, trials := 0, 0
		for range 50 {
			// u and w orthonormal; v at angle θ from u.
			u, w := randVec(r, dim), randVec(r, dim)
			normalize(u)
			var d float32
			for i := range w {
				d += w[i] * u[i]
			}
			for i := range w {
				w[i] -= d * u[i]
			}
			normalize(w)
			v := make([]float32, dim)
			for i := range v {
				v[i] = float32(math.Cos(theta))*u[i] + float32(math.Sin(theta))*w[i]
			}
			s.Hash(a, u)
			s.Hash(b, v)
			for i := range a {
				if a[i] == b[i] {
					hits++
				}
				trials++
			}
		}
		// Sparse projections (a third of the coordinates) follow the law
		// only approximately: 0.06 is about three times the spread seen.
		want := math.Pow(1-theta/math.Pi, k)
		if got := float64(hits) / float64(trials); math.Abs(got-want) > 0.06 {
			t.Errorf("θ %.1f: collision rate %.3f, want about %.3f", theta, got, want)
		}
	}
}

func normalize(v []float32) {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	for i := range v {
		v[i] /= float32(math.Sqrt(n))
	}
}

// DWTA: near vectors collide far more often than unrelated ones; a bin with
// no non-zero coordinate borrows another's value, so a sparse vector still
// hashes by its non-zeros; the zero vector goes to bucket 0.
func TestDWTA(t *testing.T) {
	const dim, k, l = 128, 2, 200
	d, err := NewDWTA(dim, k, l, 9)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 1))
	a, b := make([]uint32, l), make([]uint32, l)
	rate := func(noise float64) float64 {
		hits := 0
		for range 40 {
			u := randVec(r, dim)
			v := slices.Clone(u)
			w := randVec(r, dim)
			for i := range v {
				v[i] += float32(noise) * w[i]
			}
			d.Hash(a, u)
			d.Hash(b, v)
			for i := range a {
				if a[i] == b[i] {
					hits++
				}
			}
		}
		return float64(hits) / float64(40*l)
	}
	near, far := rate(0.1), rate(100)
	// Unrelated vectors collide as two independent 3-bit values a table,
	// (1/8)^2.
	if near < 0.5 || far > 0.04 {
		t.Errorf("collision rate %.3f for near vectors, %.3f for unrelated ones", near, far)
	}
	// A vector with one non-zero, c, in a family whose bins hold each
	// coordinate at most once: the one bin that holds c has c's place in it
	// as its value, and every other bin is empty and must borrow that value
	// (a densification that gave empty bins 0, or their own garbage, would
	// show). c is taken at place 5 of a bin, so the value is 5.
	sparse, err := NewDWTA(1024, 2, 20, 3) // 40 bins of 8: 320 of 1024 coordinates
	if err != nil {
		t.Fatal(err)
	}
	v := make([]float32, 1024)
	v[sparse.bins[5]] = 2
	codes := make([]uint32, 20)
	sparse.Hash(codes, v)
	for tb, c := range codes {
		if c != 5<<binBits|5 {
			t.Fatalf("table %d: code %o, want 55 (octal): both values borrowed from the one bin holding the non-zero", tb, c)
		}
	}
	d.Hash(a, make([]float32, dim))
	for _, c := range a {
		if c != 0 {
			t.Fatalf("the zero vector hashes to %d", c)
		}
	}
}

// matrix is a rows×dim matrix of standard normal entries.
func matrix(r *rand.Rand, rows, dim int) []float32 { return randVec(r, rows*dim) }

// Every row sits in the bucket of its code in every table, once, unless
// its bucket is full; full buckets hold Capacity rows in increasing order;
// the same seed builds the same tables.
func TestIndexBuild(t *testing.T) {
	const rows, dim = 3000, 32
	r := rand.New(rand.NewPCG(2, 2))
	w := matrix(r, rows, dim)
	for name, f := range families(t, dim, 3, 8, 4) {
		for _, capacity := range []int{rows, 16} {
			ix, err := NewIndex(f, rows, capacity)
			if err != nil {
				t.Fatal(err)
			}
			ix.Build(w, dim, 1)
			codes := make([]uint32, f.Tables())
			per := make([]map[uint32]int, f.Tables())
			for i := range rows {
				f.Hash(codes, w[i*dim:(i+1)*dim])
				for tb, c := range codes {
					if per[tb] == nil {
						per[tb] = map[uint32]int{}
					}
					per[tb][c]++
					got := ix.Bucket(tb, c)
					if n := countOf(got, int32(i)); n > 1 || (n == 0 && per[tb][c] <= capacity && len(got) < capacity) {
						t.Fatalf("%s cap %d: row %d is %d times in table %d's bucket %d (%d rows)", name, capacity, i, n, tb, c, len(got))
					}
				}
			}
			for tb := range f.Tables() {
				for c, n := range per[tb] {
					b := ix.Bucket(tb, c)
					if len(b) != min(n, capacity) || !slices.IsSorted(b) {
						t.Fatalf("%s cap %d: table %d bucket %d holds %v for %d rows", name, capacity, tb, c, len(b), n)
					}
				}
			}
			again, _ := NewIndex(f, rows, capacity)
			again.Build(w, dim, 1)
			for tb := range f.Tables() {
				if !slices.Equal(ix.ids[tb], again.ids[tb]) {
					t.Fatalf("%s: the same seed built other tables", name)
				}
			}
		}
	}
}

func countOf(s []int32, x int32) int {
	n := 0
	for _, v := range s {
		if v == x {
			n++
		}
	}
	return n
}

// Retrieve gives at most Size distinct rows, its labels first, and a row
// that equals the query collides in every table and is always in; Fill
// gives k distinct rows, the same from the same seed, every row when k is
// at least their number.
func TestSampler(t *testing.T) {
	const rows, dim = 5000, 64
	r := rand.New(rand.NewPCG(3, 3))
	w := matrix(r, rows, dim)
	for name, f := range families(t, dim, 4, 20, 5) {
		// Buckets hold every row that hashes to them (about 300 at K = 4).
		ix, err := NewIndex(f, rows, rows)
		if err != nil {
			t.Fatal(err)
		}
		ix.Build(w, dim, 2)
		s, err := NewSampler(ix, 100, 1)
		if err != nil {
			t.Fatal(err)
		}
		var dst []int32
		for q := range 50 {
			row := int32(r.IntN(rows))
			labels := []int32{int32(q), int32(q + 7), int32(q)}
			dst = s.Retrieve(dst, w[int(row)*dim:int(row+1)*dim], labels)
			if len(dst) > 100 || dst[0] != int32(q) || dst[1] != int32(q+7) {
				t.Fatalf("%s: %d rows starting %v", name, len(dst), dst[:3])
			}
			if !distinct(dst) {
				t.Fatalf("%s: rows repeat in %v", name, dst)
			}
			if !slices.Contains(dst, row) {
				t.Fatalf("%s: the query's own row %d is not retrieved", name, row)
			}
		}
		fill := s.Fill(nil, 300)
		again, _ := NewSampler(ix, 100, 1)
		if len(fill) != 300 || !distinct(fill) || !slices.Equal(fill, again.Fill(nil, 300)) {
			t.Fatalf("%s: fill of %d rows, distinct %v, the same from the same seed %v", name, len(fill), distinct(fill), slices.Equal(fill, again.Fill(nil, 300)))
		}
		if all := s.Fill(nil, rows+3); len(all) != rows || !slices.IsSorted(all) {
			t.Fatalf("%s: a fill of every row gave %d", name, len(all))
		}
	}
}

func distinct(s []int32) bool {
	c := slices.Clone(s)
	slices.Sort(c)
	return len(slices.Compact(c)) == len(s)
}

// What the tables are for: the row of largest inner product with a query is
// far more often among 2% of the rows retrieved than chance would put it — at least 5
// times as often even for Gaussian rows, where the best row is at about 66°
// from the query (real weight rows cluster, and do better).
func TestSamplerFindsLargeInnerProducts(t *testing.T) {
	const rows, dim, size = 20000, 128, 400
	r := rand.New(rand.NewPCG(8, 8))
	w := matrix(r, rows, dim)
	for _, tc := range []struct {
		name string
		k, l int
	}{{"srp", 8, 50}, {"dwta", 3, 50}} {
		f := families(t, dim, tc.k, tc.l, 6)[tc.name]
		ix, _ := NewIndex(f, rows, 128)
		ix.Build(w, dim, 1)
		s, _ := NewSampler(ix, size, 1)
		found := 0
		const queries = 100
		var dst []int32
		for range queries {
			q := randVec(r, dim)
			best, top := -1, float32(math.Inf(-1))
			for i := range rows {
				var d float32
				for j, x := range w[i*dim : (i+1)*dim] {
					d += x * q[j]
				}
				if d > top {
					best, top = i, d
				}
			}
			dst = s.Retrieve(dst, q, nil)
			if slices.Contains(dst, int32(best)) {
				found++
			}
		}
		chance := float64(size) / rows
		if got := float64(found) / queries; got < 5*chance {
			t.Errorf("%s: the top row is active for %.2f of the queries, chance %.2f", tc.name, got, chance)
		} else {
			t.Logf("%s: the top row is active for %.2f of the queries (chance %.2f)", tc.name, got, chance)
		}
	}
}

// table is a Family for tests: vector v falls in bucket v[t] of table t.
type table struct{ l int }

func (f table) Tables() int { return f.l }
func (f table) Bits() int   { return 2 }
func (f table) Hash(codes []uint32, v []float32) {
	for t := range f.l {
		codes[t] = uint32(v[t])
	}
}

// Candidates rank by the number of tables that retrieve them, ties in the
// order the tables list them; rows no table holds are not retrieved.
func TestSamplerRanking(t *testing.T) {
	rows := [][]float32{
		{1, 1, 1}, // 0: no table
		{0, 1, 1}, // 1: one table
		{0, 0, 1}, // 2: two tables
		{0, 0, 0}, // 3: all three
		{3, 0, 0}, // 4: two tables, found after row 2
		{2, 2, 2}, // 5: none
	}
	var w []float32
	for _, r := range rows {
		w = append(w, r...)
	}
	ix, err := NewIndex(table{3}, len(rows), 8)
	if err != nil {
		t.Fatal(err)
	}
	ix.Build(w, 3, 1)
	q := []float32{0, 0, 0}
	for size, want := range map[int][]int32{1: {3}, 2: {3, 2}, 3: {3, 2, 4}, 4: {3, 2, 4, 1}, 6: {3, 2, 4, 1}} {
		s, _ := NewSampler(ix, size, 1)
		if got := s.Retrieve(nil, q, nil); !slices.Equal(got, want) {
			t.Errorf("size %d: %v, want %v", size, got, want)
		}
	}
	// A label goes first and is not ranked again.
	s, _ := NewSampler(ix, 5, 1)
	if got := s.Retrieve(nil, q, []int32{2}); !slices.Equal(got, []int32{2, 3, 4, 1}) {
		t.Errorf("with label 2: %v", got)
	}
}

// Pad completes what Retrieve gave with distinct random rows, none of them
// already there, to the size asked.
func TestSamplerPad(t *testing.T) {
	ix, err := NewIndex(table{3}, 50, 8)
	if err != nil {
		t.Fatal(err)
	}
	w := make([]float32, 150)
	for i := range 50 {
		w[3*i] = float32(i % 4) // rows 0, 4, 8, ... share the query's first bucket
	}
	ix.Build(w, 3, 1)
	s, _ := NewSampler(ix, 30, 1)
	got := s.Retrieve(nil, []float32{0, 0, 0}, []int32{1})
	n := len(got)
	got = s.Pad(got, 25)
	if len(got) != 25 || !distinct(got) || got[0] != 1 || n >= 25 {
		t.Fatalf("retrieved %d, padded to %v", n, got)
	}
	if all := s.Pad(s.Retrieve(nil, []float32{0, 0, 0}, nil), 99); len(all) != 50 || !distinct(all) {
		t.Fatalf("padding to more than every row gave %d rows", len(all))
	}
}

// DWTA needs bins of 8 coordinates.
func TestDWTATooNarrow(t *testing.T) {
	if _, err := NewDWTA(7, 2, 3, 1); err == nil {
		t.Fatal("a DWTA family of dimension 7 was made")
	}
}

// Padding beyond the retrieval budget may draw the rows the budget cut
// off, and reaches its size (every row, when it asks for them all).
func TestSamplerPadPastBudget(t *testing.T) {
	ix, err := NewIndex(table{3}, 10, 10)
	if err != nil {
		t.Fatal(err)
	}
	ix.Build(make([]float32, 30), 3, 1) // every row in bucket 0 of every table
	s, _ := NewSampler(ix, 2, 1)
	got := s.Retrieve(nil, []float32{0, 0, 0}, nil)
	if len(got) != 2 {
		t.Fatalf("retrieved %d rows, budget 2", len(got))
	}
	if got = s.Pad(got, 10); len(got) != 10 || !distinct(got) {
		t.Fatalf("padded to %v", got)
	}
}

// binReference is a bin's winner as the definition reads: the first
// largest non-zero coordinate, −1 when all are zero.
func binReference(d *DWTA, v []float32, b int) int8 {
	best, at := float32(0), int8(-1)
	for j, i := range d.bins[b*binSize : (b+1)*binSize] {
		if x := v[i]; x != 0 && (at < 0 || x > best) {
			best, at = x, int8(j)
		}
	}
	return at
}

// The branch-free bin picks what the definition does, on vectors of
// zeros, negative values, signed zeros and ties.
func TestDWTABinMatchesReference(t *testing.T) {
	d, err := NewDWTA(64, 6, 50, 3)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	v := make([]float32, 64)
	for range 500 {
		for i := range v {
			switch r.IntN(5) {
			case 0:
				v[i] = 0
			case 1:
				v[i] = float32(math.Copysign(0, -1))
			case 2:
				v[i] = float32(r.IntN(3)) - 1 // ties
			default:
				v[i] = float32(r.NormFloat64())
			}
		}
		var keys [keyedDim]uint64
		for i, x := range v {
			keys[i] = binKey(x)
		}
		for b := range d.k * d.l {
			if got, want := d.bin(v, b), binReference(d, v, b); got != want {
				t.Fatalf("bin %d of %v: %d, want %d", b, v, got, want)
			}
			if got, want := d.keyedValue(&keys, b), d.value(v, b); got != want {
				t.Fatalf("keyed value of bin %d of %v: %d, want %d", b, v, got, want)
			}
		}
	}
}

// Build runs on every core and its tables do not depend on how many there
// are: one worker and four build the same tables, bucket for bucket; after
// the first Build, a Build allocates nothing.
func TestIndexBuildParallel(t *testing.T) {
	const rows, dim = 3000, 32
	defer kernel.SetThreads(0)
	r := rand.New(rand.NewPCG(3, 3))
	w := matrix(r, rows, dim)
	for name, f := range families(t, dim, 3, 8, 4) {
		var built [2]*Index
		for i, threads := range []int{1, 4} {
			kernel.SetThreads(threads)
			ix, err := NewIndex(f, rows, 16)
			if err != nil {
				t.Fatal(err)
			}
			ix.Build(w, dim, 7)
			built[i] = ix
		}
		for tb := range f.Tables() {
			if !slices.Equal(built[0].ids[tb], built[1].ids[tb]) || !slices.Equal(built[0].start[tb], built[1].start[tb]) {
				t.Fatalf("%s: table %d differs between 1 and 4 workers", name, tb)
			}
		}
		ix := built[1]
		if a := testing.AllocsPerRun(5, func() { ix.Build(w, dim, 8) }); a != 0 {
			t.Errorf("%s: Build allocates %v times after the first", name, a)
		}
	}
}

// Tables survive their encoding: an index restored from another's bytes
// holds the same buckets; bytes cut short, or naming a row the index does
// not have, are refused.
func TestIndexMarshal(t *testing.T) {
	const rows, dim = 500, 16
	r := rand.New(rand.NewPCG(5, 5))
	w := matrix(r, rows, dim)
	f, err := NewDWTA(dim, 2, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	ix, _ := NewIndex(f, rows, 8)
	ix.Build(w, dim, 3)
	b, err := ix.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	again, _ := NewIndex(f, rows, 8)
	if err := again.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	for tb := range f.Tables() {
		if !slices.Equal(ix.ids[tb], again.ids[tb]) || !slices.Equal(ix.start[tb], again.start[tb]) {
			t.Fatalf("table %d differs after the round trip", tb)
		}
	}
	if err := again.UnmarshalBinary(b[:len(b)-1]); err == nil {
		t.Error("tables cut short were taken")
	}
	bad := slices.Clone(b)
	copy(bad[len(bad)-4:], []byte{0xff, 0xff, 0, 0})
	if err := again.UnmarshalBinary(bad); err == nil {
		t.Error("a row past the index's was taken")
	}
}

// UnmarshalBinary refuses, without panicking, any bytes that are not an
// index's tables, and takes back what it accepts.
func FuzzIndexUnmarshal(f *testing.F) {
	fam, err := NewDWTA(8, 1, 2, 1)
	if err != nil {
		f.Fatal(err)
	}
	ix, _ := NewIndex(fam, 20, 4)
	ix.Build(matrix(rand.New(rand.NewPCG(1, 1)), 20, 8), 8, 1)
	b, _ := ix.MarshalBinary()
	f.Add(b)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		ix, _ := NewIndex(fam, 20, 4)
		if err := ix.UnmarshalBinary(b); err != nil {
			return
		}
		again, err := ix.MarshalBinary()
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("accepted bytes do not encode back: %v", err)
		}
	})
}

// A fork retrieves what its sampler would, from the index its sampler uses
// at the time (one swapped in after the fork was made too), and PadRows
// after a fork's Retrieve pads as Pad after the sampler's own: the random
// rows come from the sampler's stream, in the same order.
func TestSamplerFork(t *testing.T) {
	const rows, dim = 3000, 32
	r := rand.New(rand.NewPCG(6, 6))
	w := matrix(r, rows, dim)
	for name, f := range families(t, dim, 4, 12, 9) {
		a, _ := NewIndex(f, rows, 64)
		b, _ := NewIndex(f, rows, 64)
		a.Build(w, dim, 1)
		b.Build(w, dim, 2) // other reservoir draws: other buckets' rows
		s, _ := NewSampler(a, 80, 5)
		ref, _ := NewSampler(a, 80, 5)
		fork := s.Fork()
		for q := range 40 {
			if q == 20 {
				s.Use(b)
				ref.Use(b)
			}
			v := w[(q*37%rows)*dim : (q*37%rows+1)*dim]
			labels := []int32{int32(q), int32(2 * q)}
			want := ref.Pad(ref.Retrieve(nil, v, labels), 120)
			got := fork.Retrieve(nil, v, labels)
			if fork.Labels() != ref.Labels() {
				t.Fatalf("%s query %d: the fork counts %d labels, the sampler %d", name, q, fork.Labels(), ref.Labels())
			}
			got = s.PadRows(got, 120)
			if !slices.Equal(got, want) {
				t.Fatalf("%s query %d: fork and PadRows gave %v,\nthe sampler %v", name, q, got, want)
			}
		}
	}
}

// DWTA's eight rows at once give each row the codes Hash gives it, on
// every kernel implementation: zeros, signed zeros, ties, all-zero rows
// (densified from other bins, or the zero code), and dimensions above and
// below the keyed width.
func TestDWTAHash8MatchesHash(t *testing.T) {
	defer kernel.Use(kernel.Impl())
	r := rand.New(rand.NewPCG(11, 12))
	for _, impl := range kernel.Impls() {
		if err := kernel.Use(impl); err != nil {
			t.Fatal(err)
		}
		for _, dim := range []int{8, 9, 64, 128, 600} {
			for _, kl := range [][2]int{{6, 50}, {2, 3}, {1, 1}, {10, 7}} {
				d, err := NewDWTA(dim, kl[0], kl[1], uint64(dim))
				if err != nil {
					t.Fatal(err)
				}
				w := make([]float32, 8*dim)
				var sc rows8
				got, want := make([]uint32, 8*d.l), make([]uint32, d.l)
				for rep := range 20 {
					for i := range w {
						switch r.IntN(6) {
						case 0, 1:
							w[i] = 0
						case 2:
							w[i] = float32(math.Copysign(0, -1))
						case 3:
							w[i] = float32(r.IntN(3)) - 1
						default:
							w[i] = float32(r.NormFloat64())
						}
					}
					if rep%4 == 0 {
						clear(w[(rep/4%8)*dim : (rep/4%8+1)*dim]) // one row all zero
					}
					d.hash8(got, w, &sc)
					for q := range 8 {
						d.Hash(want, w[q*dim:(q+1)*dim])
						if !slices.Equal(got[q*d.l:(q+1)*d.l], want) {
							t.Fatalf("%s dim %d K %d L %d row %d: hash8 %v, Hash %v", impl, dim, d.k, d.l, q, got[q*d.l:(q+1)*d.l], want)
						}
					}
				}
			}
		}
	}
}

// BenchmarkHash8 is BenchmarkHash's DWTA on eight rows at once, a row's
// share reported.
func BenchmarkHash8(b *testing.B) {
	d, err := NewDWTA(128, 6, 50, 1)
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	w := matrix(r, 8, 128)
	codes := make([]uint32, 8*50)
	var sc rows8
	for b.Loop() {
		d.hash8(codes, w, &sc)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(8*b.N), "ns/row")
}
