package lsh

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"

	"github.com/hetsgd/hetsgd/kernel"
)

// A Family hashes dense vectors of one dimension into the buckets of L
// tables. Families are safe for concurrent use.
type Family interface {
	// Tables is L, the number of tables.
	Tables() int
	// Bits is the bucket index's width: every table has 2^Bits buckets.
	Bits() int
	// Hash writes v's bucket in each table into codes (len ≥ L).
	Hash(codes []uint32, v []float32)
}

// SRP is signed random projection: bucket bits are the signs of sparse ±1
// projections.
type SRP struct {
	dim, k, l int
	idx       []int32   // K·L projections of nnz coordinates each
	sign      []float32 // ±1, aligned with idx
	nnz       int
}

// NewSRP draws K·L projections of dimension dim, each with ±1 on ⌈dim/3⌉
// coordinates (SLIDE's ratio), from a stream seeded by seed. A table's
// bucket is its K sign bits, the first the most significant.
func NewSRP(dim, k, l int, seed uint64) (*SRP, error) {
	if err := checkShape(dim, k, l, k); err != nil {
		return nil, err
	}
	nnz := (dim + 2) / 3
	s := &SRP{dim: dim, k: k, l: l, nnz: nnz, idx: make([]int32, k*l*nnz), sign: make([]float32, k*l*nnz)}
	r := rand.New(rand.NewPCG(seed, 0x5e_9a7))
	perm := make([]int32, dim)
	for i := range perm {
		perm[i] = int32(i)
	}
	for h := range k * l {
		r.Shuffle(dim, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		copy(s.idx[h*nnz:(h+1)*nnz], perm[:nnz])
		for j := range nnz {
			s.sign[h*nnz+j] = float32(1 - 2*int(r.Uint64()&1))
		}
	}
	return s, nil
}

// Dim is the width of the vectors s hashes.
func (s *SRP) Dim() int { return s.dim }

func (s *SRP) Tables() int { return s.l }
func (s *SRP) Bits() int   { return s.k }

// Hash implements Family: bit 1 where the projection is negative.
func (s *SRP) Hash(codes []uint32, v []float32) {
	if len(v) != s.dim {
		panic(fmt.Sprintf("lsh: a vector of %d for projections of %d", len(v), s.dim))
	}
	_ = codes[s.l-1]
	h := 0
	for t := range s.l {
		var c uint32
		for range s.k {
			idx, sg := s.idx[h*s.nnz:(h+1)*s.nnz], s.sign[h*s.nnz:(h+1)*s.nnz]
			var dot float32
			for j, i := range idx {
				dot += sg[j] * v[i]
			}
			c <<= 1
			if dot < 0 {
				c |= 1
			}
			h++
		}
		codes[t] = c
	}
}

// DWTA is densified winner-take-all hashing.
type DWTA struct {
	dim, k, l int
	bins      []int32       // K·L bins of binSize coordinates
	groups    kernel.Groups // bins, checked for kernel.MaxKeys8
	seedA     uint32        // the densification's universal hash: an odd multiplier
	shift     uint          // 32 − ⌊log₂(K·L)⌋
}

const (
	binSize  = 8 // coordinates per bin, SLIDE's
	binBits  = 3 // bits of a bin's value: log₂ binSize
	maxProbe = 100
)

// NewDWTA draws the K·L bins of dimension dim (at least 8) from
// ⌈K·L/⌊dim/8⌋⌉ random permutations of the coordinates (each cut into
// ⌊dim/8⌋ bins of 8),
// seeded by seed. A table's bucket packs K bin values of 3 bits, the first
// the most significant: 2^(3K) buckets.
func NewDWTA(dim, k, l int, seed uint64) (*DWTA, error) {
	if err := checkShape(dim, k, l, binBits*k); err != nil {
		return nil, err
	}
	if dim < binSize {
		return nil, fmt.Errorf("lsh: dimension %d: DWTA's bins need at least %d coordinates", dim, binSize)
	}
	n := k * l
	d := &DWTA{dim: dim, k: k, l: l, bins: make([]int32, n*binSize)}
	r := rand.New(rand.NewPCG(seed, 0xd07a))
	perm := make([]int32, dim)
	for i := range perm {
		perm[i] = int32(i)
	}
	for at := 0; at < n*binSize; {
		r.Shuffle(dim, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		// Whole bins only from each permutation: a bin never holds one
		// coordinate twice.
		take := min(dim/binSize*binSize, n*binSize-at)
		at += copy(d.bins[at:at+take], perm[:take])
	}
	g, err := kernel.NewGroups(d.bins)
	if err != nil {
		return nil, err
	}
	d.groups = g
	d.seedA = uint32(r.Uint64()) | 1
	d.shift = uint(32 - (bits.Len(uint(n)) - 1))
	return d, nil
}

// Dim is the width of the vectors d hashes.
func (d *DWTA) Dim() int { return d.dim }

func (d *DWTA) Tables() int { return d.l }
func (d *DWTA) Bits() int   { return binBits * d.k }

// Hash implements Family. It keeps no scratch: a family is safe for
// concurrent use (a table build and queries of the tables in use).
func (d *DWTA) Hash(codes []uint32, v []float32) {
	if len(v) != d.dim {
		panic(fmt.Sprintf("lsh: a vector of %d for bins of %d", len(v), d.dim))
	}
	_ = codes[d.l-1]
	if d.dim <= keyedDim {
		// Each coordinate's key once, not once for every bin it is in
		// (K·L·8/dim times: 19 at K 6, L 50 and 128 dimensions); on the
		// stack, for a family keeps no scratch.
		var keys [keyedDim]uint64
		for i, x := range v {
			keys[i] = binKey(x)
		}
		for t := range d.l {
			var c uint32
			for j := range d.k {
				c = c<<binBits | uint32(d.keyedValue(&keys, t*d.k+j))
			}
			codes[t] = c
		}
		return
	}
	for t := range d.l {
		var c uint32
		for j := range d.k {
			c = c<<binBits | uint32(d.value(v, t*d.k+j))
		}
		codes[t] = c
	}
}

// keyedDim is the widest vector Hash keys once on the stack (4 KiB);
// wider ones take the bins' own keys.
const keyedDim = 512

// binKey is bin's ordering key of a coordinate, shifted to leave the
// bin position's 3 bits free: the float's sign-magnitude bits made an
// unsigned order, and 0 for a zero, below every other.
func binKey(x float32) uint64 {
	u := math.Float32bits(x)
	u ^= uint32(int32(u)>>31) | 1<<31 // negative: flip all; positive: flip the sign
	if x == 0 {
		return 0
	}
	return uint64(u) << binBits
}

// keyedBin is bin with the coordinates' keys made beforehand (binKey):
// a zero's key joined with its position stays below binSize, under every
// non-zero's. (A coordinate is below keyedDim: the mask only spares the
// bounds check.)
func (d *DWTA) keyedBin(keys *[keyedDim]uint64, b int) int8 {
	var top uint64
	bin := d.bins[b*binSize : (b+1)*binSize : (b+1)*binSize]
	for j, i := range bin {
		top = max(top, keys[i&(keyedDim-1)]|uint64(binSize-1-j))
	}
	if top < binSize {
		return -1
	}
	return int8(binSize - 1 - int(top&(binSize-1)))
}

// keyedValue is value with the coordinates' keys made beforehand.
func (d *DWTA) keyedValue(keys *[keyedDim]uint64, b int) int8 {
	if x := d.keyedBin(keys, b); x >= 0 {
		return x
	}
	return d.probe(b, func(donor int) int8 { return d.keyedBin(keys, donor) })
}

// bin is the position of the largest non-zero coordinate of v in bin b
// (the first of equal ones), −1 when the bin holds none.
func (d *DWTA) bin(v []float32, b int) int8 {
	// Branch-free, for random data would mispredict a comparison at every
	// other coordinate: each coordinate becomes a key whose order is the
	// floats' (the sign-magnitude bits made an unsigned order), then the
	// bin position, earlier first on ties; a zero's key is 0, below every
	// other, and the largest key is found with integer max.
	var top uint64
	for j, i := range d.bins[b*binSize : (b+1)*binSize] {
		u := math.Float32bits(v[i])
		u ^= uint32(int32(u)>>31) | 1<<31 // negative: flip all; positive: flip the sign
		key := uint64(u)<<binBits | uint64(binSize-1-j)
		if v[i] == 0 {
			key = 0
		}
		top = max(top, key)
	}
	if top == 0 {
		return -1
	}
	return int8(binSize - 1 - int(top&(binSize-1)))
}

// value is bin b's value, or for an empty bin the value of the first
// non-empty bin the probe sequence finds; 0 if none is found within
// maxProbe probes (the zero vector: every code 0).
func (d *DWTA) value(v []float32, b int) int8 {
	if x := d.bin(v, b); x >= 0 {
		return x
	}
	return d.probe(b, func(donor int) int8 { return d.bin(v, donor) })
}

// probe returns the value of the first non-empty bin of empty bin b's
// probe sequence (bin gives a bin's value, −1 when empty), 0 if none is
// found within maxProbe probes.
func (d *DWTA) probe(b int, bin func(int) int8) int8 {
	n := d.k * d.l
	for c := uint32(1); c <= maxProbe; c++ {
		donor := int(d.seedA * (uint32(b+1)<<6 + c) >> d.shift)
		if donor < n {
			if x := bin(donor); x >= 0 {
				return x
			}
		}
	}
	return 0
}

func checkShape(dim, k, l, bits int) error {
	switch {
	case dim < 1:
		return fmt.Errorf("lsh: dimension %d: need at least 1", dim)
	case k < 1 || l < 1:
		return fmt.Errorf("lsh: K %d and L %d: need at least 1 each", k, l)
	case bits > 30:
		return fmt.Errorf("lsh: K %d makes %d-bit buckets: at most 30", k, bits)
	}
	return nil
}

// rows8 is the scratch of DWTA.hash8: the keys of eight rows side by side
// (coordinate i of row r at keys[8i+r]), each bin's eight winners, and the
// eight rows' codes side by side.
type rows8 struct {
	keys, top, codes []uint64
}

// hash8 is Hash on eight rows at once, w holding them one after another
// (row r at w[r·dim:]), their codes written to codes[r·L:]: the same codes,
// with every bin's winner found for the eight rows in one pass of
// kernel.MaxKeys8 and their codes packed by kernel.Codes8 (eight lanes of
// AVX-512) rather than eight passes. A row with an empty bin (no non-zero
// coordinate), which needs densifying, is hashed again on its own by Hash.
func (d *DWTA) hash8(codes []uint32, w []float32, sc *rows8) {
	dim := d.dim
	if len(sc.keys) < 8*dim || len(sc.top) < 8*d.k*d.l || len(sc.codes) < 8*d.l {
		sc.keys, sc.top, sc.codes = make([]uint64, 8*dim), make([]uint64, 8*d.k*d.l), make([]uint64, 8*d.l)
	}
	keys := sc.keys[:8*dim]
	w = w[:8*dim]
	for r := range 8 {
		for i, x := range w[r*dim : (r+1)*dim] {
			keys[8*i+r] = binKey(x)
		}
	}
	kernel.MaxKeys8(sc.top, keys, d.groups)
	empty := kernel.Codes8(sc.codes, sc.top, d.k, d.l)
	for r := range 8 {
		row := codes[r*d.l : (r+1)*d.l]
		if empty&(1<<r) != 0 {
			d.Hash(row, w[r*dim:(r+1)*dim])
			continue
		}
		for t := range row {
			row[t] = uint32(sc.codes[8*t+r])
		}
	}
}
