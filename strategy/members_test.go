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
	out := m.Dispatch(nil, 8, 0.1, Gradient)
	if len(out) != 3 || out[2].Device != 3 || out[0].Batch != 8 {
		t.Errorf("Dispatch: %+v", out)
	}
}

func TestBarrier(t *testing.T) {
	m := NewMembers(3)
	b := NewBarrier(3)
	if b.Open(&m) != 3 || !b.Waits(1) || b.Waits(3) || b.Waits(-1) {
		t.Fatal("a step of 3 devices")
	}
	if b.Arrive(0) || b.Arrive(2) || !b.Arrive(1) || b.Waits(1) {
		t.Fatal("the third arrival completes the step")
	}
	m.Leave(1)
	if b.Open(&m) != 2 || b.Waits(1) {
		t.Fatal("a device out of the run is not waited for")
	}
}
