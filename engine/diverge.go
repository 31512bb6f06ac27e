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

// A run whose loss does not fall is stalled: it learns nothing, whatever
// it is told to do for how long (64 devices of 128 on Bibtex at their
// scaled rate: a test loss of 15 after the first step). It is judged once,
// at the first evaluation that is both the stallEvals-th or later and an
// epoch or more into the run — so that frequent evaluations do not judge a
// run before it has had its chance — by the training loss since the
// evaluation before: a run whose loss is not stallFall below its first
// batch's is stalled. Training makes the loss fall by far more than that
// within an epoch: Bibtex's from 5.07 (ln 159, the untrained model's) to
// about 3 in the first. The warning does not stop the run.
const (
	stallEvals = 3
	stallFall  = 0.05
)

// lossWatch is the watch's state, saved in checkpoints.
type lossWatch struct {
	Ref    float64 // the first batch's loss (0: none yet)
	EMA    float64 // the smoothed loss since
	Warned bool
	// Judged: whether the run is stalled has been judged; Stalled: it is.
	Judged, Stalled bool
}

// stalled takes an evaluation — the evals-th, at epoch, of trainLoss the
// training loss since the one before — and reports whether the run has
// just been judged stalled.
func (w *lossWatch) stalled(evals int, epoch, trainLoss float64) bool {
	if w.Judged || evals < stallEvals || epoch < 1 || !(w.Ref > 0) {
		return false
	}
	w.Judged = true
	// A diverging run has been told so already, which says more.
	w.Stalled = !w.Warned && !(trainLoss < (1-stallFall)*w.Ref)
	return w.Stalled
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
	return r.warn("diverging", fmt.Sprintf("the training loss grew from %.4g (the first batch's) to %.4g, %.0f times larger, after %d samples: the run is diverging (lower the learning rate)",
		r.lossWatch.Ref, r.lossWatch.EMA, r.lossWatch.EMA/r.lossWatch.Ref, r.done))
}

// watchEval judges, at an evaluation, whether the run is stalled, and
// warns if it is.
func (r *run) watchEval(e runlog.Eval) error {
	if !r.lossWatch.stalled(len(r.res.Evals), e.Epoch, e.TrainLoss) {
		return nil
	}
	r.res.Stalled = true
	return r.warn("stalled", fmt.Sprintf("the training loss did not fall: %.4g over the batches before evaluation %d (epoch %.2f) against %.4g at the first batch: the run is not learning (try another learning rate: a lower one if the loss rose, a higher one if it stayed)",
		e.TrainLoss, len(r.res.Evals), e.Epoch, r.lossWatch.Ref))
}
