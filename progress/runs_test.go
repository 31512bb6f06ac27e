package progress

import (
	"fmt"
	"testing"
)

// reports records what a stage.Reporter is told.
type reports []string

func (r *reports) Stage(name string, total float64, unit string) {
	*r = append(*r, fmt.Sprintf("stage %s %g %s", name, total, unit))
}
func (r *reports) Update(done float64, detail string) {
	*r = append(*r, fmt.Sprintf("%g %s", done, detail))
}

// A run reports the work before it plus its share: of its epochs, or of
// its time budget when it has no epoch limit, never past the whole run.
func TestRunReportsItsShare(t *testing.T) {
	var got reports
	(&Run{Reporter: &got, Before: 3, Epochs: 4, Scale: 1}).Step(1, 100, 50, 0.5)
	(&Run{Reporter: &got, Before: 3, Budget: 100, Scale: 1}).Step(1, 100, 50, 0.5)
	(&Run{Reporter: &got, Epochs: 4, Scale: 4}).Step(5, 100, 50, 0.5)
	(&Run{Reporter: &got, Before: 2, Scale: 1}).Step(5, 100, 50, 0.5)
	if want := "[3.25  3.5  4  2 ]"; fmt.Sprint(got) != want {
		t.Fatalf("reported %v, want %s", got, want)
	}
}
