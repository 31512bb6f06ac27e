package engine

import (
	"context"
	"testing"
)

// Under the real clock speeds are relative to the fastest device: a device
// of speed s takes fastest/s times its compute time. Adaptive SGD's dynamic
// scheduling, with the batch sizes fixed, then gives the slow device of
// 1, 0.25 about a quarter of the fast one's batches — and the same for 4, 1, which says the same thing.
func TestRealSpeedsAreRelativeToTheFastest(t *testing.T) {
	w := xml(t, 0)
	for _, speeds := range [][]float64{{1, 0.25}, {4, 1}} {
		cfg := base("adaptive", 2, Real)
		cfg.Speeds, cfg.Epochs, cfg.Batch = speeds, 2, 128
		// β = 0: batch sizes stay put, so batch counts show the speeds.
		cfg.Options = map[string]float64{"mega-batch": 10, "delta": 0, "beta": 0}
		res, err := Run(context.Background(), cfg, w, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		var fast, slow int
		for _, m := range res.Merges {
			fast += m.Updates[0]
			slow += m.Updates[1]
		}
		ratio := float64(slow) / float64(fast)
		t.Logf("speeds %v: %d and %d batches, ratio %.2f", speeds, fast, slow, ratio)
		// The slow device also waits for its batch while the fast one
		// computes on the other core: 1/4 of the fast one's batches, give
		// or take this machine's noise.
		if !(ratio > 0.12 && ratio < 0.45) {
			t.Errorf("speeds %v: the slow device ran %.2f of the fast one's batches, want about 0.25", speeds, ratio)
		}
	}
}
