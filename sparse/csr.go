package sparse

import (
	"errors"
	"fmt"
	"slices"
)

// CSR is a row-major sparse matrix. Row i holds the entries
// Indices[Indptr[i]:Indptr[i+1]] with values Values[Indptr[i]:Indptr[i+1]]
// (or 1 when Values is nil). Within a row, indices are distinct but need not be
// sorted.
//
// The zero value is an empty 0×0 matrix.
type CSR struct {
	Rows, Cols int
	Indptr     []int64 // len Rows+1, Indptr[0] == 0
	Indices    []int32
	Values     []float32 // nil for a pattern (binary) matrix
}

// NNZ returns the number of stored entries.
func (m *CSR) NNZ() int {
	if len(m.Indptr) == 0 {
		return 0
	}
	return int(m.Indptr[m.Rows])
}

// Row returns the indices and values of row i. vals is nil for a pattern matrix.
func (m *CSR) Row(i int) (idx []int32, vals []float32) {
	lo, hi := m.Indptr[i], m.Indptr[i+1]
	idx = m.Indices[lo:hi]
	if m.Values != nil {
		vals = m.Values[lo:hi]
	}
	return idx, vals
}

// RowNNZ returns the number of stored entries of row i.
func (m *CSR) RowNNZ(i int) int { return int(m.Indptr[i+1] - m.Indptr[i]) }

// ErrInvalid is wrapped by every error Validate returns.
var ErrInvalid = errors.New("sparse: invalid CSR")

// Validate checks the structural invariants: pointer lengths and monotonicity,
// indices in [0, Cols), no duplicate index within a row, and matching value
// length. It is meant for tests and for data crossing a trust boundary (a
// cache file); the readers check their input as they parse it.
func (m *CSR) Validate() error {
	if m.Rows < 0 || m.Cols < 0 {
		return fmt.Errorf("%w: negative shape %d×%d", ErrInvalid, m.Rows, m.Cols)
	}
	if len(m.Indptr) != m.Rows+1 {
		return fmt.Errorf("%w: len(Indptr)=%d, want Rows+1=%d", ErrInvalid, len(m.Indptr), m.Rows+1)
	}
	if m.Indptr[0] != 0 {
		return fmt.Errorf("%w: Indptr[0]=%d, want 0", ErrInvalid, m.Indptr[0])
	}
	nnz := m.Indptr[m.Rows]
	if int64(len(m.Indices)) != nnz {
		return fmt.Errorf("%w: len(Indices)=%d, want %d", ErrInvalid, len(m.Indices), nnz)
	}
	if m.Values != nil && int64(len(m.Values)) != nnz {
		return fmt.Errorf("%w: len(Values)=%d, want %d", ErrInvalid, len(m.Values), nnz)
	}
	// last[j] is 1 + the last row holding index j: a duplicate within a row
	// finds its own row there. One pass and Cols words of memory, which a
	// matrix with far more columns than entries does not get: it checks each
	// row with a set instead.
	var last []int64
	var seen map[int32]struct{}
	if int64(m.Cols) <= max(1<<20, 4*nnz) {
		last = make([]int64, m.Cols)
	} else {
		seen = make(map[int32]struct{})
	}
	for i := 0; i < m.Rows; i++ {
		lo, hi := m.Indptr[i], m.Indptr[i+1]
		if hi < lo || hi > nnz {
			return fmt.Errorf("%w: row %d: Indptr not increasing within [0, %d] (%d, %d)", ErrInvalid, i, nnz, lo, hi)
		}
		stamp := int64(i + 1)
		clear(seen)
		for _, j := range m.Indices[lo:hi] {
			if j < 0 || int(j) >= m.Cols {
				return fmt.Errorf("%w: row %d: index %d outside [0,%d)", ErrInvalid, i, j, m.Cols)
			}
			dup := false
			if last != nil {
				dup, last[j] = last[j] == stamp, stamp
			} else {
				_, dup = seen[j]
				seen[j] = struct{}{}
			}
			if dup {
				return fmt.Errorf("%w: row %d: duplicate index %d", ErrInvalid, i, j)
			}
		}
	}
	return nil
}

// Dense returns m as a dense row-major Rows×Cols slice. For tests and small
// matrices only.
func (m *CSR) Dense() []float32 {
	d := make([]float32, m.Rows*m.Cols)
	for i := 0; i < m.Rows; i++ {
		idx, vals := m.Row(i)
		for p, j := range idx {
			v := float32(1)
			if vals != nil {
				v = vals[p]
			}
			d[i*m.Cols+int(j)] = v
		}
	}
	return d
}

// Builder appends rows to a CSR matrix. The zero value is not usable; call
// NewBuilder.
type Builder struct {
	m CSR
}

// NewBuilder starts a matrix with cols columns. pattern selects a matrix
// without values. rowsHint and nnzHint size the buffers (0 is fine).
func NewBuilder(cols int, pattern bool, rowsHint, nnzHint int) *Builder {
	b := &Builder{m: CSR{Cols: cols}}
	b.m.Indptr = make([]int64, 1, rowsHint+1)
	b.m.Indices = make([]int32, 0, nnzHint)
	if !pattern {
		b.m.Values = make([]float32, 0, nnzHint)
	}
	return b
}

// Append adds one entry to the current (unfinished) row.
func (b *Builder) Append(j int32, v float32) {
	b.m.Indices = append(b.m.Indices, j)
	if b.m.Values != nil {
		b.m.Values = append(b.m.Values, v)
	}
}

// EndRow finishes the current row.
func (b *Builder) EndRow() {
	b.m.Indptr = append(b.m.Indptr, int64(len(b.m.Indices)))
	b.m.Rows++
}

// Rows returns the number of finished rows.
func (b *Builder) Rows() int { return b.m.Rows }

// Build returns the matrix. The builder must not be used afterwards.
func (b *Builder) Build() CSR {
	m := b.m
	b.m = CSR{}
	return m
}

// Concat returns the rows of parts, in order, as one matrix. The parts
// have the same columns, and values or not alike; there is at least one.
func Concat(parts []CSR) CSR {
	out := CSR{Cols: parts[0].Cols, Indptr: make([]int64, 1, 1)}
	nnz, rows := 0, 0
	for _, p := range parts {
		if p.Rows > 0 {
			nnz, rows = nnz+int(p.Indptr[p.Rows]-p.Indptr[0]), rows+p.Rows
		}
	}
	out.Indptr = slices.Grow(out.Indptr, rows)
	out.Indices = make([]int32, 0, nnz)
	if parts[0].Values != nil {
		out.Values = make([]float32, 0, nnz)
	}
	for _, p := range parts {
		if p.Rows == 0 {
			continue
		}
		base := int64(len(out.Indices))
		for _, e := range p.Indptr[1:] {
			out.Indptr = append(out.Indptr, base+e-p.Indptr[0])
		}
		out.Indices = append(out.Indices, p.Indices[p.Indptr[0]:p.Indptr[p.Rows]]...)
		if out.Values != nil {
			out.Values = append(out.Values, p.Values[p.Indptr[0]:p.Indptr[p.Rows]]...)
		}
		out.Rows += p.Rows
	}
	return out
}
