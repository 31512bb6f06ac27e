package train

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/metric"
	"github.com/hetsgd/hetsgd/model"
	"github.com/hetsgd/hetsgd/optim"
)

// Config is a single-device training run.
type Config struct {
	Hidden     []int
	Dropout    float64 // hidden-unit dropout probability in training
	Batch      int
	LR         float64
	Optimizer  optim.Config
	Epochs     float64 // passes over the training set; fractions allowed
	EvalEvery  float64 // epochs between evaluations
	EvalPoints int     // test points scored per evaluation; 0: all
	Seed       uint64
}

// Validate reports the first setting that cannot work, naming its flag.
func (c Config) Validate() error {
	switch {
	case c.Batch < 1:
		return fmt.Errorf("train: --batch %d: need at least 1", c.Batch)
	case !(c.LR > 0) || math.IsInf(c.LR, 0):
		return fmt.Errorf("train: --lr %v: need a positive finite learning rate", c.LR)
	case !(c.Epochs > 0) || math.IsInf(c.Epochs, 0):
		return fmt.Errorf("train: --epochs %v: need a positive number", c.Epochs)
	case !(c.EvalEvery > 0):
		return fmt.Errorf("train: --eval-every %v: need a positive number of epochs", c.EvalEvery)
	case !(c.Dropout >= 0 && c.Dropout < 1):
		return fmt.Errorf("train: --dropout %v: need a probability in [0, 1)", c.Dropout)
	case c.EvalPoints < 0:
		return fmt.Errorf("train: --eval-points %d: need 0 (all) or more", c.EvalPoints)
	}
	for i, h := range c.Hidden {
		if h < 1 {
			return fmt.Errorf("train: --hidden: layer %d has width %d", i+1, h)
		}
	}
	return nil
}

// Observer follows a run as it goes (a progress bar). Step is called after
// every training step and must be cheap.
type Observer interface {
	Step(epoch float64, samples int64, trainSeconds float64, loss float64)
	Eval(r metric.EvalRecord)
}

// Result summarises a finished run.
type Result struct {
	Evals        []metric.EvalRecord
	Best         metric.EvalRecord
	TrainSeconds float64
	Samples      int64
	Params       []float32
}

// Seeds derived from the run's seed, one per random stream.
func initSeed(seed uint64) uint64    { return seed }
func samplerSeed(seed uint64) uint64 { return seed ^ 0x9e3779b97f4a7c15 }
func dropoutSeed(seed uint64) uint64 { return seed ^ 0xd1b54a32d192ed03 }

// stepper holds everything one training step touches, allocated once.
type stepper struct {
	set     *data.Dataset
	p, g    []float32
	ws      *model.Workspace
	batch   *data.Batch
	sampler *data.Sampler
	opt     optim.Optimizer
}

func newStepper(m *model.MLP, opt optim.Optimizer, cfg Config, set *data.Dataset) (*stepper, error) {
	st := &stepper{set: set, p: make([]float32, m.NumParams()), g: make([]float32, m.NumParams()),
		ws: m.NewWorkspace(cfg.Batch), batch: data.NewBatch(set, cfg.Batch),
		sampler: data.NewSampler(set.Len(), samplerSeed(cfg.Seed)), opt: opt}
	m.Init(st.p, initSeed(cfg.Seed))
	if err := st.ws.SetDropout(cfg.Dropout, dropoutSeed(cfg.Seed)); err != nil {
		return nil, err
	}
	return st, nil
}

// step trains on the next n points and returns their mean loss. It does not
// allocate.
func (st *stepper) step(n int, lr float32) float64 {
	st.batch.Draw(st.set, st.sampler, n)
	loss := st.ws.Gradient(st.p, st.g, &st.batch.X, &st.batch.Y)
	st.opt.Step(st.p, st.g, lr)
	return loss
}

// Run trains on train, evaluating on test every cfg.EvalEvery epochs and at
// the end, and writes eval records to log (which may be nil). A cancelled ctx
// stops the run after the current step with its results so far and ctx's
// error.
func Run(ctx context.Context, cfg Config, trainSet, testSet *data.Dataset, log *metric.Log, obs Observer) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := data.CheckPair(trainSet, testSet); err != nil {
		return nil, err
	}
	m, err := modelFor(cfg, trainSet)
	if err != nil {
		return nil, err
	}
	opt, err := optim.New(cfg.Optimizer, m.NumParams())
	if err != nil {
		return nil, err
	}
	st, err := newStepper(m, opt, cfg, trainSet)
	if err != nil {
		return nil, err
	}
	p := st.p
	eval := metric.NewEvaluator(m, testSet, cfg.Batch, cfg.EvalPoints)

	res := &Result{Params: p}
	total := int64(math.Ceil(cfg.Epochs * float64(trainSet.Len())))
	evalStep := max(1, int64(math.Round(cfg.EvalEvery*float64(trainSet.Len()))))
	nextEval := evalStep
	var trainTime time.Duration
	var lossSum float64
	var lossRows int64
	lr := float32(cfg.LR)
	for res.Samples < total {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		n := int(min(int64(cfg.Batch), total-res.Samples))
		start := time.Now()
		loss := st.step(n, lr)
		trainTime += time.Since(start)
		res.Samples += int64(n)
		if math.IsNaN(loss) || math.IsInf(loss, 0) {
			return res, fmt.Errorf("train: the loss became %v after %d samples; lower --lr", loss, res.Samples)
		}
		lossSum += loss * float64(n)
		lossRows += int64(n)
		epoch := float64(res.Samples) / float64(trainSet.Len())
		if obs != nil {
			obs.Step(epoch, res.Samples, trainTime.Seconds(), loss)
		}
		if res.Samples >= nextEval || res.Samples == total {
			for nextEval <= res.Samples {
				nextEval += evalStep
			}
			rec := metric.NewEvalRecord(epoch, res.Samples, trainTime.Seconds(), eval.Evaluate(p), lossSum/float64(lossRows))
			lossSum, lossRows = 0, 0
			res.Evals = append(res.Evals, rec)
			if err := log.Write(rec); err != nil {
				return res, err
			}
			if obs != nil {
				obs.Eval(rec)
			}
		}
	}
	res.TrainSeconds = trainTime.Seconds()
	res.Best, _ = metric.Best(res.Evals)
	return res, nil
}

func modelFor(cfg Config, set *data.Dataset) (*model.MLP, error) {
	return model.New(model.Config{Inputs: set.Features(), Hidden: cfg.Hidden, Outputs: set.Labels()})
}
