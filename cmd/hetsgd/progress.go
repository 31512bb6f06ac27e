package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/runlog"
)

// progressWanted decides whether to draw the progress bar: "auto" draws it
// only when stderr is a terminal, so logs and pipes stay clean.
func progressWanted(mode string, stderr io.Writer) (bool, error) {
	switch mode {
	case "on":
		return true, nil
	case "off":
		return false, nil
	case "auto":
		// The writer the command was given, not the process's stderr: a
		// command writing into a buffer never draws.
		f, ok := stderr.(*os.File)
		if !ok {
			return false, nil
		}
		st, err := f.Stat()
		return err == nil && st.Mode()&os.ModeCharDevice != 0, nil
	}
	return false, fmt.Errorf("--progress %q: want auto, on or off", mode)
}

// progressBar redraws one status line on stderr at most ten times a second:
// epoch, a bar, samples per second of training time, the training loss, the
// last P@1, and the wall time since the start with an estimate of the time
// left (from the share of the run done so far, in epochs or in the time
// budget, whichever is further along).
type progressBar struct {
	w          io.Writer
	epochs     float64
	budget     float64 // --time-budget (0: none)
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

func newProgressBar(w io.Writer, epochs, budget float64) *progressBar {
	return &progressBar{w: w, epochs: epochs, budget: budget, start: time.Now(), startEpoch: -1, now: time.Now}
}

func (b *progressBar) Step(epoch float64, samples int64, trainSeconds, loss float64) {
	if b.startEpoch < 0 {
		b.startEpoch, b.startSecs = epoch, trainSeconds
	}
	// An exponential average keeps the loss readable.
	b.loss = 0.95*b.loss + 0.05*loss
	b.lossWeight = 0.95*b.lossWeight + 0.05
	b.epoch, b.samples, b.trainSecs = epoch, samples, trainSeconds
	if now := b.now(); now.Sub(b.last) >= 100*time.Millisecond {
		b.last = now
		b.draw()
	}
}

func (b *progressBar) Eval(r runlog.Eval) {
	b.lastP1, b.haveP1 = r.P1, true
	b.draw()
}

// eta estimates the wall time left: the time so far over the share of the
// run done since this process took it up, times the share left. false when
// the run has no end or too little is done to tell.
func (b *progressBar) eta(elapsed time.Duration) (time.Duration, bool) {
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

func (b *progressBar) draw() {
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
func clock(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// clear removes the status line.
func (b *progressBar) clear() {
	if b.drawn {
		fmt.Fprint(b.w, "\r\033[K")
	}
}

// multiObserver feeds the line printer and the bar, clearing the bar before
// a line is printed so the two never interleave.
type multiObserver struct {
	printer engine.Observer
	bar     *progressBar
}

func (m *multiObserver) Step(e float64, s int64, t, l float64) { m.bar.Step(e, s, t, l) }

func (m *multiObserver) Eval(r runlog.Eval) {
	m.bar.clear()
	m.printer.Eval(r)
	m.bar.Eval(r)
}

// Warn prints a warning between the bar's redraws.
func (m *multiObserver) Warn(w runlog.Warning) {
	m.bar.clear()
	if wr, ok := m.printer.(engine.Warner); ok {
		wr.Warn(w)
	}
	m.bar.draw()
}

func (m *multiObserver) finish() { m.bar.clear() }
