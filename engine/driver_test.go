package engine

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/hetsgd/hetsgd/checkpoint"
	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/strategy"
)

// fakeJob is a job without devices, for the driver's tests: it records
// the commands it is given and answers as devices of speed 1 that compute
// nothing would, every batch a loss of 1 with 10 non-zeros a row. Its
// model is the one the run evaluates.
type fakeJob struct {
	devices int
	model   []float32
	ran     []work    // batches run, in order (runNow)
	cmds    []command // collectives, in order
	ops     map[string]strategy.Op
	stopped int
	closed  int
}

var errNoCheckpoints = errors.New("fakeJob: no checkpoints")

func (f *fakeJob) dispatch(w work) error { return errors.New("fakeJob: virtual clock only") }
func (f *fakeJob) collective(c *command, next []work) error {
	cc := *c
	cc.weights = slices.Clone(c.weights)
	f.cmds = append(f.cmds, cc)
	return nil
}
func (f *fakeJob) query(c *command) (values, second []float64, err error) {
	v := make([]float64, f.devices)
	for i := range v {
		v[i] = 1
	}
	return v, slices.Clone(v), nil
}
func (f *fakeJob) commit(*strategy.Action) (float64, error) { return math.NaN(), nil }
func (f *fakeJob) slow(int, float64) error                  { return nil }
func (f *fakeJob) leave(int) error                          { return nil }
func (f *fakeJob) strikeRank(Fault) error                   { return nil }
func (f *fakeJob) live() int                                { return f.devices }
func (f *fakeJob) distributed() bool                        { return false }
func (f *fakeJob) op(name string) (strategy.Op, error) {
	if op, ok := f.ops[name]; ok {
		return op, nil
	}
	op, err := strategy.NewOp(name)
	if err == nil {
		f.ops[name] = op
	}
	return op, err
}
func (f *fakeJob) runNow(w work, _ bool, _ float64) batchRun {
	f.ran = append(f.ran, w)
	return batchRun{dev: w.dev, rows: w.rows, nnz: 10 * w.rows, localStep: w.mode == strategy.LocalStep, speed: 1, noise: 1}
}
func (f *fakeJob) prepareNext(float64) float64                          { return 0 }
func (f *fakeJob) applied() int64                                       { return 0 }
func (f *fakeJob) lastLoss(int) float64                                 { return 1 }
func (f *fakeJob) evaluated(bool) ([]float32, string)                   { return f.model, "center" }
func (f *fakeJob) layered() (LayeredTiming, bool)                       { return LayeredTiming{}, false }
func (f *fakeJob) start(chan<- doneMsg)                                 {}
func (f *fakeJob) hurry()                                               {}
func (f *fakeJob) hurryAll() error                                      { return nil }
func (f *fakeJob) stopDevices()                                         {}
func (f *fakeJob) stop() error                                          { f.stopped++; return nil }
func (f *fakeJob) close()                                               { f.closed++ }
func (f *fakeJob) serve() error                                         { return errors.New("fakeJob: rank 0 only") }
func (f *fakeJob) books([]bool) ([]deviceState, error)                  { return nil, errNoCheckpoints }
func (f *fakeJob) writeVectors(*checkpoint.Writer, []deviceState) error { return errNoCheckpoints }
func (f *fakeJob) hasCentreState() bool                                 { return false }
func (f *fakeJob) hasPending() bool                                     { return false }
func (f *fakeJob) restore(*checkpoint.Reader, *engineState) error       { return errNoCheckpoints }
func (f *fakeJob) restoreResized(*checkpoint.Reader, *engineState, int) error {
	return errNoCheckpoints
}

// The driver against a fake job: what it commands, and what it makes of
// the answers, with no device behind them. Synchronous SGD on 2 devices
// for one epoch of Bibtex, virtual clock: the driver deals the shared
// stream in dispatch order (each batch starts where the last one ended),
// two batches a step and one all-reduce of weights ½, ½ after them;
// it evaluates every quarter epoch, on the model the job names, at times
// that grow; and it stops and releases the job once.
func TestDriverAgainstAFakeJob(t *testing.T) {
	w := xml(t, 0)
	cfg := base("sync", 2, Virtual)
	cfg.Epochs, cfg.EvalEvery = 1, 0.25
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	strat, info, err := strategy.New(cfg.Strategy, cfg.strategyConfig(w.Size()))
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeJob{devices: 2, model: make([]float32, w.NumParams()), ops: map[string]strategy.Op{}}
	w.Init(f.model, 1)
	r, err := assemble(cfg, w, nil, nil, strat, info, comm.Self(), f, newMembership(2))
	if err != nil {
		t.Fatal(err)
	}
	res, err := (&Prepared{cfg: cfg, w: w, r: r}).Run(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var pos int64
	for i, b := range f.ran {
		if b.pos != pos || b.dev != i%2 || b.mode != strategy.Gradient || b.rows != cfg.Batch && i < len(f.ran)-2 {
			t.Fatalf("batch %d: %+v, want device %d's gradient batch at %d", i, b, i%2, pos)
		}
		pos += int64(b.rows)
	}
	if pos != res.Samples || res.Samples < int64(w.Size()) || res.Samples >= int64(w.Size()+2*cfg.Batch) {
		t.Fatalf("%d samples dealt, %d run, for an epoch of %d", pos, res.Samples, w.Size())
	}
	// The budget may end the run with a step's batches dealt, not reduced.
	if steps := len(f.ran) / 2; len(f.cmds) != steps || int64(steps) != res.Steps {
		t.Fatalf("%d collectives, %d steps counted, for %d batches", len(f.cmds), res.Steps, len(f.ran))
	}
	for i, c := range f.cmds {
		if c.kind != cmdAllReduce || !slices.Equal(c.weights, []float64{0.5, 0.5}) || c.lr != cfg.LR {
			t.Fatalf("collective %d: kind %d weights %v rate %v", i, c.kind, c.weights, c.lr)
		}
	}
	if len(res.Evals) != 4 {
		t.Fatalf("%d evaluations, want one a quarter epoch", len(res.Evals))
	}
	for i, e := range res.Evals {
		if i > 0 && !(e.TrainSeconds > res.Evals[i-1].TrainSeconds) || e.P1 != res.Evals[0].P1 {
			t.Fatalf("evaluation %d: %+v after %+v: want later times, and the job's one model's score", i, e, res.Evals[max(i-1, 0)])
		}
	}
	if f.stopped != 1 || f.closed != 1 || !slices.Equal(res.Model, f.model) {
		t.Fatalf("stopped %d, closed %d times; the result's model is the job's: %v", f.stopped, f.closed, slices.Equal(res.Model, f.model))
	}
}
