// Package adaptive is Adaptive SGD (Ma, Rusu et al., "Adaptive Elastic
// Training for Sparse Deep Learning on Heterogeneous Multi-GPU Servers"):
// heterogeneity-aware elastic model averaging.
//
// Batches are dispatched one at a time to whichever device is free (dynamic
// scheduling) until a mega-batch of samples has been handed out; when every
// device is idle again the replicas are merged and the batch sizes rescaled:
//
//   - Alg. 1, batch-size scaling (§3.2): with μ the mean number of updates,
//     a device with u_i > μ grows its batch by β(u_i − μ) (if it stays
//     ≤ b_max) and one with u_i < μ shrinks it by β(μ − u_i) (if it stays
//     ≥ b_min); its learning rate follows by the linear scaling rule.
//   - Alg. 2, normalized merging (§3.3): α_i = b_i/Σb when every u_i is equal,
//     else u_i/Σu; when every replica has ‖w_i‖₂/|w| < pert_thr the most
//     updated replica's weight is multiplied by (1+δ) and the least updated
//     one's by (1−δ); w̄' = Σ α_i w_i + γ(w̄ − w̄_p), and every replica
//     restarts from w̄'.
//
// The perturbed weights need not sum to 1 in the paper, and then every
// merge scales the model by Σα: with the momentum γ the scale compounds
// (Σα = 1.014 and γ = 0.9 grow the model by about 8% a merge). It stays
// harmless only while Alg. 1 keeps the update counts equal, for then the
// perturbation does not fire; under the real clock the counts never settle
// and the model runs away. By default (--renorm 1) the perturbed weights
// are rescaled to sum to 1: the most updated replica still gains weight
// from the least updated, and the model is not scaled. --renorm 0 (and
// --paper) keeps the paper's weights.
//
// More departures from the paper, each an option, off by default unless
// measured to help (BENCHMARKS.md §10): --clamp 1 lets an Alg. 1 step that
// would cross a bound stop at it (the paper skips the step, so a device
// near b_max reaches it only when a step lands on it exactly); --smooth s
// has Alg. 1 read the update counts averaged over mega-batches, so that
// noisy batch timings (goroutines sharing cores) do not move the batch
// sizes back and forth; --restart 1 drops the global momentum at a merge
// whose step goes against it (the answer to NormsOp says how far each
// replica went along the momentum); --decay d divides every batch's rate by
// 1 + d·epoch; --fit 1 replaces Alg. 1's step by the batch sizes that
// equalize the update counts under a batch time linear in the batch, from
// each device's measured speed (the step β(u_i − μ) has one gain for every
// gap and swings when a device is several times slower); --pert-norm picks
// the regularization measure that gates the perturbation: the paper's
// ‖w‖₂/|w| is about 1e-5 for models of a million parameters, below every
// threshold the paper tried, so it never gates anything, where the RMS
// ‖w‖₂/√|w| (1) or the norm relative to the first merge's (2) does.
//
// Decisions the paper leaves open, and ours:
//   - A device receives its current b_i whatever remains of the mega-batch,
//     so a mega-batch may overrun by less than one batch per device.
//   - New batch sizes are rounded to whole samples; the learning rate scales
//     by the ratio of the rounded sizes.
//   - Perturbation needs a most- and a least-updated replica: when all u_i
//     are equal it does not fire (ties otherwise go to the lowest device).
//   - The order of Alg. 1 and Alg. 2 does not matter: α uses b_i only when
//     all u_i are equal, and then Alg. 1 changes nothing.
//   - With one device there is nothing to merge: Adaptive SGD is mini-batch
//     SGD, as the paper notes (§5.2.1).
//   - A device that leaves the run (strategy.Leave) takes its replica and
//     its updates of the mega-batch with it; the scheduler goes on with the
//     others. Its batch under way is lost: its samples were never processed,
//     so they no longer count towards the mega-batch, and the devices left
//     deal them again (an idle one that was waiting for the merge takes a
//     batch). The mega-batch ends when every device in the run is idle; the
//     merge weights, their perturbation and the batch-size scaling see only
//     those devices (the gone one has weight 0, and NaN for a norm), and the
//     merge record lists it with batch, learning rate, updates and weight 0.
//     Once a single device remains it is mini-batch SGD, as on one device:
//     each mega-batch ends with the centre taking its replica as it is.
//
// The variant "adaptive-code" follows the authors' public HeteroGPU
// scheduler instead (SPEC §3): a warm-up of a few epochs at b_min with a
// linear learning-rate ramp, then every device at b_max moving by a fixed
// step within [b_min, b_max] according to its share of batches, weights equal
// to the batch-count shares, and a learning rate decayed as
// 1/(1 + decay·(epoch − warm-up)). Its perturbed weights are rescaled to
// sum to 1 as adaptive's are (--renorm 0 keeps them as they come).
package adaptive

import (
	"fmt"
	"math"
	"strings"

	"github.com/hetsgd/hetsgd/setting"
	"github.com/hetsgd/hetsgd/strategy"
)

// The settings each variant is best run with (BENCHMARKS.md §10): Adam at
// 0.006 for b_max = 128 with a global momentum γ of 0.25 is adaptive's best
// single setting across Bibtex, Delicious and amazon-synth, where the
// paper's plain SGD with γ = 0.9 overshoots near convergence and ends
// below every baseline (Delicious 0.6639 against 0.6735 under the same
// time; amazon-synth 0.5015 against 0.5989). The authors'-code variant keeps
// plain SGD (§8: 0.5964 on Bibtex, Adam 0.01: 0.5928).
var (
	defaults     = strategy.Settings{Optimizer: "adam", LR: 0.006, Batch: 128, MaxLR: 0.01}
	defaultGamma = 0.25
	codeDefaults = strategy.Settings{Optimizer: "sgd", LR: 3.16, Batch: 128, MaxLR: 10}
	codeGamma    = 0.9
)

// paper is the paper's settings (§5.1, Alg. 2) where the defaults depart
// from them: plain SGD at rate 1 (the best of the power-of-ten grid in
// BENCHMARKS.md §4), the global momentum γ = 0.9, the mega-batch of 100
// batches, which the default shortens on small data sets, and Alg. 2's
// perturbation as printed, whose weights need not sum to 1.
var paper = &strategy.Preset{Source: "Adaptive SGD, Ma et al., §5.1 and Alg. 2",
	Settings: strategy.Settings{Optimizer: "sgd", LR: 1, Batch: 128},
	Options:  map[string]float64{"mega-batch": 100, "renorm": 0, "gamma": 0.9}}

func init() {
	bmax := strategy.Option{Name: "bmax", Derive: func(c strategy.Config, _ map[string]float64) float64 { return float64(c.Batch) },
		Formula: "batch", Range: setting.Count(1, setting.MaxCount), Usage: "largest batch size, also the initial one"}
	common := func(gamma float64) []strategy.Option {
		return []strategy.Option{
			{Name: "mega-batch", Derive: func(c strategy.Config, o map[string]float64) float64 {
				return strategy.MegaBatch(c.DatasetSize, int(o["bmax"]))
			}, Formula: strings.ReplaceAll(strategy.MegaBatchFormula, "2·b", "2·b_max"),
				Paper: "the paper's mega-batch is 100 batches (paper)", Range: setting.Range{Min: 0, Max: setting.MaxCount, MinOpen: true}, Usage: "samples between merges, in batches of b_max"},
			{Name: "pert-norm", Default: 0, Range: setting.Count(0, 2),
				Paper: "the paper's measure is ‖w‖₂/|w| (pert-norm = 0)",
				Usage: "the regularization measure pert-thr bounds: 0: ‖w‖₂/|w|, as in the paper (about 1e-5 for these models, so below any threshold the paper tried); 1: ‖w‖₂/√|w|, the parameters' RMS; 2: ‖w‖₂ over the replicas' mean norm at the first merge"},
			{Name: "pert-thr", Derive: func(_ strategy.Config, o map[string]float64) float64 {
				if o["pert-norm"] == 2 {
					return 2
				}
				return 0.1
			}, Formula: "0.1 (2 with pert-norm 2)", Range: setting.NonNegative, Usage: "perturb the weights when every replica's regularization measure (pert-norm) is below this"},
			{Name: "delta", Default: 0.1, Range: setting.Unit, Usage: "perturbation factor δ"},
			{Name: "renorm", Default: 1, Range: setting.Count(0, 1),
				Paper: "the paper's perturbed weights need not sum to 1 (renorm = 0)",
				Usage: "1: rescale the perturbed weights to sum to 1, so that the perturbation moves weight between replicas and never scales the model"},
			{Name: "gamma", Default: gamma, Paper: "the paper's γ is 0.9 (paper)", Range: setting.Unit, Usage: "momentum γ of the global model"},
			{Name: "restart", Default: 0, Range: setting.Count(0, 1),
				Usage: "1: a merge whose step goes against the global model's momentum, Σα_i⟨w_i − w̄, w̄ − w̄_prev⟩ < 0, drops the momentum (γ = 0 for that merge): the gradient restart of O'Donoghue and Candès, against the overshoot near convergence"},
		}
	}
	strategy.Register(strategy.Info{
		Name:      "adaptive",
		Summary:   "Adaptive SGD: dynamic scheduling, batch-size scaling (Alg. 1), normalized merging with perturbation and momentum (Alg. 2)",
		Evaluates: strategy.Center,
		Defaults:  defaults,
		Paper:     paper,
		Options: append([]strategy.Option{bmax,
			{Name: "bmin", Derive: func(_ strategy.Config, o map[string]float64) float64 { return math.Floor(o["bmax"] / 8) },
				Formula: "b_max/8", Range: setting.Count(1, setting.MaxCount), Usage: "smallest batch size"},
			{Name: "beta", Derive: func(_ strategy.Config, o map[string]float64) float64 { return o["bmin"] / 2 },
				Formula: "b_min/2", Range: setting.NonNegative, Usage: "batch-size scaling factor β"},
			{Name: "binit", Derive: func(_ strategy.Config, o map[string]float64) float64 { return o["bmax"] },
				Formula: "b_max", Range: setting.Count(1, setting.MaxCount), Usage: "initial batch size, in [b_min, b_max] (the paper's Fig. 10a varies it)"},
			{Name: "clamp", Default: 0, Range: setting.Count(0, 1),
				Usage: "1: an Alg. 1 step that would cross b_max or b_min stops at the bound (0: it is not taken, as in the paper)"},
			{Name: "fit", Default: 0, Range: setting.Count(0, 1),
				Usage: "1: Alg. 1 sets each batch size from the measured speeds instead of stepping by β: b_i ← b_max·v_i/max_j v_j, v_i = u_i·b_i the samples device i processed in the mega-batch (its speed, for time linear in the batch), clamped to [b_min, b_max] — one step to equal update counts, with no gain to overshoot"},
			{Name: "smooth", Default: 0, Range: setting.Range{Min: 0, Max: 1, MaxOpen: true},
				Usage: "Alg. 1 reads the update counts (with fit 1, the speeds) smoothed over mega-batches, ũ ← s·ũ + (1−s)·u, against noisy batch timings (0: this mega-batch's, as in the paper)"},
			{Name: "decay", Default: 0, Range: setting.Between(0, 1e6),
				Usage: "learning-rate decay: every batch's rate is divided by 1 + decay·epoch, so that the steps shrink as the model nears its best (0: none, as in the paper)"},
		}, common(defaultGamma)...),
		New:      func(cfg strategy.Config) (strategy.Strategy, error) { return New(cfg, false) },
		Check:    func(cfg strategy.Config) error { return check(cfg, false) },
		MaxBatch: maxBatch,
	})
	strategy.Register(strategy.Info{
		Name:      "adaptive-code",
		Summary:   "Adaptive SGD with the rules of the authors' code: warm-up at b_min, ±step batch scaling, batch-share weights, lr decay",
		Evaluates: strategy.Center,
		Defaults:  codeDefaults,
		Paper:     paper,
		Options: append([]strategy.Option{bmax,
			{Name: "bmin", Derive: func(_ strategy.Config, o map[string]float64) float64 { return min(32, o["bmax"]) },
				Formula: "min(32, b_max)", Range: setting.Count(1, setting.MaxCount), Usage: "smallest batch size (the authors' code: 32)"},
			{Name: "step", Default: 32, Range: setting.Count(1, setting.MaxCount), Usage: "batch-size change per merge"},
			{Name: "warmup", Default: 10, Range: setting.Between(0, 1e6), Usage: "warm-up epochs at b_min with a linear learning-rate ramp"},
			{Name: "decay", Default: 0.1, Range: setting.NonNegative, Usage: "learning-rate decay after warm-up: 1/(1 + decay·(epoch − warmup))"},
		}, common(codeGamma)...),
		New:      func(cfg strategy.Config) (strategy.Strategy, error) { return New(cfg, true) },
		Check:    func(cfg strategy.Config) error { return check(cfg, true) },
		MaxBatch: maxBatch,
	})
}

func maxBatch(cfg strategy.Config) int { return int(cfg.Opt("bmax")) }

// Adaptive is the strategy's state. Its exported fields let tests and tools
// read it; only Step changes it.
type Adaptive struct {
	n                          int
	bmax, bmin                 int
	beta, pertThr, delta, gamm float64
	renorm                     bool    // perturbed weights rescaled to sum to 1
	restart                    bool    // momentum dropped at a merge whose step opposes it
	clamp                      bool    // Alg. 1 stops at a bound instead of skipping
	fit                        bool    // Alg. 1 sets the batch sizes from the measured speeds
	pertNorm                   int     // the regularization measure: 0 paper, 1 RMS, 2 relative
	norm0                      float64 // pert-norm 2: the replicas' mean norm at the first merge
	smooth                     float64 // Alg. 1's smoothing of the update counts
	decay                      float64 // the rate's decay per epoch
	smoothed                   []float64
	mega                       int // samples per mega-batch
	lr                         float64
	code                       *codeRules

	B  []int     // current batch size per device
	LR []float64 // current learning rate per device
	U  []int     // updates per device in this mega-batch

	dispatched int    // samples handed out in this mega-batch, less those lost
	busy       int    // devices working
	working    []bool // per device
	running    bool   // a mega-batch is under way: its merge is not yet asked for
	total      int64  // samples handed out since the start, lost ones too
	size       int    // training points, for epochs (adaptive-code)

	members strategy.Members // the devices still in the run
}

type codeRules struct {
	step          int
	warmup, decay float64
	warm          bool // still warming up
}

// check reports the constraints between the options (each option's own
// range was checked by strategy.Resolve).
func check(cfg strategy.Config, code bool) error {
	bmax, bmin, mega := cfg.Opt("bmax"), cfg.Opt("bmin"), cfg.Opt("mega-batch")
	switch {
	case bmin > bmax:
		return fmt.Errorf("adaptive: bmin %v: need at most b_max=%d", bmin, int(bmax))
	case mega*bmax > setting.MaxCount:
		return fmt.Errorf("adaptive: mega-batch %v: at most %d samples in all (b_max=%d)", mega, setting.MaxCount, int(bmax))
	case code && cfg.DatasetSize < 1:
		return fmt.Errorf("adaptive-code: needs the training set size for its epoch-based rules")
	case code:
		return nil
	case cfg.Opt("decay") > 0 && cfg.DatasetSize < 1:
		return fmt.Errorf("adaptive: decay %v: needs the training set size, for epochs", cfg.Opt("decay"))
	}
	if binit := cfg.Opt("binit"); binit < bmin || binit > bmax {
		return fmt.Errorf("adaptive: binit %v: need a whole batch size in [b_min=%d, b_max=%d]", binit, int(bmin), int(bmax))
	}
	return nil
}

// New returns Adaptive SGD, with the authors'-code rules when code is set.
func New(cfg strategy.Config, code bool) (*Adaptive, error) {
	if err := check(cfg, code); err != nil {
		return nil, err
	}
	bmax, bmin := cfg.Opt("bmax"), cfg.Opt("bmin")
	a := &Adaptive{
		n: cfg.Devices, bmax: int(bmax), bmin: int(bmin),
		pertThr: cfg.Opt("pert-thr"), pertNorm: int(cfg.Opt("pert-norm")), delta: cfg.Opt("delta"), gamm: cfg.Opt("gamma"),
		lr: cfg.LR, size: cfg.DatasetSize, renorm: cfg.Opt("renorm") == 1, restart: cfg.Opt("restart") == 1,
	}
	binit := bmax
	if !code {
		a.beta, binit = cfg.Opt("beta"), cfg.Opt("binit")
		a.clamp, a.smooth, a.decay = cfg.Opt("clamp") == 1, cfg.Opt("smooth"), cfg.Opt("decay")
		a.fit = cfg.Opt("fit") == 1
	}
	mega := cfg.Opt("mega-batch")
	a.mega = max(1, int(math.Round(mega*bmax)))
	a.B, a.LR, a.U = make([]int, a.n), make([]float64, a.n), make([]int, a.n)
	a.working = make([]bool, a.n)
	a.members = strategy.NewMembers(a.n)
	// --lr is the rate for b_max; a smaller initial batch starts at the rate
	// the linear scaling rule gives it.
	for i := range a.B {
		a.B[i], a.LR[i] = int(binit), a.lr*binit/bmax
	}
	if code {
		c := &codeRules{step: int(cfg.Opt("step")), warmup: cfg.Opt("warmup"), decay: cfg.Opt("decay")}
		c.warm = c.warmup > 0
		if c.warm {
			for i := range a.B {
				a.B[i] = a.bmin
			}
		}
		a.code = c
	}
	return a, nil
}

func (a *Adaptive) Step(ev strategy.Event, out []strategy.Action) []strategy.Action {
	switch ev.Kind {
	case strategy.Start, strategy.CollectiveDone:
		a.dispatched, a.busy, a.running = 0, 0, true
		clear(a.U)
		for d := 0; d < a.n; d++ {
			if a.members.In(d) {
				out = a.dispatch(out, d)
			}
		}
	case strategy.BatchDone:
		d := ev.Device
		if d < 0 || d >= a.n || !a.working[d] {
			panic(fmt.Sprintf("adaptive: BatchDone from device %d, which has no batch", d))
		}
		a.working[d] = false
		a.U[d]++
		a.busy--
		if a.dispatched < a.mega {
			return a.dispatch(out, d)
		}
		return a.end(out)
	case strategy.Leave:
		d := ev.Device
		if !a.members.Leave(d) {
			return out // already gone, or no device
		}
		a.U[d] = 0 // its updates are lost with its replica
		if a.working[d] {
			// The batch is lost: its samples were never processed.
			a.working[d] = false
			a.busy--
			a.dispatched -= a.B[d]
		}
		if !a.running {
			return out
		}
		// The devices left deal what the lost batch did not process: an
		// idle one was waiting for the end of the mega-batch.
		for e := 0; e < a.n && a.dispatched < a.mega; e++ {
			if a.members.In(e) && !a.working[e] {
				out = a.dispatch(out, e)
			}
		}
		return a.end(out)
	case strategy.Answer:
		if a.pertNorm == 2 && a.norm0 == 0 {
			a.norm0 = a.meanNorm(ev.Values)
		}
		weights, perturbed := a.weights(ev.Values, ev.Dim)
		rec := &strategy.MergeRecord{
			BatchSizes: append([]int(nil), a.B...), LRs: append([]float64(nil), a.LR...),
			Updates: append([]int(nil), a.U...), Weights: weights, Perturbed: perturbed,
		}
		for d := range a.n {
			if !a.members.In(d) {
				rec.BatchSizes[d], rec.LRs[d] = 0, 0
			}
			rec.LRs[d] *= a.schedule() // the rates the batches took
		}
		a.scale()
		gamma := a.gamm
		if a.restart && gamma > 0 && a.against(weights, ev.Second) {
			gamma, rec.Restarted = 0, true
		}
		m := strategy.Merge(weights, gamma)
		m.Record = rec
		out = append(out, m)
	}
	return out
}

// against reports whether the merge's step Σα_i(w_i − w̄) goes against the
// centre's momentum w̄ − w̄_prev, from the replicas' way along it (the
// NormsOp's second values; nil: not known, never against).
func (a *Adaptive) against(weights, along []float64) bool {
	if along == nil {
		return false
	}
	s := 0.0
	for i, w := range weights {
		if a.members.In(i) {
			s += w * along[i]
		}
	}
	return s < 0
}

// end ends the mega-batch once it is dealt and every device in the run is
// idle: the replicas' norms are asked for the merge.
func (a *Adaptive) end(out []strategy.Action) []strategy.Action {
	if !a.running || a.dispatched < a.mega || a.busy > 0 {
		return out
	}
	a.running = false
	switch {
	case a.n == 1:
		// Nothing to merge: the centre takes the replica as it is.
		a.scale() // a no-op for Alg. 1; the code variant may end its warm-up
		return append(out, strategy.IdentityMerge())
	case a.members.Live() == 1:
		// One device left: as on one device, the centre takes its replica
		// as it is (weight 1, no momentum).
		w := a.members.Uniform(make([]float64, a.n))
		rec := &strategy.MergeRecord{BatchSizes: make([]int, a.n), LRs: make([]float64, a.n),
			Updates: append([]int(nil), a.U...), Weights: w}
		for d := range a.n {
			if a.members.In(d) {
				rec.BatchSizes[d], rec.LRs[d] = a.B[d], a.LR[d]*a.schedule()
			}
		}
		a.scale()
		m := strategy.Merge(w, 0)
		m.Record = rec
		return append(out, m)
	}
	return append(out, strategy.Action{Kind: strategy.Query, Op: NormsOp})
}

func (a *Adaptive) dispatch(out []strategy.Action, d int) []strategy.Action {
	if a.code != nil {
		a.LR[d] = a.code.lr(a, d) // the schedule moves with every batch
	}
	lr := a.LR[d] * a.schedule()
	a.dispatched += a.B[d]
	a.total += int64(a.B[d])
	a.busy++
	a.working[d] = true
	return append(out, strategy.Action{Kind: strategy.Dispatch, Device: d, Batch: a.B[d], LR: lr, Mode: strategy.LocalStep})
}

// schedule is the factor of the learning rate's decay at this point of
// the run: 1/(1 + decay·epoch), epochs counted in samples handed out.
func (a *Adaptive) schedule() float64 {
	if a.decay == 0 {
		return 1
	}
	return 1 / (1 + a.decay*float64(a.total)/float64(a.size))
}

// weights is Alg. 2's normalization and perturbation (or the code variant's
// batch-count shares) over the devices in the run; the others get 0. norms
// are the replicas' ‖w_i‖₂, dim the parameter count.
func (a *Adaptive) weights(norms []float64, dim int) ([]float64, bool) {
	w := make([]float64, a.n)
	first := -1 // the first device in the run
	equal := true
	for i, u := range a.U {
		if !a.members.In(i) {
			continue
		}
		if first < 0 {
			first = i
		}
		equal = equal && u == a.U[first]
	}
	share := a.U
	if equal && a.code == nil {
		share = a.B
	}
	sum := 0
	for i, v := range share {
		if a.members.In(i) {
			sum += v
		}
	}
	for i, v := range share {
		if a.members.In(i) {
			w[i] = float64(v) / float64(sum)
		}
	}
	if sum == 0 {
		a.members.Uniform(w) // no device took a batch: nothing tells them apart
	}
	if equal || (a.code != nil && a.code.warm) {
		return w, false
	}
	if !a.regularized(norms, dim) {
		return w, false
	}
	r, s := first, first
	for i, u := range a.U {
		if !a.members.In(i) {
			continue
		}
		if u > a.U[r] {
			r = i
		}
		if u < a.U[s] {
			s = i
		}
	}
	w[r] *= 1 + a.delta
	w[s] *= 1 - a.delta
	if a.renorm {
		sum := 0.0
		for _, v := range w {
			sum += v
		}
		for i := range w {
			w[i] /= sum
		}
	}
	return w, true
}

// meanNorm is the mean of the norms of the replicas in the run: the
// relative measure's reference, taken at the first merge.
func (a *Adaptive) meanNorm(norms []float64) float64 {
	s, k := 0.0, 0
	for i, nrm := range norms {
		if a.members.In(i) {
			s += nrm
			k++
		}
	}
	return s / float64(k)
}

// regularized reports whether every replica in the run is regularized, its
// measure (pert-norm) below pert-thr. norms are the replicas' ‖w_i‖₂, dim
// the parameter count.
func (a *Adaptive) regularized(norms []float64, dim int) bool {
	div := float64(dim)
	switch a.pertNorm {
	case 1:
		div = math.Sqrt(float64(dim))
	case 2:
		div = a.norm0
	}
	for i, nrm := range norms {
		if a.members.In(i) && !(nrm/div < a.pertThr) {
			return false
		}
	}
	return true
}

// scale is Alg. 1 (or the code variant's fixed steps) for the next
// mega-batch, over the devices in the run.
func (a *Adaptive) scale() {
	if a.code != nil {
		a.code.scale(a)
		return
	}
	if a.fit {
		a.fitSizes()
		return
	}
	u := a.counts(a.U, nil)
	mu := 0.0
	for i, v := range u {
		if a.members.In(i) {
			mu += v
		}
	}
	mu /= float64(a.members.Live())
	for i, v := range u {
		if !a.members.In(i) {
			continue
		}
		dev := v - mu
		nb := int(math.Round(float64(a.B[i]) + a.beta*dev))
		if a.clamp {
			nb = min(max(nb, a.bmin), a.bmax)
		}
		if (dev > 0 && nb <= a.bmax && nb > a.B[i]) || (dev < 0 && nb >= a.bmin && nb < a.B[i]) {
			a.LR[i] *= float64(nb) / float64(a.B[i])
			a.B[i] = nb
		}
	}
}

// fitSizes is Alg. 1 with --fit 1: each device's speed is the samples it
// processed in the mega-batch, v_i = u_i·b_i (all devices ran for the same
// span, the mega-batch); equal update counts need batches in proportion to
// the speeds, and the fastest device keeps b_max: b_i = b_max·v_i/max v.
// Where Alg. 1's step β(u_i − μ) is one gain for every gap, and overshoots
// when a device is several times slower than the rest, this is the fixed
// point of a linear batch-time model, reached in one step.
func (a *Adaptive) fitSizes() {
	v := a.counts(a.U, a.B)
	top := 0.0
	for i, s := range v {
		if a.members.In(i) {
			top = max(top, s)
		}
	}
	if top == 0 {
		return
	}
	for i, s := range v {
		if !a.members.In(i) {
			continue
		}
		nb := min(max(int(math.Round(float64(a.bmax)*s/top)), a.bmin), a.bmax)
		a.LR[i] *= float64(nb) / float64(a.B[i])
		a.B[i] = nb
	}
}

// counts are what Alg. 1 reads, the update counts u (or with --fit 1 the
// speeds u·b): this mega-batch's, or with --smooth s their exponential
// average over mega-batches, which starts from the first mega-batch's.
func (a *Adaptive) counts(u, b []int) []float64 {
	at := func(i int) float64 {
		if b == nil {
			return float64(u[i])
		}
		return float64(u[i] * b[i])
	}
	if a.smoothed == nil {
		a.smoothed = make([]float64, a.n)
		for i := range u {
			a.smoothed[i] = at(i)
		}
		return a.smoothed
	}
	for i := range u {
		if a.members.In(i) {
			a.smoothed[i] = a.smooth*a.smoothed[i] + (1-a.smooth)*at(i)
		}
	}
	return a.smoothed
}

func (c *codeRules) epoch(a *Adaptive) float64 { return float64(a.total) / float64(a.size) }

// lr is the learning rate of the next batch of device d: a linear ramp from
// 1% to 100% of lr·b_min/b_max during warm-up, then lr·b_d/b_max decayed by
// whole epochs past the warm-up.
func (c *codeRules) lr(a *Adaptive, d int) float64 {
	e := c.epoch(a)
	if c.warm {
		base := a.lr * float64(a.bmin) / float64(a.bmax)
		return base * (0.01 + 0.99*math.Min(1, e/c.warmup))
	}
	past := math.Max(0, math.Floor(e)-c.warmup)
	return a.lr * float64(a.B[d]) / float64(a.bmax) / (1 + c.decay*past)
}

func (c *codeRules) scale(a *Adaptive) {
	if c.warm {
		if c.epoch(a) >= c.warmup {
			c.warm = false
			for i := range a.B {
				a.B[i] = a.bmax
			}
		}
		return
	}
	sum := 0
	for i, u := range a.U {
		if a.members.In(i) {
			sum += u
		}
	}
	even := 1 / float64(a.members.Live())
	for i, u := range a.U {
		if !a.members.In(i) || sum == 0 {
			continue
		}
		share := float64(u) / float64(sum)
		switch {
		case share < even && a.B[i] > a.bmin:
			a.B[i] = max(a.bmin, a.B[i]-c.step)
		case share > even && a.B[i] < a.bmax:
			a.B[i] = min(a.bmax, a.B[i]+c.step)
		}
	}
	for i := range a.LR {
		a.LR[i] = c.lr(a, i)
	}
}

type adaptiveState struct {
	Smoothed   []float64
	Norm0      float64 // pert-norm 2's reference
	B          []int
	LR         []float64
	U          []int
	Dispatched int
	Busy       int
	Working    []bool
	Running    bool
	Total      int64
	Members    strategy.Members
	CodeWarm   bool // adaptive-code: still warming up
}

// MarshalBinary implements strategy.Strategy.
func (a *Adaptive) MarshalBinary() ([]byte, error) {
	st := adaptiveState{Smoothed: a.smoothed, Norm0: a.norm0, B: a.B, LR: a.LR, U: a.U, Dispatched: a.dispatched, Busy: a.busy,
		Working: a.working, Running: a.running, Total: a.total, Members: a.members}
	if a.code != nil {
		st.CodeWarm = a.code.warm
	}
	return strategy.EncodeState(st)
}

// UnmarshalBinary implements strategy.Strategy.
func (a *Adaptive) UnmarshalBinary(b []byte) error {
	var st adaptiveState
	if err := strategy.DecodeState(b, &st); err != nil {
		return err
	}
	if err := strategy.CheckLens(a.n,
		strategy.Len{What: "batch sizes", N: len(st.B)},
		strategy.Len{What: "rates", N: len(st.LR)},
		strategy.Len{What: "updates", N: len(st.U)},
		strategy.Len{What: "workers", N: len(st.Working)},
		strategy.Len{What: "members", N: st.Members.Devices()},
	); err != nil {
		return err
	}
	if st.Smoothed != nil {
		if err := strategy.CheckLens(a.n, strategy.Len{What: "smoothed counts", N: len(st.Smoothed)}); err != nil {
			return err
		}
	}
	a.smoothed, a.norm0, a.B, a.LR, a.U = st.Smoothed, st.Norm0, st.B, st.LR, st.U
	a.dispatched, a.busy, a.working, a.running, a.total, a.members = st.Dispatched, st.Busy, st.Working, st.Running, st.Total, st.Members
	if a.code != nil {
		a.code.warm = st.CodeWarm
	}
	return nil
}
