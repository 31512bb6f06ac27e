package tune

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/optim"
	"github.com/hetsgd/hetsgd/progress"
	"github.com/hetsgd/hetsgd/progress/stage"
	"github.com/hetsgd/hetsgd/runlog"
	"github.com/hetsgd/hetsgd/setting"
	"github.com/hetsgd/hetsgd/strategy"
)

// Grid is what to run: every strategy at every rate, batch and seed.
type Grid struct {
	// Strategies are names, or variants with settings:
	// "adaptive[renorm=0,gamma=0.5]" (see ParseVariant), so that an
	// ablation is a grid like any other.
	Strategies []string `json:"strategies"`
	// LRs are learning rates; 0 is each strategy's default rate for its
	// optimizer and batch (--lrs default).
	LRs     []float64 `json:"lrs"`
	Batches []int     `json:"batches"`
	Seeds   []uint64  `json:"seeds"`
}

// Size is the number of runs of the grid.
func (g Grid) Size() int { return len(g.Strategies) * len(g.LRs) * len(g.Batches) * len(g.Seeds) }

// Validate reports the first part of the grid that cannot run.
func (g Grid) Validate() error {
	switch {
	case len(g.Strategies) == 0:
		return setting.Errorf("tune", "tune: {Grid.Strategies}: need at least one strategy")
	case len(g.LRs) == 0:
		return setting.Errorf("tune", "tune: {Grid.LRs}: need at least one learning rate")
	case len(g.Batches) == 0:
		return setting.Errorf("tune", "tune: {Grid.Batches}: need at least one batch size")
	case len(g.Seeds) == 0:
		return setting.Errorf("tune", "tune: {Grid.Seeds}: need at least one seed")
	}
	for _, s := range g.Strategies {
		v, err := ParseVariant(s)
		if err != nil {
			return err
		}
		if v.LR > 0 && slices.ContainsFunc(g.LRs, func(lr float64) bool { return lr != 0 }) {
			return setting.Errorf("tune", "tune: {Grid.Strategies} %s: a variant's lr= replaces the grid's rate: give it with {Grid.LRs} default", s)
		}
	}
	for _, lr := range g.LRs {
		if !(lr >= 0) || math.IsInf(lr, 0) {
			return setting.Errorf("tune", "tune: {Grid.LRs}: %v is not a positive learning rate", lr)
		}
		// 0 is "each strategy's own"; any other rate must be one a run takes.
		if r := engine.Ranges["lr"]; lr != 0 && !r.Contains(lr) {
			return setting.Errorf("tune", "tune: {Grid.LRs}: the rate %s", r.Need(lr))
		}
	}
	for _, b := range g.Batches {
		if r := engine.Ranges["batch"]; !r.Contains(float64(b)) {
			return setting.Errorf("tune", "tune: {Grid.Batches}: the batch %s", r.Need(float64(b)))
		}
	}
	return nil
}

// CheckVariants reports the first strategy of g — a variant with its
// settings — that cannot run at one of g's batches from base, so that a
// front end refuses it before any data is loaded; the grid's rates are
// Validate's. Run checks every point again, with the data.
func (g Grid) CheckVariants(base engine.Config) error {
	if err := g.Validate(); err != nil {
		return err
	}
	for _, s := range g.Strategies {
		for _, b := range g.Batches {
			if err := checkRun(base, s, b, g.LRs[0], 1); err != nil {
				return setting.Errorf("tune", "tune: {Grid.Strategies} %s, batch %d: %w", s, b, err)
			}
		}
	}
	return nil
}

// checkRun reports what keeps one run of the grid from starting.
func checkRun(base engine.Config, s string, batch int, lr float64, seed uint64) error {
	cfg, err := RunConfig(base, s, batch, lr, seed)
	if err == nil {
		cfg, err = cfg.WithDefaults()
	}
	if err == nil {
		err = cfg.Validate()
	}
	return err
}

// Result is one run of the grid.
type Result struct {
	Strategy string  `json:"strategy"`
	LR       float64 `json:"lr"`
	Batch    int     `json:"batch"`
	Seed     uint64  `json:"seed"`
	// Optimizer is the local optimizer the run used.
	Optimizer string `json:"optimizer"`
	// EffectiveLR is the rate the run took: LR, or the strategy's default
	// where LR is 0.
	EffectiveLR float64 `json:"effective_lr"`
	BestP1      float64 `json:"best_p1"`
	BestSeconds float64 `json:"best_p1_train_seconds"`
	// PSP5 is the propensity-scored P@5 of the evaluation of the best P@1
	// (0: not measured).
	PSP5         float64       `json:"psp5_at_best,omitempty"`
	TrainSeconds float64       `json:"train_seconds"`
	Diverged     bool          `json:"diverged,omitempty"`
	Evals        []runlog.Eval `json:"evals"`
}

// Run runs every point of g on w from base (which sets the devices, clock,
// budget, evaluation cadence and, unless its name is empty, the optimizer
// of every run), in the order strategy, batch, rate, seed, and calls each
// with every result as it comes (nil: none). A run that diverges is a
// result with Diverged set, not an error: a grid is expected to reach rates
// that are too large. rep, when not nil, is told of the grid as one stage
// of runs, each run's share after each of its batches (its epochs, or its
// time budget, done) and what it runs.
func Run(ctx context.Context, base engine.Config, w engine.Workload, g Grid, each func(Result) error, rep stage.Reporter) ([]Result, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	// Every point is checked before the first runs: a grid that cannot
	// run whole fails now, not after hours of its first points.
	for _, s := range g.Strategies {
		for _, b := range g.Batches {
			for _, lr := range g.LRs {
				if err := checkRun(base, s, b, lr, g.Seeds[0]); err != nil {
					return nil, fmt.Errorf("tune: %s at lr %g, batch %d: %w", s, lr, b, err)
				}
			}
		}
	}
	var out []Result
	rep = stage.Or(rep)
	rep.Stage("runs", float64(g.Size()), "runs")
	for _, s := range g.Strategies {
		for _, b := range g.Batches {
			for _, lr := range g.LRs {
				for _, seed := range g.Seeds {
					cfg, err := RunConfig(base, s, b, lr, seed)
					if err != nil {
						return out, err
					}
					eff, err := cfg.WithDefaults()
					if err != nil {
						return out, err
					}
					done := float64(len(out))
					rep.Update(done, fmt.Sprintf("%s lr %s batch %d seed %d", s, FormatRate(lr), b, seed))
					res, err := engine.Run(ctx, cfg, w, nil, &progress.Run{Reporter: rep, Before: done, Epochs: cfg.Epochs, Budget: cfg.TimeBudget, Scale: 1})
					r := Result{Strategy: s, LR: lr, Batch: b, Seed: seed, Optimizer: eff.Optimizer.Name, EffectiveLR: eff.LR}
					switch {
					case err == nil:
					case res != nil && res.Diverged:
						r.Diverged = true
					default:
						return out, fmt.Errorf("tune: %s at lr %g, batch %d, seed %d: %w", s, lr, b, seed, err)
					}
					r.Evals, r.TrainSeconds = res.Evals, res.TrainSeconds
					if best, ok := runlog.Best(res.Evals); ok {
						r.BestP1, r.BestSeconds, r.PSP5 = best.P1, best.TrainSeconds, best.PSP5
					}
					out = append(out, r)
					rep.Update(float64(len(out)), fmt.Sprintf("%s lr %s batch %d seed %d: best P@1 %.4f", s, FormatRate(lr), b, seed, r.BestP1))
					if each != nil {
						if err := each(r); err != nil {
							return out, err
						}
					}
				}
			}
		}
	}
	return out, nil
}

// The records of a tune log, in order: one ConfigRecord, a RunRecord per
// run, the Summary.

// ConfigRecord is the first record: the grid and the settings every run
// shares.
type ConfigRecord struct {
	Event      string    `json:"event"` // "tune-config"
	Version    string    `json:"version"`
	Data       string    `json:"data"`
	Grid       Grid      `json:"grid"`
	Optimizer  string    `json:"optimizer"` // or "strategy": each strategy's own
	Devices    int       `json:"devices"`
	Speeds     []float64 `json:"speeds,omitempty"`
	Clock      string    `json:"clock"`
	Epochs     float64   `json:"epochs"`
	TimeBudget float64   `json:"time_budget"`
	EvalEvery  float64   `json:"eval_every"`
	Hidden     []int     `json:"hidden"`
	Dropout    float64   `json:"dropout"`
}

// RunRecord is one run of the grid.
type RunRecord struct {
	Event string `json:"event"` // "tune-run"
	Result
}

// Point is a strategy at one rate and batch, over its seeds.
type Point struct {
	Strategy string  `json:"strategy"`
	LR       float64 `json:"lr"`
	// EffectiveLR is the rate the point's runs took (see Result).
	EffectiveLR float64 `json:"effective_lr"`
	Batch       int     `json:"batch"`
	BestP1      float64 `json:"best_p1"` // mean over the seeds (a diverged run counts its best before diverging)
	// PSP5 is the mean over the seeds of the propensity-scored P@5 at
	// their best P@1 (0: not measured).
	PSP5 float64 `json:"psp5_at_best,omitempty"`
	// TTA is the mean over the seeds of the training seconds to the
	// target, when every seed reaches it (Reached).
	TTA      float64 `json:"tta_seconds,omitempty"`
	Reached  bool    `json:"reached"`
	Seeds    int     `json:"seeds"`
	Diverged int     `json:"diverged,omitempty"` // seeds whose run diverged
}

// Summary is both protocols' choices.
type Summary struct {
	Event  string  `json:"event"` // "tune-summary"
	Target float64 `json:"target_p1"`
	// Shared is every strategy at SharedLR and SharedBatch; empty when
	// the strategies ran different optimizers, which share no rate.
	SharedLR    float64 `json:"shared_lr,omitempty"`
	SharedBatch int     `json:"shared_batch,omitempty"`
	Shared      []Point `json:"shared,omitempty"`
	SharedNote  string  `json:"shared_note,omitempty"`
	Own         []Point `json:"own"`
	Points      []Point `json:"points"` // every point of the grid
}

// Summarize averages the results over seeds and makes both protocols'
// choices. target is the P@1 of time-to-accuracy; 0 takes 90% of the best
// mean P@1 of the grid, so that most strategies reach it.
func Summarize(results []Result, target float64) Summary {
	type key struct {
		s  string
		lr float64
		b  int
	}
	var order []key
	group := map[key][]Result{}
	optimizers := map[string]bool{}
	for _, r := range results {
		k := key{r.Strategy, r.LR, r.Batch}
		if _, ok := group[k]; !ok {
			order = append(order, k)
		}
		group[k] = append(group[k], r)
		v, _ := ParseVariant(r.Strategy)
		if info, _ := strategy.Lookup(v.Strategy); !info.OwnUpdate {
			optimizers[r.Optimizer] = true
		}
	}
	sum := Summary{Event: "tune-summary", Target: target}
	for _, k := range order {
		p := Point{Strategy: k.s, LR: k.lr, EffectiveLR: group[k][0].EffectiveLR, Batch: k.b, Seeds: len(group[k])}
		for _, r := range group[k] {
			p.BestP1 += r.BestP1 / float64(p.Seeds)
			p.PSP5 += r.PSP5 / float64(p.Seeds)
			if r.Diverged {
				p.Diverged++
			}
		}
		sum.Points = append(sum.Points, p)
	}
	if target == 0 {
		best := 0.0
		for _, p := range sum.Points {
			best = max(best, p.BestP1)
		}
		sum.Target = 0.9 * best
	}
	for i, k := range order {
		p := &sum.Points[i]
		p.Reached = true
		for _, r := range group[k] {
			t, ok := runlog.TimeTo(r.Evals, sum.Target)
			if !ok {
				p.Reached, p.TTA = false, 0
				break
			}
			p.TTA += t / float64(p.Seeds)
		}
	}
	var strategies []string
	for _, p := range sum.Points {
		if !slices.Contains(strategies, p.Strategy) {
			strategies = append(strategies, p.Strategy)
		}
	}
	// Own: each strategy's best mean P@1 (the earliest in the grid on ties).
	for _, s := range strategies {
		var best *Point
		for i := range sum.Points {
			if p := &sum.Points[i]; p.Strategy == s && (best == nil || better(*p, *best)) {
				best = p
			}
		}
		sum.Own = append(sum.Own, *best)
	}
	// Shared: one rate and batch for all, among the powers of ten.
	if len(optimizers) > 1 {
		sum.SharedNote = "the strategies ran different optimizers, which share no learning rate: give one optimizer to compare at a shared rate"
		return sum
	}
	type setting struct {
		lr float64
		b  int
	}
	score := map[setting]float64{}
	count := map[setting]int{}
	var settings []setting
	anyPow := slices.ContainsFunc(sum.Points, func(p Point) bool { return PowerOfTen(p.LR) })
	for _, p := range sum.Points {
		if anyPow && !PowerOfTen(p.LR) || p.LR == 0 {
			continue // the default rates differ from strategy to strategy
		}
		st := setting{p.LR, p.Batch}
		if _, ok := score[st]; !ok {
			settings = append(settings, st)
		}
		score[st] += p.BestP1
		count[st]++
	}
	var pick setting
	bestScore := -1.0
	for _, st := range settings {
		if count[st] != len(strategies) {
			continue // not every strategy ran it
		}
		if m := score[st] / float64(count[st]); m > bestScore {
			pick, bestScore = st, m
		}
	}
	if bestScore < 0 && !slices.ContainsFunc(sum.Points, func(p Point) bool { return p.LR != 0 }) {
		sum.SharedNote = "every strategy ran at its own default rate: none is shared"
		return sum
	}
	if bestScore < 0 {
		sum.SharedNote = "no rate and batch of the grid was run by every strategy"
		return sum
	}
	sum.SharedLR, sum.SharedBatch = pick.lr, pick.b
	for _, s := range strategies {
		for _, p := range sum.Points {
			if p.Strategy == s && p.LR == pick.lr && p.Batch == pick.b {
				sum.Shared = append(sum.Shared, p)
			}
		}
	}
	return sum
}

// better orders points by mean best P@1, then by time-to-accuracy.
func better(a, b Point) bool {
	if a.BestP1 != b.BestP1 {
		return a.BestP1 > b.BestP1
	}
	return a.Reached && (!b.Reached || a.TTA < b.TTA)
}

// PowerOfTen reports whether lr is 10^k for a whole k (to rounding).
func PowerOfTen(lr float64) bool {
	e := math.Log10(lr)
	return math.Abs(e-math.Round(e)) < 1e-9
}

// ParseRates reads a list of learning rates, "0.01,0.1,1", or a range
// "A:B" of the powers of ten and the half steps between them (10^(k/2))
// from A to B, both included when they are on that ladder, or "default":
// each strategy's own default rate (the grid's rate 0).
func ParseRates(s string) ([]float64, error) {
	if strings.TrimSpace(s) == "default" {
		return []float64{0}, nil
	}
	if a, b, ok := strings.Cut(s, ":"); ok {
		lo, err1 := strconv.ParseFloat(strings.TrimSpace(a), 64)
		hi, err2 := strconv.ParseFloat(strings.TrimSpace(b), 64)
		if err1 != nil || err2 != nil || !(lo > 0) || !(hi >= lo) || math.IsInf(hi, 0) {
			return nil, setting.Errorf("tune", "tune: {Grid.LRs} %q: want A:B with 0 < A ≤ B", s)
		}
		var out []float64
		// A rounded half step (3.16 for 10^0.5) is on the ladder: the ends
		// are matched within 1% in log space.
		for k := math.Ceil(2*math.Log10(lo) - 0.01); k <= 2*math.Log10(hi)+0.01; k++ {
			v := math.Pow(10, k/2)
			if math.Mod(k, 2) == 0 {
				v = math.Pow(10, k/2) // exact powers of ten print as such
			} else {
				v, _ = strconv.ParseFloat(strconv.FormatFloat(v, 'g', 3, 64), 64)
			}
			out = append(out, v)
		}
		if len(out) == 0 {
			return nil, setting.Errorf("tune", "tune: {Grid.LRs} %q holds no power of ten or half step", s)
		}
		return out, nil
	}
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return nil, setting.Errorf("tune", "tune: {Grid.LRs}: %q is not a positive learning rate", f)
		}
		out = append(out, v)
	}
	return out, nil
}

// ParseSeeds reads a list of seeds, "1,2,3".
func ParseSeeds(s string) ([]uint64, error) {
	var out []uint64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
		if err != nil {
			return nil, setting.Errorf("tune", "tune: {Grid.Seeds}: %q is not a seed", f)
		}
		out = append(out, v)
	}
	return out, nil
}

// FormatRate prints a learning rate of the grid: "default" for 0.
func FormatRate(lr float64) string {
	if lr == 0 {
		return "default"
	}
	return strconv.FormatFloat(lr, 'g', -1, 64)
}

// RunConfig is the configuration of one run of the grid: base with the
// variant s, batch, rate and seed. The parameter servers run sgd, their
// commit rule, whatever optimizer base gives the others. Defaults are not
// yet filled in (engine.Config.WithDefaults).
func RunConfig(base engine.Config, s string, batch int, lr float64, seed uint64) (engine.Config, error) {
	v, err := ParseVariant(s)
	if err != nil {
		return engine.Config{}, err
	}
	cfg := base
	cfg.Batch, cfg.LR, cfg.Seed = batch, lr, seed
	if info, _ := strategy.Lookup(v.Strategy); info.OwnUpdate {
		cfg.Optimizer = optim.Config{Name: "sgd"}
	}
	v.Apply(&cfg)
	return cfg, nil
}

// Variant is a strategy of the grid with its own settings.
type Variant struct {
	Strategy  string
	Options   map[string]float64 // the strategy's options; nil: its defaults
	Optimizer string             // "": the grid's
	LR        float64            // 0: the grid's rate
}

// Apply sets the variant's settings on cfg: its options over cfg's, its
// optimizer and its rate where it has them.
func (v Variant) Apply(cfg *engine.Config) {
	cfg.Strategy = v.Strategy
	if len(v.Options) > 0 {
		opts := maps.Clone(cfg.Options)
		if opts == nil {
			opts = map[string]float64{}
		}
		maps.Copy(opts, v.Options)
		cfg.Options = opts
	}
	if v.Optimizer != "" {
		cfg.Optimizer = optim.Config{Name: v.Optimizer}
	}
	if v.LR > 0 {
		cfg.LR = v.LR
	}
}

// ParseVariant reads a strategy of the grid: a name, or a name with
// settings in brackets, "adaptive[renorm=0,gamma=0.5]": the strategy's own
// options, and optimizer=NAME and lr=RATE, which replace the grid's for
// this variant. The names are checked here; the values of the options with
// the run's other settings.
func ParseVariant(s string) (Variant, error) {
	name, rest, found := strings.Cut(s, "[")
	v := Variant{Strategy: strings.TrimSpace(name)}
	info, err := strategy.Lookup(v.Strategy)
	if err != nil {
		return Variant{}, setting.Errorf("tune", "tune: {Grid.Strategies}: %w", err)
	}
	if !found {
		return v, nil
	}
	body, ok := strings.CutSuffix(strings.TrimSpace(rest), "]")
	if !ok || strings.ContainsAny(body, "[]") {
		return Variant{}, setting.Errorf("tune", "tune: {Grid.Strategies}: %q: want NAME or NAME[setting=value,...]", s)
	}
	seen := map[string]bool{}
	for _, kv := range strings.Split(body, ",") {
		k, val, ok := strings.Cut(kv, "=")
		k, val = strings.TrimSpace(k), strings.TrimSpace(val)
		if !ok {
			return Variant{}, setting.Errorf("tune", "tune: {Grid.Strategies}: %q: %q is not setting=value", s, kv)
		}
		if seen[k] {
			return Variant{}, setting.Errorf("tune", "tune: {Grid.Strategies}: %q: %q given twice", s, k)
		}
		seen[k] = true
		if k == "optimizer" {
			if _, err := optim.New(optim.Config{Name: val}, 0); err != nil {
				return Variant{}, setting.Errorf("tune", "tune: {Grid.Strategies}: %q: %w", s, err)
			}
			v.Optimizer = val
			continue
		}
		x, err := strconv.ParseFloat(val, 64)
		switch {
		case err != nil:
			return Variant{}, setting.Errorf("tune", "tune: {Grid.Strategies}: %q: %q is not setting=number", s, kv)
		case k == "lr":
			if !(x > 0) || math.IsInf(x, 0) {
				return Variant{}, setting.Errorf("tune", "tune: {Grid.Strategies}: %q: lr=%v is not a positive learning rate", s, val)
			}
			v.LR = x
			continue
		case !slices.ContainsFunc(info.Options, func(o strategy.Option) bool { return o.Name == k }):
			return Variant{}, setting.Errorf("tune", "tune: {Grid.Strategies}: %q: %s has no option %q (hetsgd strategies -v %s)", s, v.Strategy, k, v.Strategy)
		}
		if v.Options == nil {
			v.Options = map[string]float64{}
		}
		v.Options[k] = x
	}
	return v, nil
}

// SplitStrategies splits a list of strategies at the commas outside
// brackets: "sync,adaptive[renorm=0,gamma=0]" is two.
func SplitStrategies(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}
