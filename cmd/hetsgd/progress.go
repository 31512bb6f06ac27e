package main

import (
	"fmt"
	"io"

	"github.com/hetsgd/hetsgd/progress"
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
		return progress.IsTerminal(stderr), nil
	}
	return false, fmt.Errorf("--progress %q: want auto, on or off", mode)
}

// progressBar and multiObserver are train's names for progress.Bar and
// progress.Observer, which feeds the line printer and the bar.
type progressBar = progress.Bar

type multiObserver progress.Observer

func newProgressBar(w io.Writer, epochs, budget float64) *progressBar {
	return progress.New(w, epochs, budget)
}

func (m *multiObserver) o() *progress.Observer                 { return (*progress.Observer)(m) }
func (m *multiObserver) Step(e float64, s int64, t, l float64) { m.o().Step(e, s, t, l) }
func (m *multiObserver) Eval(r runlog.Eval)                    { m.o().Eval(r) }
func (m *multiObserver) Warn(w runlog.Warning)                 { m.o().Warn(w) }
func (m *multiObserver) finish()                               { m.o().Finish() }
