package engine

import (
	"fmt"

	"github.com/hetsgd/hetsgd/runlog"
)

// A run whose training loss grows by orders of magnitude is diverging even
// while the loss stays finite (the NaN check, check, catches the rest): SGD
// at a rate far too large on Bibtex reaches a loss of 3e18 and goes on. The
// watch compares a smoothed loss with the loss of the run's first batch —
// the untrained model's, log(labels) for the cross-entropy — and warns once
// when it is watchFactor times larger. Training makes the loss smaller: a
// healthy run, dropout's noise and a rate's warm-up included, stays far
// below a hundredfold its start, so the warning does not cry wolf; a run
// whose loss only rose a little is not called diverging. The warning does
// not stop the run (a loss can come back down), but it is logged, told to
// the observer, and the done record says so.
const (
	watchFactor = 100
	watchSmooth = 1.0 / 16 // weight of a batch in the smoothed loss: about the last 16 batches
)

// lossWatch is the watch's state, saved in checkpoints.
type lossWatch struct {
	Ref    float64 // the first batch's loss (0: none yet)
	EMA    float64 // the smoothed loss since
	Warned bool
}

// add takes a batch's mean loss and reports whether the run has just
// become diverging.
func (w *lossWatch) add(loss float64) bool {
	if w.Ref == 0 {
		w.Ref, w.EMA = loss, loss
		return false
	}
	w.EMA += watchSmooth * (loss - w.EMA)
	if w.Warned || !(w.Ref > 0) || !(w.EMA > watchFactor*w.Ref) {
		return false
	}
	w.Warned = true
	return true
}

// Warner is an Observer that is also told of warnings (a diverging run).
type Warner interface {
	Warn(w runlog.Warning)
}

// watch feeds device d's last batch to the loss watch and warns when the
// run becomes diverging.
func (r *run) watch(d int) error {
	if !r.lossWatch.add(r.slots[d].loss) {
		return nil
	}
	r.res.Diverging = true
	w := runlog.Warning{Event: "warning", Time: r.clk.now(), Samples: r.done, Kind: "diverging",
		Text: fmt.Sprintf("the training loss grew from %.4g (the first batch's) to %.4g, %.0f times larger, after %d samples: the run is diverging (lower the learning rate)",
			r.lossWatch.Ref, r.lossWatch.EMA, r.lossWatch.EMA/r.lossWatch.Ref, r.done)}
	if wr, ok := r.obs.(Warner); ok {
		wr.Warn(w)
	}
	return r.write(w)
}
