package progress_test

import (
	"fmt"
	"strings"

	"github.com/hetsgd/hetsgd/metric"
	"github.com/hetsgd/hetsgd/progress"
	"github.com/hetsgd/hetsgd/runlog"
)

// A bar for a run of 4 epochs, fed a step and an evaluation, then cleared
// at the run's end. On a terminal each "\r\033[K" returns to the line's
// start and erases it, so the line is redrawn in place; here each drawing
// is printed on a line of its own. No time has passed, and too little of
// the run is done to estimate the time left (ETA –).
func ExampleBar() {
	var b strings.Builder
	bar := progress.New(&b, 4, 0) // on a terminal: progress.New(os.Stderr, ...)
	bar.Step(0.5, 1000, 0.5, 0.69)
	bar.Eval(runlog.Eval{Epoch: 0.5, Fields: metric.Fields{P1: 0.4123}})
	bar.Clear()
	for _, line := range strings.Split(b.String(), "\r\033[K")[1:] {
		fmt.Printf("|%s\n", line)
	}
	// Output:
	// | epoch   0.50/4 ███·····················      2000 samples/s  loss 0.6900  P@1   –     0:00, ETA –
	// | epoch   0.50/4 ███·····················      2000 samples/s  loss 0.6900  P@1 0.4123  0:00, ETA –
	// |
}
