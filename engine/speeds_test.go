package engine

import (
	"testing"
)

// Under the real clock speeds are relative to the fastest device: a device
// of speed s takes fastest/s times its compute time, so 1, 0.25 and 4, 1
// both stretch the slow device's batches fourfold. Adaptive SGD's dynamic
// scheduling, with the batch sizes fixed, then gives the slow device fewer
// of the batches (about a quarter on an idle machine; a busy one blurs the
// ratio, whose bound here is loose so that the test holds there too).
func TestRealSpeedsAreRelativeToTheFastest(t *testing.T) {
	w := xml(t, 0)
	for _, speeds := range [][]float64{{1, 0.25}, {4, 1}} {
		cfg := base("adaptive", 2, Real)
		cfg.Speeds, cfg.Epochs, cfg.Batch = speeds, 2, 128
		// β = 0: batch sizes stay put, so batch counts show the speeds.
		cfg.Options = map[string]float64{"mega-batch": 10, "delta": 0, "beta": 0}
		r := start(t, cfg, w, nil)
		if a, b := r.job.(execJob).x.devs[0].stretch, r.job.(execJob).x.devs[1].stretch; a != 1 || b != 4 {
			t.Errorf("speeds %v: stretches %v and %v, want 1 and 4", speeds, a, b)
		}
		var fast, slow int
		for _, m := range r.res.Merges {
			fast += m.Updates[0]
			slow += m.Updates[1]
		}
		ratio := float64(slow) / float64(fast)
		t.Logf("speeds %v: %d and %d batches, ratio %.2f", speeds, fast, slow, ratio)
		if !(ratio > 0.05 && ratio < 0.75) {
			t.Errorf("speeds %v: the slow device ran %.2f of the fast one's batches, want about 0.25", speeds, ratio)
		}
	}
}
