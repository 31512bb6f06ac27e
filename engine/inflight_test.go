package engine

import (
	"testing"

	"github.com/hetsgd/hetsgd/checkpoint"
	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/internal/testdata"
	"github.com/hetsgd/hetsgd/optim"
)

// waitOnly is a world whose non-blocking all-reduces complete only when
// waited for: their tests never see them done, as a transport that has not
// progressed them would answer.
type waitOnly struct{ comm.Comm }

func (c waitOnly) IAllReduce(x []float32) (comm.Request, error) {
	r, err := c.Comm.IAllReduce(x)
	return untested{r}, err
}

type untested struct{ comm.Request }

func (untested) Test() (bool, error) { return false, nil }

// A checkpoint completes the ops' reductions in flight before it saves
// their sums (Host.Pending): Streaming DiLoCo with one fragment in flight
// between every two barriers, on 4 ranks whose reductions complete only
// when waited for; a run resumed on them from its first checkpoint ends on
// the uninterrupted run's model. (Saved before completing, the sum would
// be this rank's part alone.)
func TestCheckpointCompletesSumsInFlight(t *testing.T) {
	w := xml(t, 0)
	cfg := base("streaming-diloco", 4, Real)
	cfg.Options = map[string]float64{"h": 1}
	cfg.Optimizer = optim.Config{Name: "adam"}
	cfg.LR = 0.004
	onRanks := func(cfg Config, resume string) *Result {
		res, errs := onRanksEach(t, cfg, 4, w, func(cfg *Config) (func(), error) {
			cfg.World = waitOnly{cfg.World}
			if resume == "" {
				return nil, nil
			}
			rd, err := checkpoint.Open(resume)
			cfg.Resume = rd
			return func() { rd.Close() }, err
		})
		for r, err := range errs {
			if err != nil {
				t.Fatalf("rank %d: %v", r, err)
			}
		}
		return res
	}
	saving := cfg
	dir := t.TempDir()
	saving.Checkpoint = Checkpointing{Dir: dir, Every: 0.2, Keep: 100}
	full := onRanks(saving, "")
	list, err := checkpoint.Dir(dir).List()
	if err != nil || len(list) < 2 {
		t.Fatalf("%d checkpoints (%v)", len(list), err)
	}
	got := onRanks(cfg, list[0])
	if d := testdata.MaxRelDiff(got.Model, full.Model); d > 1e-4 || got.Samples != full.Samples {
		t.Fatalf("resumed from %s: relative difference %g, samples %d/%d", list[0], d, got.Samples, full.Samples)
	}
}
