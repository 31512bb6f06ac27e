package train

import (
	"testing"

	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/metric"
	"github.com/hetsgd/hetsgd/runlog"
)

// A run's last line says its best P@1 and what marked the run, a
// regression's last loss, a timing-only run's rate, or that nothing was
// evaluated.
func TestOutcome(t *testing.T) {
	evals := []runlog.Eval{
		{Epoch: 1, TrainSeconds: 2, Fields: metric.Fields{P1: 0.3, Loss: 4}},
		{Epoch: 2, TrainSeconds: 4, Fields: metric.Fields{P1: 0.5, Loss: 3}},
		{Epoch: 3, TrainSeconds: 6, Fields: metric.Fields{P1: 0.5, Loss: 2.5}},
	}
	for _, c := range []struct {
		name      string
		res       engine.Result
		xml, time bool
		want      string
	}{
		{"best", engine.Result{Evals: evals}, true, false, "best P@1 0.5000 at 4.00 train seconds (epoch 2.00)"},
		{"marked", engine.Result{Evals: evals, Diverging: true, Stalled: true, StoppedEarly: true}, true, false,
			"best P@1 0.5000 at 4.00 train seconds (epoch 2.00); the run was diverging (see the warning); the run stalled: its loss did not fall (see the warning); stopped early: no better one in 7 evaluations (--patience)"},
		{"regression", engine.Result{Evals: evals}, false, false, "loss 2.5 after 6.00 train seconds (epoch 3.00)"},
		{"timing only", engine.Result{Samples: 1000, TrainSeconds: 4}, true, true, "1000 samples in 4 virtual seconds: 250 samples/s"},
		{"interrupted", engine.Result{TrainSeconds: 1.5}, true, false, "no evaluation before the interruption (1.50 train seconds)"},
	} {
		if got := Outcome(&c.res, c.xml, c.time, 7); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
