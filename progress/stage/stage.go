package stage

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Reporter is told how long work goes: the stages it passes through, in
// order, and how far the current one has got. The work calls it from one
// goroutine at a time, and each call must be cheap: a grid of runs reports
// after every batch.
type Reporter interface {
	// Stage begins a stage: its name ("regression"), the work it holds
	// (total, in units of the name unit: "steps", "points"; 0 when it is
	// not known in advance) — and ends the stage before.
	Stage(name string, total float64, unit string)
	// Update says how much of the stage is done (in its units, from 0),
	// and what the work is doing now (detail; "" keeps the last one).
	Update(done float64, detail string)
}

// Quiet is a Reporter that reports nothing.
type Quiet struct{}

func (Quiet) Stage(string, float64, string) {}
func (Quiet) Update(float64, string)        {}

// Or returns r, or Quiet when r is nil: what a package that takes an
// optional Reporter calls.
func Or(r Reporter) Reporter {
	if r == nil {
		return Quiet{}
	}
	return r
}

var (
	_ Reporter = Quiet{}
	_ Reporter = (*Line)(nil)
)

// Modes of a Line, as the tool's --progress flag names them.
const (
	Auto = "auto" // redrawn on a terminal, plain lines elsewhere
	On   = "on"   // redrawn, even into a file or a pipe
	Off  = "off"  // nothing
)

// ParseMode checks a --progress value.
func ParseMode(mode string) error {
	switch mode {
	case Auto, On, Off:
		return nil
	}
	return fmt.Errorf("--progress %q: want auto, on or off", mode)
}

// PlainEvery is how often a Line writes a plain line at most, and how long
// the work must go on before it writes the first.
const PlainEvery = 10 * time.Second

// redrawEvery is how often a Line redraws itself on a terminal.
const redrawEvery = 200 * time.Millisecond

// detailWidth bounds the detail a redrawn line shows, so that it fits a
// terminal's width and is redrawn in place rather than wrapped (a plain
// line shows it whole).
const detailWidth = 60

// Line is the tool's Reporter: a line on w that says the stage, how much
// of it is done, the time it has taken and the time it has left, redrawn
// in place on a terminal, or a plain line at most every PlainEvery into a
// pipe or a file (see the package documentation). Every line begins with
// prefix ("hetsgd data gen"). Its methods may be called from any
// goroutine, and on a nil Line (which reports nothing).
//
// A Line is also an io.Writer for the command's other messages on the
// same stream: a message written through it is not cut by the line,
// which is cleared before it and drawn again after.
type Line struct {
	w      io.Writer
	prefix string
	redraw bool // a terminal's line, redrawn in place; else plain lines
	off    bool

	mu        sync.Mutex
	now       func() time.Time // time.Now; a test's clock
	name      string
	unit      string
	total     float64
	done      float64
	detail    string
	began     time.Time // the stage's start
	last      time.Time // the last plain line, or the Line's start
	drawn     bool
	stopTick  chan struct{} // set before its goroutine starts, never after
	tickEnded chan struct{}
	stopOnce  sync.Once
}

// NewLine returns the Line of mode (Auto, On or Off) on w; Auto redraws
// its line when w is a terminal (IsTerminal). Close it at the end of the
// work: it then stops and clears its line.
func NewLine(w io.Writer, mode, prefix string) (*Line, error) {
	if err := ParseMode(mode); err != nil {
		return nil, err
	}
	l := newLine(w, mode, prefix, time.Now)
	if !l.off {
		every := PlainEvery / 10
		if l.redraw {
			every = redrawEvery
		}
		l.stopTick, l.tickEnded = make(chan struct{}), make(chan struct{})
		go l.ticks(every)
	}
	return l, nil
}

// newLine is NewLine without its clock's goroutine: a test ticks it.
func newLine(w io.Writer, mode, prefix string, now func() time.Time) *Line {
	return &Line{w: w, prefix: prefix, off: mode == Off, redraw: mode == On || mode == Auto && IsTerminal(w), now: now, last: now()}
}

func (l *Line) ticks(every time.Duration) {
	defer close(l.tickEnded)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			l.tick()
		case <-l.stopTick:
			return
		}
	}
}

// Stage begins a stage (Reporter).
func (l *Line) Stage(name string, total float64, unit string) {
	if l == nil || l.off {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.name, l.total, l.unit, l.done, l.detail = name, total, unit, 0, ""
	l.began = l.now()
}

// Update says how far the stage is (Reporter). It only records: the
// line is drawn on the Line's own clock.
func (l *Line) Update(done float64, detail string) {
	if l == nil || l.off {
		return
	}
	l.mu.Lock()
	l.done = done
	if detail != "" {
		l.detail = detail
	}
	l.mu.Unlock()
}

// tick draws the line: redrawn on a terminal; a plain line when
// PlainEvery has passed since the last one (or since the start).
func (l *Line) tick() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.name == "" {
		return
	}
	now := l.now()
	if l.redraw {
		fmt.Fprintf(l.w, "\r\033[K%s", l.text(now))
		l.drawn = true
		return
	}
	if now.Sub(l.last) >= PlainEvery {
		l.last = now
		fmt.Fprintf(l.w, "%s\n", l.text(now))
	}
}

// text is the line: "hetsgd data gen: regression 7/16 steps, 0:12, ETA
// 0:15 — signal 0.5000: P@1 0.6123".
func (l *Line) text(now time.Time) string {
	var b strings.Builder
	b.WriteString(l.prefix)
	b.WriteString(": ")
	b.WriteString(l.name)
	if l.total > 0 {
		fmt.Fprintf(&b, " %s/%s %s", count(l.done), count(l.total), l.unit)
	} else if l.done > 0 {
		fmt.Fprintf(&b, " %s %s", count(l.done), l.unit)
	}
	elapsed := now.Sub(l.began)
	fmt.Fprintf(&b, ", %s", Clock(elapsed))
	if eta, ok := ETA(elapsed, l.done, l.total); ok {
		fmt.Fprintf(&b, ", ETA %s", Clock(eta))
	}
	if l.detail != "" {
		d := []rune(l.detail)
		if l.redraw && len(d) > detailWidth {
			d = append(d[:detailWidth-1], '…')
		}
		b.WriteString(" — ")
		b.WriteString(string(d))
	}
	return b.String()
}

// count writes an amount of work: whole numbers as they are, a part of a
// unit to a tenth (2.5 of 40 runs).
func count(v float64) string {
	if v == float64(int64(v)) {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// ETA estimates the time left of work of which done of total is done
// after elapsed: the time so far over the share done, times the share
// left. false when there is no total, or too little is done to tell (a
// hundredth, or nothing, or time not yet measurable).
func ETA(elapsed time.Duration, done, total float64) (time.Duration, bool) {
	if total <= 0 || done <= 0 || done < total/100 || elapsed <= 0 {
		return 0, false
	}
	return time.Duration(float64(elapsed) * max(0, total-done) / done), true
}

// Write writes p, a message of the command's, on the Line's writer, the
// line cleared before it and drawn again after: neither cuts the other.
// A nil Line has no writer: what it is given goes nowhere.
func (l *Line) Write(p []byte) (int, error) {
	if l == nil {
		return len(p), nil
	}
	return l.Beside(l.w).Write(p)
}

// Beside returns a writer onto w, another stream of the same terminal
// (the command's results on stdout), each of whose writes is Printed: the
// line cleared before it and drawn again after (a nil Line's: w itself).
func (l *Line) Beside(w io.Writer) io.Writer {
	if l == nil {
		return w
	}
	return beside{l, w}
}

type beside struct {
	l *Line
	w io.Writer
}

func (b beside) Write(p []byte) (n int, err error) {
	b.l.Print(func() { n, err = b.w.Write(p) })
	return n, err
}

// Print runs print, which writes on another stream of the same terminal
// (the command's results on stdout), with the line cleared before it and
// drawn again after, and not redrawn while it runs. A nil Line just runs
// it.
func (l *Line) Print(print func()) {
	if l == nil {
		print()
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.drawn {
		fmt.Fprint(l.w, "\r\033[K")
	}
	print()
	if l.drawn && l.name != "" {
		fmt.Fprintf(l.w, "\r\033[K%s", l.text(l.now()))
	}
}

// Close stops the Line and clears its line: before the command's results,
// and at its end. It may be called more than once.
func (l *Line) Close() {
	if l == nil {
		return
	}
	l.stopOnce.Do(func() {
		if l.stopTick != nil {
			close(l.stopTick)
			<-l.tickEnded
		}
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.drawn {
		fmt.Fprint(l.w, "\r\033[K")
		l.drawn = false
	}
	l.name = ""
}

// Clock writes a duration as a clock does: 0:07, 3:05, 1:02:09.
func Clock(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// IsTerminal reports whether w is a terminal: a file of a character
// device. The writer a caller was given is asked, not the process's
// stderr, so output into a buffer or a file is never a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
