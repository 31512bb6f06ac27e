package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/metric"
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

// NoteEvent is the "note" record a strategy asks for.
type NoteEvent struct {
	Event    string  `json:"event"` // "note"
	Time     float64 `json:"time"`
	Strategy string  `json:"strategy"`
	Text     string  `json:"text"`
}

// AsyncEvent is the "async" record of parameter-server runs, written at
// every evaluation: commits so far, the staleness of the commits since the
// last record, and for GEM the median of the scaling factors π (the GEM
// paper's Fig. 3), estimated per commit on a fixed sample of parameters.
type AsyncEvent struct {
	Event         string   `json:"event"` // "async"
	Time          float64  `json:"time"`
	Commits       int64    `json:"commits"`
	MeanStaleness float64  `json:"mean_staleness"`
	MaxStaleness  int      `json:"max_staleness"`
	MedianPi      *float64 `json:"median_pi,omitempty"` // nil without GEM commits
}

// Result summarises a run.
type Result struct {
	Evals        []metric.EvalRecord
	Merges       []MergeEvent
	Async        []AsyncEvent
	Staleness    []int64 // commits by staleness τ (index)
	Notes        int
	TrainSeconds float64
	Samples      int64
	Steps        int64     // AllReduce actions executed (synchronous steps)
	Model        []float32 // the evaluated model at the end (nil when timing only)
	Strategy     strategy.Info
	Diverged     bool // the run stopped because its loss stopped being finite
}

// Run trains workload w with cfg's strategy, evaluates it, and writes
// eval, merge, note and async records to log (nil: none). A cancelled ctx
// ends the run at the next event with the results so far and ctx's error.
func Run(ctx context.Context, cfg Config, w Workload, log *metric.Log, obs Observer) (*Result, error) {
	r, err := newRun(cfg, w, log, obs)
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
	r.res.Diverged = errors.Is(err, ErrDiverged)
	if !cfg.TimingOnly {
		r.res.Model = r.evaluated()
	}
	return r.res, err
}

type run struct {
	cfg        Config
	info       strategy.Info
	strat      strategy.Strategy
	w          Workload
	shape      Shape
	bytes      int // a replica's size on the wire
	devs       []*device
	stream     *data.Sampler
	log        *metric.Log
	obs        Observer
	res        *Result
	center     []float32 // w̄, z or the parameter server's θ
	prev       []float32 // w̄_p
	scratch    []float32
	dprev      []float32 // CROSSBOW's D_prev
	vecs       [][]float32
	weights    []float32
	norms      []float64
	dots       []float64
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
	serverFree float64 // virtual clock: when the parameter server's link frees up
	async      asyncStats
}

// asyncStats accumulates parameter-server statistics between records.
type asyncStats struct {
	commits      int64
	sinceTau     int64
	sinceCommits int64
	sinceMax     int
	pis          []float64 // per-commit median π since the last record
	sample       []int     // parameter indices sampled for π
	piBuf        []float64
}

func newRun(cfg Config, w Workload, log *metric.Log, obs Observer) (*run, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	scfg := strategy.Config{Devices: cfg.Devices, Batch: cfg.Batch, LR: cfg.LR, DatasetSize: w.Size(), Options: cfg.Options}
	strat, info, err := strategy.New(cfg.Strategy, scfg)
	if err != nil {
		return nil, err
	}
	if _, err := optim.New(cfg.Optimizer, 0); err != nil {
		return nil, err
	}
	if cfg.LineSearch {
		if _, ok := w.(LineSearcher); !ok {
			return nil, fmt.Errorf("engine: --line-search: workload %s has no closed-form objective", w.Name())
		}
	}
	maxBatch := info.MaxBatchOf(scfg)
	n := w.NumParams()
	r := &run{cfg: cfg, info: info, strat: strat, w: w, shape: w.Shape(), bytes: 4 * n, log: log, obs: obs,
		stream: data.NewSampler(w.Size(), samplerSeed(cfg.Seed)),
		res:    &Result{Strategy: info}, budget: math.MaxInt64,
		norms: make([]float64, cfg.Devices), dots: make([]float64, cfg.Devices),
		weights: make([]float32, cfg.Devices+2)}
	if cfg.Epochs > 0 {
		r.budget = int64(math.Ceil(cfg.Epochs * float64(w.Size())))
	}
	r.evalStep = max(1, int64(math.Round(cfg.EvalEvery*float64(w.Size()))))
	r.nextEval = r.evalStep

	var init []float32
	if !cfg.TimingOnly {
		init = make([]float32, n)
		w.Init(init, initSeed(cfg.Seed))
		r.center = slices.Clone(init)
		r.prev = slices.Clone(init)
		r.scratch = make([]float32, n)
	}
	// Under the virtual clock devices compute one at a time and may share
	// scratch space.
	shared := cfg.Clock == Virtual
	for d := 0; d < cfg.Devices; d++ {
		worker, err := w.NewWorker(maxBatch, dropoutSeed(cfg.Seed, d), shared)
		if err != nil {
			return nil, err
		}
		dev := &device{id: d, speed: cfg.speed(d), worker: worker, noise: rand.New(rand.NewPCG(noiseSeed(cfg.Seed, d), 1))}
		if !cfg.TimingOnly {
			dev.p, dev.g = slices.Clone(init), make([]float32, n)
			dev.opt, _ = optim.New(cfg.Optimizer, n)
		}
		r.devs = append(r.devs, dev)
	}
	r.vecs = make([][]float32, 0, cfg.Devices+2)
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

// begin loads the next batch for a Dispatch action; false means the budget
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
	if a.Batch < 1 {
		panic(fmt.Sprintf("engine: %s dispatched a batch of %d", r.cfg.Strategy, a.Batch))
	}
	d.worker.Load(r.stream, a.Batch)
	d.lr, d.mode, d.busy, d.rows = float32(a.LR), a.Mode, true, a.Batch
	if a.Mode == strategy.Pull && !r.cfg.TimingOnly {
		copy(d.p, r.center)
	}
	r.dispatched += int64(a.Batch)
	return d, true
}

// compute runs a device's batch (nothing when timing only).
func (r *run) compute(d *device) {
	if !r.cfg.TimingOnly {
		d.compute()
	}
}

// finish books a device's finished batch and returns the strategy's event.
func (r *run) finish(d *device) strategy.Event {
	d.busy = false
	n := int64(d.rows)
	r.done += n
	r.lossSum += d.loss * float64(n)
	r.lossRows += n
	if r.obs != nil {
		r.obs.Step(float64(r.done)/float64(r.w.Size()), r.done, r.now(), d.loss)
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
	if a.Kind == strategy.AllReduce {
		r.res.Steps++
	}
	if a.Note != "" {
		r.res.Notes++
		r.write(NoteEvent{Event: "note", Time: r.now(), Strategy: r.cfg.Strategy, Text: a.Note})
	}
	if r.cfg.TimingOnly {
		return
	}
	switch a.Kind {
	case strategy.AllReduce:
		g := r.devs[0].g
		if len(r.devs) > 1 || a.Weights[0] != 1 {
			g = r.scratch
			kernel.WeightedSum(g, r.weightsOf(a.Weights), r.grads())
		}
		lr := float32(a.LR)
		if r.cfg.LineSearch {
			// The exact step along −g from the (common) model.
			lr = float32(r.w.(LineSearcher).Step(r.devs[0].p, g))
		}
		for _, d := range r.devs {
			d.opt.Step(d.p, g, lr)
		}
	case strategy.Merge:
		// w̄' = γ(w̄ − w̄_p) + Σ α_i w_i in one pass; w̄_p ← w̄, w̄ ← w̄'.
		r.vecs = append(r.vecs[:0], r.center, r.prev)
		r.weights = append(r.weights[:0], float32(a.Gamma), float32(-a.Gamma))
		for i, d := range r.devs {
			r.vecs = append(r.vecs, d.p)
			r.weights = append(r.weights, float32(a.Weights[i]))
		}
		kernel.WeightedSum(r.scratch, r.weights, r.vecs)
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

func (r *run) grads() [][]float32 {
	r.vecs = r.vecs[:0]
	for _, d := range r.devs {
		r.vecs = append(r.vecs, d.g)
	}
	return r.vecs
}

func (r *run) weightsOf(w []float64) []float32 {
	r.weights = r.weights[:0]
	for _, x := range w {
		r.weights = append(r.weights, float32(x))
	}
	return r.weights
}

// normsEvent answers QueryNorms.
func (r *run) normsEvent() strategy.Event {
	for i, d := range r.devs {
		if d.p != nil {
			r.norms[i] = kernel.Nrm2(d.p)
		}
	}
	return strategy.Event{Kind: strategy.Norms, Values: r.norms, Dim: r.w.NumParams()}
}

// consensusEvent answers QueryConsensus: c_i = ⟨g_i, ḡ⟩/‖g_i‖².
func (r *run) consensusEvent() strategy.Event {
	if !r.allIdle() {
		panic(fmt.Sprintf("engine: %s asked for consensus while devices are busy", r.cfg.Strategy))
	}
	if r.cfg.TimingOnly {
		for i := range r.norms {
			r.norms[i] = 1
		}
		return strategy.Event{Kind: strategy.Consensus, Values: r.norms}
	}
	kernel.Consensus(r.dots, r.norms, r.grads())
	for i := range r.norms {
		if r.norms[i] > 0 {
			r.norms[i] = r.dots[i] / r.norms[i]
		} else {
			r.norms[i] = math.NaN()
		}
	}
	return strategy.Event{Kind: strategy.Consensus, Values: r.norms}
}

// commit applies a parameter-server update to the centre model.
func (r *run) commit(a strategy.Action) {
	d := r.devs[a.Device]
	if d.busy {
		panic(fmt.Sprintf("engine: %s committed for device %d while it is busy", r.cfg.Strategy, a.Device))
	}
	r.changed = true
	st := &r.async
	st.commits++
	st.sinceCommits++
	st.sinceTau += int64(a.Tau)
	st.sinceMax = max(st.sinceMax, a.Tau)
	for len(r.res.Staleness) <= a.Tau {
		r.res.Staleness = append(r.res.Staleness, 0)
	}
	r.res.Staleness[a.Tau]++
	if r.cfg.TimingOnly {
		return
	}
	lr := float32(a.LR)
	switch a.Rule {
	case strategy.Downpour:
		kernel.Axpy(-lr, d.g, r.center)
	case strategy.Staleness:
		kernel.Axpy(-lr/float32(a.Tau+1), d.g, r.center)
	case strategy.GEM:
		if d.m == nil {
			d.m = make([]float32, len(d.p))
		}
		if pi := r.samplePi(d, a); !math.IsNaN(pi) {
			st.pis = append(st.pis, pi)
		}
		kernel.GEMCommit(r.center, d.p, d.m, d.g, lr, float32(a.Mu), float32(a.Kappa), float32(a.Eps), float32(a.Clip))
	}
}

// samplePi returns the median of GEM's π over a fixed sample of the
// parameters, as the commit about to happen will compute them, counting only
// those the update changes (Δ ≠ 0): with sparse inputs most first-layer
// weights get no gradient from a batch and their π means nothing. NaN when
// none in the sample changes.
func (r *run) samplePi(d *device, a strategy.Action) float64 {
	st := &r.async
	if st.sample == nil {
		rng := rand.New(rand.NewPCG(r.cfg.Seed, 0x91))
		k := min(512, len(r.center))
		st.sample = rng.Perm(len(r.center))[:k]
		st.piBuf = make([]float64, k)
	}
	lr, mu := float32(a.LR), float32(a.Mu)
	pis := st.piBuf[:0]
	for _, j := range st.sample {
		delta := -lr * d.g[j]
		if delta == 0 {
			continue
		}
		m := mu*d.m[j] + delta
		pis = append(pis, float64(kernel.GEMFactor(r.center[j], d.p[j], m, delta, float32(a.Kappa), float32(a.Eps), float32(a.Clip))))
	}
	if len(pis) == 0 {
		return math.NaN()
	}
	slices.Sort(pis)
	return pis[len(pis)/2]
}

// evaluate scores the strategy's model if an evaluation is due or final.
// The caller stops its clock around it.
func (r *run) evaluate(final bool) error {
	if r.cfg.TimingOnly {
		return nil
	}
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
	rec := metric.NewEvalRecord(float64(r.done)/float64(r.w.Size()), r.done, r.now(), r.w.Evaluate(r.evaluated()), trainLoss)
	r.res.Evals = append(r.res.Evals, rec)
	if r.obs != nil {
		r.obs.Eval(rec)
	}
	if err := r.write(rec); err != nil {
		return err
	}
	if st := &r.async; st.sinceCommits > 0 {
		ev := AsyncEvent{Event: "async", Time: r.now(), Commits: st.commits, MaxStaleness: st.sinceMax,
			MeanStaleness: float64(st.sinceTau) / float64(st.sinceCommits)}
		if len(st.pis) > 0 {
			slices.Sort(st.pis)
			m := st.pis[len(st.pis)/2]
			ev.MedianPi = &m
		}
		st.sinceCommits, st.sinceTau, st.sinceMax, st.pis = 0, 0, 0, st.pis[:0]
		r.res.Async = append(r.res.Async, ev)
		return r.write(ev)
	}
	return nil
}

func (r *run) write(rec any) error { return r.log.Write(rec) }

// ErrDiverged is wrapped by the error of a run whose loss stopped being
// finite; Run still returns the results up to that point.
var ErrDiverged = errors.New("engine: training diverged")

// check reports a diverged run.
func (r *run) check(d *device) error {
	if math.IsNaN(d.loss) || math.IsInf(d.loss, 0) {
		return fmt.Errorf("%w: device %d's loss became %v after %d samples (lower --lr)", ErrDiverged, d.id, d.loss, r.done)
	}
	return nil
}
