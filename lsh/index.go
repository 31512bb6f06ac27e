package lsh

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"

	"github.com/hetsgd/hetsgd/kernel"
)

// An Index is L hash tables over the rows of a matrix: each table maps a
// bucket to the rows that hash to it, at most Capacity of them.
type Index struct {
	fam      Family
	rows     int
	capacity int
	buckets  int
	// Table t's bucket b holds ids[t][start[t][b]:start[t][b+1]].
	start [][]uint32
	ids   [][]int32
	codes []uint32 // scratch of Build: every row's code in table t at codes[t·rows+row]

	// Build runs on every core (kernel.Default): the rows are hashed in
	// parts, each with its scratch row of L codes, then the tables are
	// filled, each by one part, with its own bucket counts and its own
	// reservoir stream, seeded by the build's seed and the table. The
	// scratch is sized once, at the first Build, for the pool's parts.
	hash  hashTask
	fill  fillTask
	parts []buildScratch
	pool  *kernel.Pool // nil: kernel.Default
}

// buildScratch is one part's scratch of Build.
type buildScratch struct {
	row   []uint32 // one row's L codes (eight rows' with DWTA)
	rows8 rows8    // DWTA's eight rows at once
	count []uint32 // rows per bucket of one table
	pcg   *rand.PCG
	rng   *rand.Rand // reservoir sampling of the table being filled
}

// hashTask hashes a part of the rows into codes; fillTask fills a part of
// the tables from them. They are fields of the Index, so that a Build
// passes the pool no new value.
type hashTask struct {
	ix  *Index
	w   []float32
	dim int
}

type fillTask struct {
	ix   *Index
	seed uint64
}

// Bytes estimates the memory of an index of rows rows over the tables of
// fam, so that a run can refuse what the machine does not have.
func Bytes(fam Family, rows int) int64 {
	l, b := int64(fam.Tables()), int64(1)<<fam.Bits()
	return l*(b+1)*4 + l*int64(rows)*4 + int64(rows)*l*4 + int64(kernel.Default().Workers())*(b+l)*4
}

// NewIndex returns an empty index for rows rows hashed by fam, keeping at
// most capacity rows a bucket.
func NewIndex(fam Family, rows, capacity int) (*Index, error) {
	if rows < 1 || capacity < 1 {
		return nil, fmt.Errorf("lsh: an index of %d rows and buckets of %d: need at least 1 of each", rows, capacity)
	}
	l, b := fam.Tables(), 1<<fam.Bits()
	ix := &Index{fam: fam, rows: rows, capacity: capacity, buckets: b,
		start: make([][]uint32, l), ids: make([][]int32, l), codes: make([]uint32, rows*l)}
	ix.hash.ix, ix.fill.ix = ix, ix
	for t := range l {
		ix.start[t] = make([]uint32, b+1)
		ix.ids[t] = make([]int32, 0, rows)
	}
	return ix, nil
}

// SetPool makes Build run on pool rather than on kernel.Default: a build
// in the background, beside a training whose kernels keep the default
// pool's workers busy, is better off on a pool of its own (one worker: the
// caller), for a long part of a build would hold a shared worker the
// training's parts wait for.
func (ix *Index) SetPool(p *kernel.Pool) { ix.pool = p }

// Family returns the index's hash family.
func (ix *Index) Family() Family { return ix.fam }

// Rows is the number of rows the index is for.
func (ix *Index) Rows() int { return ix.rows }

// SetFamily makes the next Build hash with fam, which must have the tables
// and bucket bits of the index's family (new draws of the same functions).
func (ix *Index) SetFamily(fam Family) {
	if fam.Tables() != ix.fam.Tables() || fam.Bits() != ix.fam.Bits() {
		panic(fmt.Sprintf("lsh: a family of %d tables of %d bits for an index of %d of %d", fam.Tables(), fam.Bits(), ix.fam.Tables(), ix.fam.Bits()))
	}
	ix.fam = fam
}

// Build hashes the rows of the rows×dim matrix w (row-major) into the tables,
// replacing what they held. A bucket that more than Capacity rows hash to
// keeps a uniform random subset of Capacity of them, drawn from a stream
// seeded by seed and the table; the rows a bucket keeps are in increasing
// order. The tables are the same whatever the number of cores it runs on,
// and after the first Build it allocates nothing.
func (ix *Index) Build(w []float32, dim int, seed uint64) {
	if len(w) != ix.rows*dim {
		panic(fmt.Sprintf("lsh: a matrix of %d values for %d rows of %d", len(w), ix.rows, dim))
	}
	pool := ix.pool
	if pool == nil {
		pool = kernel.Default()
	}
	l := ix.fam.Tables()
	parts := min(pool.Workers(), l, ix.rows)
	if len(ix.parts) < parts {
		for range parts - len(ix.parts) {
			pcg := rand.NewPCG(0, 0)
			ix.parts = append(ix.parts, buildScratch{row: make([]uint32, 8*l), count: make([]uint32, ix.buckets), pcg: pcg, rng: rand.New(pcg)})
		}
	}
	ix.hash.w, ix.hash.dim = w, dim
	pool.Run(&ix.hash, parts)
	ix.hash.w = nil
	ix.fill.seed = seed
	pool.Run(&ix.fill, parts)
}

// Part hashes the rows of part i of n. Table-major codes: each table's
// fill reads its codes in order, where a row-major layout would miss the
// cache at every row.
func (h *hashTask) Part(i, n int) {
	ix := h.ix
	sc := &ix.parts[i]
	row := sc.row
	rows := ix.rows
	r, end := i*rows/n, (i+1)*rows/n
	if d, ok := ix.fam.(*DWTA); ok && h.dim == d.dim {
		l := d.l
		for ; r+8 <= end; r += 8 {
			d.hash8(row, h.w[r*h.dim:(r+8)*h.dim], &sc.rows8)
			for t := range l {
				for q := range 8 {
					ix.codes[t*rows+r+q] = row[q*l+t]
				}
			}
		}
	}
	for ; r < end; r++ {
		ix.fam.Hash(row, h.w[r*h.dim:(r+1)*h.dim])
		for t, c := range row[:ix.fam.Tables()] {
			ix.codes[t*rows+r] = c
		}
	}
}

// Part fills the tables of part i of n.
func (f *fillTask) Part(i, n int) {
	ix := f.ix
	l := ix.fam.Tables()
	for t := i * l / n; t < (i+1)*l/n; t++ {
		ix.fillTable(t, &ix.parts[i], f.seed)
	}
}

// fillTable fills table t from the codes: it counts the rows of each
// bucket, places the first Capacity of each in row order, and lets every
// later one replace a random kept row with probability Capacity/seen
// (reservoir sampling), from a stream seeded by seed and t — so that the
// tables are the same whichever part fills them.
func (ix *Index) fillTable(t int, sc *buildScratch, seed uint64) {
	n := ix.rows
	sc.pcg.Seed(seed, 0xb0c4e7+uint64(t))
	r := sc.rng
	count := sc.count
	clear(count)
	codes := ix.codes[t*n : (t+1)*n]
	for _, c := range codes {
		count[c]++
	}
	start := ix.start[t]
	start[0] = 0
	for b, c := range count {
		start[b+1] = start[b] + min(c, uint32(ix.capacity))
	}
	ids := ix.ids[t][:start[ix.buckets]]
	clear(count) // now: rows seen so far per bucket
	for i, b := range codes {
		seen := count[b]
		count[b]++
		if seen < uint32(ix.capacity) {
			ids[start[b]+seen] = int32(i)
		} else if j := r.Uint32N(seen + 1); j < uint32(ix.capacity) {
			// Keep the bucket in row order: drop slot j, append i.
			at := ids[start[b]:start[b+1]]
			copy(at[j:], at[j+1:])
			at[len(at)-1] = int32(i)
		}
	}
	ix.ids[t] = ids
}

// Bucket returns the rows of table t's bucket b (shared; valid until the
// next Build).
func (ix *Index) Bucket(t int, b uint32) []int32 {
	s := ix.start[t]
	return ix.ids[t][s[b]:s[b+1]]
}

// MarshalBinary encodes the tables (not the family, which its owner draws
// again from its seed): a checkpoint keeps them, so that a resumed run
// retrieves the same rows as the run it continues.
func (ix *Index) MarshalBinary() ([]byte, error) {
	l := len(ix.start)
	n := 0
	for t := range l {
		n += len(ix.start[t]) + len(ix.ids[t])
	}
	out := make([]byte, 0, 4*(n+2*l))
	for t := range l {
		out = binary.LittleEndian.AppendUint32(out, uint32(len(ix.ids[t])))
		for _, v := range ix.start[t] {
			out = binary.LittleEndian.AppendUint32(out, v)
		}
		for _, v := range ix.ids[t] {
			out = binary.LittleEndian.AppendUint32(out, uint32(v))
		}
	}
	return out, nil
}

// UnmarshalBinary restores tables MarshalBinary encoded for an index of the
// same rows and family shape, checking that every bucket's rows are rows of
// the index.
func (ix *Index) UnmarshalBinary(b []byte) error {
	for t := range ix.start {
		if len(b) < 4 {
			return fmt.Errorf("lsh: tables: table %d is cut short", t)
		}
		n := binary.LittleEndian.Uint32(b)
		b = b[4:]
		if uint64(n) > uint64(cap(ix.ids[t])) || uint64(len(b)) < 4*(uint64(len(ix.start[t]))+uint64(n)) {
			return fmt.Errorf("lsh: tables: table %d of %d rows does not fit an index of %d rows, or is cut short", t, n, ix.rows)
		}
		start := ix.start[t]
		for i := range start {
			start[i] = binary.LittleEndian.Uint32(b[4*i:])
			if start[i] > n || i > 0 && start[i] < start[i-1] {
				return fmt.Errorf("lsh: tables: table %d's bucket %d starts at %d of %d rows", t, i, start[i], n)
			}
		}
		if start[len(start)-1] != n {
			return fmt.Errorf("lsh: tables: table %d lists %d rows, its buckets %d", t, n, start[len(start)-1])
		}
		b = b[4*len(start):]
		ids := ix.ids[t][:n]
		for i := range ids {
			v := binary.LittleEndian.Uint32(b[4*i:])
			if v >= uint32(ix.rows) {
				return fmt.Errorf("lsh: tables: table %d holds row %d of %d", t, v, ix.rows)
			}
			ids[i] = int32(v)
		}
		ix.ids[t] = ids
		b = b[4*n:]
	}
	if len(b) != 0 {
		return fmt.Errorf("lsh: tables: %d bytes past the last table", len(b))
	}
	return nil
}
