package engine_test

import (
	"testing"

	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/engine/enginetest"
	"github.com/hetsgd/hetsgd/workload"
)

// A sampled output layer under the virtual clock resumes byte for byte:
// adaptive on 4 devices of the paper's speeds, resumed from each of its
// checkpoints, ends on the uninterrupted run's model — the checkpoints keep
// each device's tables, sampler stream and build schedule.
func TestSampledVirtualResumeIsTheSameRun(t *testing.T) {
	w := enginetest.Bibtex(t)
	s := workload.DefaultSampling()
	s.K, s.L, s.Active, s.Rehash, s.Rebuild = 2, 10, 0.1, 300, 1200
	if err := w.SetSampling(s); err != nil {
		t.Fatal(err)
	}
	cfg := enginetest.Config("adaptive", 4, engine.Virtual)
	cfg.Speeds = []float64{1, 0.9, 0.8, 0.68}
	cfg.Cost.PerGather, cfg.Cost.PerHash = 2e-11, 1e-9
	cfg.Options = map[string]float64{"mega-batch": 10} // merges, and so evaluations, within the epoch
	cfg.LR = 0.03                                      // the sampled layer's lazy Adam learns at elastic's rate, not this test's dense one
	enginetest.ResumeIsTheSameRun(t, cfg, w)
}
