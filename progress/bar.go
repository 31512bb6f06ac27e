package progress

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/progress/stage"
	"github.com/hetsgd/hetsgd/runlog"
)

// Bar redraws one status line on its writer at most ten times a second:
// epoch, a bar, samples per second of training time, the training loss,
// the last P@1, and the wall time since the start with an estimate of the
// time left (from the share of the run done so far, in epochs or in the
// time budget, whichever is further along).
type Bar struct {
	w          io.Writer
	epochs     float64
	budget     float64 // training seconds (0: none)
	start      time.Time
	startEpoch float64 // where a resumed run took up (-1: not known yet)
	startSecs  float64
	last       time.Time
	lastP1     float64
	haveP1     bool
	loss       float64
	drawn      bool
	epoch      float64
	samples    int64
	trainSecs  float64
	lossWeight float64
	now        func() time.Time // time.Now; a test's clock
}

// New returns a bar drawing on w (a terminal's) for a run of epochs
// epochs and a budget of training seconds; 0 for either is no limit, and
// with neither the bar has no end to show. The wall time counts from now.
func New(w io.Writer, epochs, budget float64) *Bar {
	return &Bar{w: w, epochs: epochs, budget: budget, start: time.Now(), startEpoch: -1, now: time.Now}
}

// Step takes a batch's progress and redraws the line if a tenth of a
// second has passed since it last did.
func (b *Bar) Step(epoch float64, samples int64, trainSeconds, loss float64) {
	if b.startEpoch < 0 {
		b.startEpoch, b.startSecs = epoch, trainSeconds
	}
	// An exponential average keeps the loss readable.
	b.loss = 0.95*b.loss + 0.05*loss
	b.lossWeight = 0.95*b.lossWeight + 0.05
	b.epoch, b.samples, b.trainSecs = epoch, samples, trainSeconds
	if now := b.now(); now.Sub(b.last) >= 100*time.Millisecond {
		b.last = now
		b.Draw()
	}
}

// Eval takes an evaluation's P@1 and redraws the line.
func (b *Bar) Eval(r runlog.Eval) {
	b.lastP1, b.haveP1 = r.P1, true
	b.Draw()
}

// eta estimates the wall time left: the time so far over the share of the
// run done since this process took it up, times the share left. false when
// the run has no end or too little is done to tell.
func (b *Bar) eta(elapsed time.Duration) (time.Duration, bool) {
	done, left := 0.0, 0.0
	if b.epochs > 0 && b.epoch > b.startEpoch {
		done, left = b.epoch-b.startEpoch, max(0, b.epochs-b.epoch)
	}
	if b.budget > 0 && b.trainSecs > b.startSecs {
		// The budget's share, if further along than the epochs'.
		d, l := b.trainSecs-b.startSecs, max(0, b.budget-b.trainSecs)
		if done == 0 || d/(d+l) > done/(done+left) {
			done, left = d, l
		}
	}
	if done == 0 {
		return 0, false
	}
	return time.Duration(float64(elapsed) * left / done), true
}

// Draw redraws the line now, over the one drawn before.
func (b *Bar) Draw() {
	const width = 24
	// Without an epoch limit there is no end to show: the bar stays empty
	// and the epoch has no total.
	total, full := "/∞", 0
	if b.epochs > 0 {
		total = "/" + strconv.FormatFloat(b.epochs, 'g', -1, 64)
		full = int(min(1, b.epoch/b.epochs) * width)
	}
	bar := strings.Repeat("█", full) + strings.Repeat("·", width-full)
	rate := 0.0
	if b.trainSecs > 0 {
		rate = float64(b.samples) / b.trainSecs
	}
	p1 := "  –   "
	if b.haveP1 {
		p1 = fmt.Sprintf("%.4f", b.lastP1)
	}
	loss := 0.0
	if b.lossWeight > 0 {
		loss = b.loss / b.lossWeight
	}
	elapsed := b.now().Sub(b.start)
	eta := "–"
	if d, ok := b.eta(elapsed); ok {
		eta = clock(d)
	}
	fmt.Fprintf(b.w, "\r\033[K epoch %6.2f%s %s %9.0f samples/s  loss %.4f  P@1 %s  %s, ETA %s", b.epoch, total, bar, rate, loss, p1, clock(elapsed), eta)
	b.drawn = true
}

// clock writes a duration as a clock does: 0:07, 3:05, 1:02:09.
func clock(d time.Duration) string { return stage.Clock(d) }

// Clear removes the line, if one was drawn: before other output, and at
// the run's end.
func (b *Bar) Clear() {
	if b.drawn {
		fmt.Fprint(b.w, "\r\033[K")
	}
}

// Observer feeds a run's events to the printer of its lines and to the
// bar, clearing the bar before a line is printed so the two never
// interleave. It is an engine.Observer and an engine.Warner.
type Observer struct {
	Printer engine.Observer // warned too if it is an engine.Warner
	Bar     *Bar
}

// Step moves the bar only: the printer is given evaluations and
// warnings, which make lines, not steps.
func (o *Observer) Step(e float64, s int64, t, l float64) { o.Bar.Step(e, s, t, l) }

// Eval has the printer print the evaluation where the bar was, and the bar
// drawn again below it.
func (o *Observer) Eval(r runlog.Eval) {
	o.Bar.Clear()
	o.Printer.Eval(r)
	o.Bar.Eval(r)
}

// Warn prints a warning between the bar's redraws.
func (o *Observer) Warn(w runlog.Warning) {
	o.Bar.Clear()
	if wr, ok := o.Printer.(engine.Warner); ok {
		wr.Warn(w)
	}
	o.Bar.Draw()
}

// Finish clears the bar at the run's end.
func (o *Observer) Finish() { o.Bar.Clear() }

// IsTerminal reports whether w is a terminal (stage.IsTerminal).
func IsTerminal(w io.Writer) bool { return stage.IsTerminal(w) }
