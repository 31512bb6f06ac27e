package engine

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/metric"
	"github.com/hetsgd/hetsgd/model"
	"github.com/hetsgd/hetsgd/optim"
	"github.com/hetsgd/hetsgd/strategy"
)

// Observer follows a run (a progress bar). Step is called after every batch
// and must be cheap.
type Observer interface {
	Step(epoch float64, samples int64, trainSeconds float64, loss float64)
	Eval(r metric.EvalRecord)
}

// MergeEvent is the "merge" record of the run log.
type MergeEvent struct {
	Event      string  `json:"event"`       // "merge"
	Time       float64 `json:"time"`        // engine seconds
	CenterNorm float64 `json:"center_norm"` // ‖w̄‖₂ after the merge
	*strategy.MergeRecord
}

// Result summarises a run.
type Result struct {
	Evals        []metric.EvalRecord
	Merges       []MergeEvent
	TrainSeconds float64
	Samples      int64
	Model        []float32 // the evaluated model at the end
	Strategy     strategy.Info
}

// Run trains with cfg's strategy on trainSet, evaluates on testSet, and
// writes eval and merge records to log (nil: none). A cancelled ctx ends the
// run at the next event with the results so far and ctx's error.
func Run(ctx context.Context, cfg Config, trainSet, testSet *data.Dataset, log *metric.Log, obs Observer) (*Result, error) {
	r, err := newRun(cfg, trainSet, testSet, log, obs)
	if err != nil {
		return nil, err
	}
	if cfg.Clock == Virtual {
		err = r.runVirtual(ctx)
	} else {
		err = r.runReal(ctx)
	}
	r.res.TrainSeconds = r.now()
	r.res.Samples = r.done
	r.res.Model = r.evaluated()
	return r.res, err
}

type run struct {
	cfg        Config
	info       strategy.Info
	strat      strategy.Strategy
	m          *model.MLP
	shape      shape
	devs       []*device
	trainSet   *data.Dataset
	sampler    *data.Sampler
	eval       *metric.Evaluator
	log        *metric.Log
	obs        Observer
	res        *Result
	center     []float32 // w̄ or z
	prev       []float32 // w̄_p
	scratch    []float32
	dprev      []float32 // CROSSBOW's D_prev
	norms      []float64
	budget     int64 // samples (math.MaxInt64: none)
	dispatched int64
	done       int64
	evalStep   int64
	nextEval   int64
	lastEval   int64
	changed    bool // the evaluated model changed since the last evaluation
	lossSum    float64
	lossRows   int64
	acts       []strategy.Action
	now        func() float64
}

func newRun(cfg Config, trainSet, testSet *data.Dataset, log *metric.Log, obs Observer) (*run, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := data.CheckPair(trainSet, testSet); err != nil {
		return nil, err
	}
	scfg := strategy.Config{Devices: cfg.Devices, Batch: cfg.Batch, LR: cfg.LR, DatasetSize: trainSet.Len(), Options: cfg.Options}
	strat, info, err := strategy.New(cfg.Strategy, scfg)
	if err != nil {
		return nil, err
	}
	m, err := model.New(model.Config{Inputs: trainSet.Features(), Hidden: cfg.Hidden, Outputs: trainSet.Labels()})
	if err != nil {
		return nil, err
	}
	if _, err := optim.New(cfg.Optimizer, 0); err != nil {
		return nil, err
	}
	maxBatch := info.MaxBatchOf(scfg)
	r := &run{cfg: cfg, info: info, strat: strat, m: m, shape: shapeOf(m), trainSet: trainSet, log: log, obs: obs,
		sampler: data.NewSampler(trainSet.Len(), samplerSeed(cfg.Seed)),
		eval:    metric.NewEvaluator(m, testSet, max(cfg.Batch, 256), cfg.EvalPoints),
		res:     &Result{Strategy: info}, budget: math.MaxInt64,
		norms: make([]float64, cfg.Devices)}
	if cfg.Epochs > 0 {
		r.budget = int64(math.Ceil(cfg.Epochs * float64(trainSet.Len())))
	}
	r.evalStep = max(1, int64(math.Round(cfg.EvalEvery*float64(trainSet.Len()))))
	r.nextEval = r.evalStep

	init := make([]float32, m.NumParams())
	m.Init(init, initSeed(cfg.Seed))
	var shared *model.Workspace
	if cfg.Clock == Virtual {
		shared = m.NewWorkspace(maxBatch) // devices compute one at a time
	}
	for d := 0; d < cfg.Devices; d++ {
		opt, _ := optim.New(cfg.Optimizer, m.NumParams())
		dev := &device{id: d, speed: cfg.speed(d), p: append([]float32(nil), init...), g: make([]float32, m.NumParams()),
			opt: opt, ws: shared, batch: data.NewBatch(trainSet, maxBatch),
			noise: rand.New(rand.NewPCG(noiseSeed(cfg.Seed, d), 1))}
		if dev.ws == nil {
			// Each device draws its own dropout masks, so that devices of
			// one run do not repeat each other's.
			dev.ws = m.NewWorkspace(maxBatch)
			if err := dev.ws.SetDropout(cfg.Dropout, dropoutSeed(cfg.Seed, d)); err != nil {
				return nil, err
			}
		}
		r.devs = append(r.devs, dev)
	}
	if shared != nil {
		// The shared workspace draws masks for whichever device computes;
		// the order of computation is deterministic, so runs still repeat.
		if err := shared.SetDropout(cfg.Dropout, dropoutSeed(cfg.Seed, 0)); err != nil {
			return nil, err
		}
	}
	r.center = append([]float32(nil), init...)
	r.prev = append([]float32(nil), init...)
	r.scratch = make([]float32, m.NumParams())
	return r, nil
}

// evaluated returns the model whose accuracy the strategy reports.
func (r *run) evaluated() []float32 {
	if r.info.Evaluates == strategy.Replica0 {
		return r.devs[0].p
	}
	return r.center
}

// exhausted reports whether the budget forbids new work.
func (r *run) exhausted() bool {
	return r.dispatched >= r.budget || (r.cfg.TimeBudget > 0 && r.now() >= r.cfg.TimeBudget)
}

// begin gathers the next batch for a Dispatch action; false means the budget
// is spent and the action is dropped (the strategy then waits forever for
// that device, and the run ends when nothing else is under way).
func (r *run) begin(a strategy.Action) (*device, bool) {
	d := r.devs[a.Device]
	if d.busy {
		panic(fmt.Sprintf("engine: %s dispatched to device %d while it is busy", r.cfg.Strategy, a.Device))
	}
	if r.exhausted() {
		return nil, false
	}
	if a.Batch < 1 || a.Batch > d.batch.Cap() {
		panic(fmt.Sprintf("engine: %s dispatched a batch of %d to a device sized for %d", r.cfg.Strategy, a.Batch, d.batch.Cap()))
	}
	d.batch.Draw(r.trainSet, r.sampler, a.Batch)
	d.lr, d.mode, d.busy = float32(a.LR), a.Mode, true
	r.dispatched += int64(a.Batch)
	return d, true
}

// finish books a device's finished batch and returns the strategy's event.
func (r *run) finish(d *device) strategy.Event {
	d.busy = false
	n := int64(d.batch.Len())
	r.done += n
	r.lossSum += d.loss * float64(n)
	r.lossRows += n
	if r.obs != nil {
		r.obs.Step(float64(r.done)/float64(r.trainSet.Len()), r.done, r.now(), d.loss)
	}
	return strategy.Event{Kind: strategy.BatchDone, Device: d.id}
}

func (r *run) allIdle() bool {
	for _, d := range r.devs {
		if d.busy {
			return false
		}
	}
	return true
}

// collective executes AllReduce, Merge and CenterSync actions, which the
// strategies emit only when every device is idle.
func (r *run) collective(a strategy.Action) {
	if !r.allIdle() {
		panic(fmt.Sprintf("engine: %s issued %s while devices are busy", r.cfg.Strategy, a.Kind))
	}
	r.changed = true
	switch a.Kind {
	case strategy.AllReduce:
		g := r.devs[0].g
		if len(r.devs) > 1 {
			g = r.scratch
			clear(g)
			for i, d := range r.devs {
				kernel.Axpy(float32(a.Weights[i]), d.g, g)
			}
		}
		for _, d := range r.devs {
			d.opt.Step(d.p, g, float32(a.LR))
		}
	case strategy.Merge:
		// scratch = γ(w̄ − w̄_p) + Σ α_i w_i; then w̄_p ← w̄, w̄ ← scratch.
		if a.Gamma != 0 {
			copy(r.scratch, r.center)
			kernel.AxpBy(float32(-a.Gamma), r.prev, float32(a.Gamma), r.scratch)
		} else {
			clear(r.scratch)
		}
		for i, d := range r.devs {
			kernel.Axpy(float32(a.Weights[i]), d.p, r.scratch)
		}
		r.prev, r.center, r.scratch = r.center, r.scratch, r.prev
		for _, d := range r.devs {
			copy(d.p, r.center)
		}
		if a.Record != nil {
			ev := MergeEvent{Event: "merge", Time: r.now(), CenterNorm: kernel.Nrm2(r.center), MergeRecord: a.Record}
			r.res.Merges = append(r.res.Merges, ev)
			r.write(ev)
		}
	case strategy.CenterSync:
		// D = γ·D_prev + Σ a·(w_i − z); w_i ← w_i − a·(w_i − z); z ← z + D.
		if r.dprev == nil {
			r.dprev = make([]float32, len(r.center))
		}
		kernel.Scal(float32(a.Gamma), r.dprev)
		for _, d := range r.devs {
			copy(r.scratch, d.p)
			kernel.Axpy(-1, r.center, r.scratch) // w_i − z
			kernel.Axpy(float32(a.A), r.scratch, r.dprev)
			kernel.Axpy(float32(-a.A), r.scratch, d.p)
		}
		kernel.Axpy(1, r.dprev, r.center)
	default:
		panic("engine: not a collective: " + a.Kind.String())
	}
}

// normsEvent answers QueryNorms.
func (r *run) normsEvent() strategy.Event {
	for i, d := range r.devs {
		r.norms[i] = kernel.Nrm2(d.p)
	}
	return strategy.Event{Kind: strategy.Norms, Values: r.norms, Dim: r.m.NumParams()}
}

// evaluate scores the strategy's model if an evaluation is due or final.
// The caller stops its clock around it.
func (r *run) evaluate(final bool) error {
	// A final evaluation only when the model moved since the last one: a run
	// cut off in the middle of a mega-batch still ends on its last merge.
	if !(r.done >= r.nextEval || (final && r.changed && r.done > r.lastEval) || (final && len(r.res.Evals) == 0)) {
		return nil
	}
	r.changed = false
	for r.nextEval <= r.done {
		r.nextEval += r.evalStep
	}
	r.lastEval = r.done
	trainLoss := 0.0
	if r.lossRows > 0 {
		trainLoss = r.lossSum / float64(r.lossRows)
	}
	r.lossSum, r.lossRows = 0, 0
	rec := metric.NewEvalRecord(float64(r.done)/float64(r.trainSet.Len()), r.done, r.now(), r.eval.Evaluate(r.evaluated()), trainLoss)
	r.res.Evals = append(r.res.Evals, rec)
	if r.obs != nil {
		r.obs.Eval(rec)
	}
	return r.write(rec)
}

func (r *run) write(rec any) error { return r.log.Write(rec) }

// check reports a diverged run.
func (r *run) check(d *device) error {
	if math.IsNaN(d.loss) || math.IsInf(d.loss, 0) {
		return fmt.Errorf("engine: device %d's loss became %v after %d samples; lower --lr", d.id, d.loss, r.done)
	}
	return nil
}
