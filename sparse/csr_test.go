package sparse

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/hetsgd/hetsgd/internal/race"
)

func sample() CSR {
	b := NewBuilder(5, false, 3, 6)
	b.Append(1, 0.5)
	b.Append(4, 2)
	b.EndRow()
	b.EndRow() // empty row
	b.Append(0, 1)
	b.Append(3, -1)
	b.Append(2, 7)
	b.EndRow()
	return b.Build()
}

func TestBuilderAndDense(t *testing.T) {
	m := sample()
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	want := []float32{0, .5, 0, 0, 2, 0, 0, 0, 0, 0, 1, 0, 7, -1, 0}
	if got := m.Dense(); !slices.Equal(got, want) {
		t.Fatalf("Dense %v, want %v", got, want)
	}
	if m.NNZ() != 5 || m.RowNNZ(1) != 0 || m.RowNNZ(2) != 3 {
		t.Fatalf("counts: nnz %d, rows %d %d", m.NNZ(), m.RowNNZ(1), m.RowNNZ(2))
	}
}

func TestValidateRejects(t *testing.T) {
	for name, mutate := range map[string]func(*CSR){
		"index out of range": func(m *CSR) { m.Indices[0] = 5 },
		"negative index":     func(m *CSR) { m.Indices[0] = -1 },
		"duplicate":          func(m *CSR) { m.Indices[1] = 1 },
		"decreasing indptr":  func(m *CSR) { m.Indptr[1] = 3; m.Indptr[2] = 2 },
		"short values":       func(m *CSR) { m.Values = m.Values[:2] },
		"wrong indptr len":   func(m *CSR) { m.Indptr = m.Indptr[:2] },
	} {
		m := sample()
		m.Indices = slices.Clone(m.Indices)
		m.Indptr = slices.Clone(m.Indptr)
		mutate(&m)
		if err := m.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Validate = %v", name, err)
		}
	}
}

func TestGatherAndMaxNNZ(t *testing.T) {
	m := sample()
	var dst CSR
	dst.Reserve(3, m.MaxNNZ(3), false)
	Gather(&dst, &m, []int32{2, 0, 2})
	if err := dst.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := dst.Dense(); !slices.Equal(got[:5], m.Dense()[10:15]) || !slices.Equal(got[5:10], m.Dense()[:5]) {
		t.Fatalf("gathered %v", got)
	}
	if m.MaxNNZ(1) != 3 || m.MaxNNZ(2) != 5 || m.MaxNNZ(9) != 5 {
		t.Fatalf("MaxNNZ %d %d %d", m.MaxNNZ(1), m.MaxNNZ(2), m.MaxNNZ(9))
	}
	if a := testing.AllocsPerRun(10, func() { Gather(&dst, &m, []int32{2, 2, 0}) }); !race.Enabled && a != 0 {
		t.Fatalf("Gather into a reserved matrix allocates %v times", a)
	}
}

// Concat stacks rows: a matrix cut into parts, empty ones among them, and
// joined again is the matrix.
func TestConcat(t *testing.T) {
	for _, pattern := range []bool{false, true} {
		whole := NewBuilder(5, pattern, 0, 0)
		parts := []*Builder{NewBuilder(5, pattern, 0, 0), NewBuilder(5, pattern, 0, 0), NewBuilder(5, pattern, 0, 0)}
		for i := range 7 {
			p := parts[0]
			if i >= 3 {
				p = parts[2] // parts[1] stays empty
			}
			for j := range i % 4 {
				whole.Append(int32(j+i%2), float32(i*10+j))
				p.Append(int32(j+i%2), float32(i*10+j))
			}
			whole.EndRow()
			p.EndRow()
		}
		var csrs []CSR
		for _, p := range parts {
			csrs = append(csrs, p.Build())
		}
		got, want := Concat(csrs), whole.Build()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("pattern %v: Concat %+v, want %+v", pattern, got, want)
		}
	}
}
