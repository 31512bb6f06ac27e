package strategy

import (
	"slices"
	"testing"
)

func TestMembers(t *testing.T) {
	m := NewMembers(4)
	if !m.Leave(2) || m.Leave(2) || m.Leave(7) || m.Live() != 3 || m.In(2) || !m.In(1) {
		t.Fatalf("after device 2 left: live %d", m.Live())
	}
	if w := m.Uniform(make([]float64, 4)); !slices.Equal(w, []float64{1.0 / 3, 1.0 / 3, 0, 1.0 / 3}) {
		t.Errorf("Uniform: %v", w)
	}
	if w := m.Renormalize([]float64{0.1, 0.2, 0.3, 0.4}); !slices.Equal(w, []float64{1.0 / 7, 2.0 / 7, 0, 4.0 / 7}) {
		t.Errorf("Renormalize: %v", w)
	}
	out := m.Dispatch(nil, 8, 0.1, Gradient)
	if len(out) != 3 || out[2].Device != 3 || out[0].Batch != 8 {
		t.Errorf("Dispatch: %+v", out)
	}
}
