package progress

import (
	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/progress/stage"
	"github.com/hetsgd/hetsgd/runlog"
)

// Run passes a training run's progress on to a stage.Reporter whose units
// are runs (tune's grid) or epochs (one run): after each batch it reports
// Before plus the share of the run done — its epochs of Epochs, or, with no
// epoch limit, its training seconds of Budget (nothing, with neither). It
// is an engine.Observer, and makes no allocation.
type Run struct {
	Reporter stage.Reporter
	// Before is the work done before this run, in the stage's units.
	Before float64
	// Epochs and Budget are the run's limits (0: none).
	Epochs, Budget float64
	// Scale is what a whole run counts, in the stage's units: 1 for runs,
	// Epochs for epochs.
	Scale float64
}

var _ engine.Observer = (*Run)(nil)

// Step reports the share of the run done after a batch.
func (r *Run) Step(epoch float64, _ int64, trainSeconds, _ float64) {
	share := 0.0
	switch {
	case r.Epochs > 0:
		share = epoch / r.Epochs
	case r.Budget > 0:
		share = trainSeconds / r.Budget
	}
	r.Reporter.Update(r.Before+min(1, share)*r.Scale, "")
}

// Eval does nothing: a run's progress is its steps'.
func (r *Run) Eval(runlog.Eval) {}
