package engine

import (
	"context"
	"testing"

	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/internal/testdata"
)

// Layered SGD under the real clock in one process takes the path of a
// distributed run — a rank per device, reduce in each node, all-reduce among
// the nodes overlapped with the next batch's preparation, broadcast — and
// computes what sync computes; without nodes it is sync's flat all-reduce.
func TestLayeredInProcessEqualsSync(t *testing.T) {
	w := xml(t, 0)
	cfg, want := syncReference(t, w)
	for _, c := range []struct {
		groupSize int
		layered   bool
	}{{2, true}, {1, true}, {0, false}, {4, false}} {
		cfg := cfg
		cfg.Strategy, cfg.World = "lsgd", comm.Self()
		cfg.Net.GroupSize = c.groupSize
		cfg.Prep = 1e-6
		got, err := Run(context.Background(), cfg, w, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		diff := testdata.MaxRelDiff(got.Model, want.Model)
		t.Logf("lsgd in nodes of %d: difference to sync %.2g, layered timings %+v", c.groupSize, diff, got.Layered)
		if diff > 1e-4 || got.Steps != want.Steps || len(got.Evals) != len(want.Evals) {
			t.Errorf("nodes of %d: difference %g, steps %d/%d, %d/%d evaluations", c.groupSize, diff, got.Steps, want.Steps, len(got.Evals), len(want.Evals))
		}
		if (got.Layered != nil) != c.layered || c.layered && got.Layered.Steps != got.Steps {
			t.Errorf("nodes of %d: layered timings %+v, want layered %v", c.groupSize, got.Layered, c.layered)
		}
	}
}
