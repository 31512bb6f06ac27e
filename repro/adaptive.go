package repro

import (
	"context"
	"fmt"
	"math"

	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/cost"
	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/optim"
	"github.com/hetsgd/hetsgd/report"
)

// The Adaptive SGD study's settings, after the paper's §5.1.
const (
	bmax = 128      // initial (largest) batch
	bmin = bmax / 8 // b_max/8
	beta = bmin / 2 // b_min/2
	// megaSmall is the mega-batch, in batches of b_max, on our small sets.
	// The paper's 100 batches are a whole epoch of Delicious (12,920
	// points); its own mega-batches were 0.2–0.5 of an epoch of the large
	// sets, and it finds 20 or more batches fine (§5.2.2). 20 batches keep
	// that fraction; the sensitivity section runs 4 to 100.
	megaSmall = 20
)

// heterogeneity is the paper's speed pattern (Fig. 1's up-to-32% spread),
// cycled over the devices.
var heterogeneity = []float64{1, 0.9, 0.8, 0.68}

func speeds(n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = heterogeneity[i%len(heterogeneity)]
	}
	return s
}

var mainStrategies = []string{"adaptive", "elastic", "sync", "crossbow"}

// adaptiveStudy holds one dataset's experiments.
type adaptiveStudy struct {
	*runner
	set    Set
	epochs float64 // the sync budget that sets each time budget
	lr     float64
	budget map[int]float64 // time budget per device count
	main   map[string]*engine.Result
}

func (s *adaptiveStudy) cfg(strat string, n int, lr float64) engine.Config {
	c := engine.Config{Strategy: strat, Devices: n, Batch: bmax, LR: lr,
		Optimizer: optim.Config{Name: "sgd"}, Speeds: speeds(n), Clock: engine.Virtual,
		EvalEvery: 0.5, Seed: s.opt.Seed, Cost: cost.Default(), Net: comm.DefaultModel, Noise: engine.DefaultNoise}
	switch strat {
	case "sync":
		// The papers' gradient aggregation keeps the global batch at b_max:
		// "the batch size is decreased proportionally to the number of GPUs".
		c.Batch = max(1, bmax/n)
	case "elastic":
		// The same merge frequency as Adaptive: a mega-batch of samples.
		c.Options = map[string]float64{"k": math.Ceil(float64(megaSmall) / float64(n))}
	case "adaptive":
		// The paper's perturbed weights, which need not sum to 1, and its
		// global momentum.
		c.Options = map[string]float64{"mega-batch": megaSmall, "renorm": 0, "gamma": 0.9}
	}
	if s.opt.Quick {
		c.EvalEvery = 0.25
	}
	return c
}

func (s *adaptiveStudy) name(parts ...any) string {
	n := s.set.Name
	for _, p := range parts {
		n += "-" + fmt.Sprint(p)
	}
	return slug(n)
}

// AdaptiveSGD reproduces the Adaptive SGD paper's experiments (§5) on each
// set and writes them into rep.
func AdaptiveSGD(ctx context.Context, rep *report.Dir, sets []Set, opt Options) error {
	r, err := newRunner(rep, opt)
	if err != nil {
		return err
	}
	rep.Printf(`# Adaptive SGD and its baselines

Reproduction of "Adaptive Elastic Training for Sparse Deep Learning on
Heterogeneous Multi-GPU Servers" (§5) with hetsgd's engines. Model: the
papers' sparse MLP, one hidden layer of 128 ReLU units, softmax
cross-entropy, plain SGD as the local update, no dropout. Devices run at
relative speeds %v (cycled), the paper's Fig. 1 spread. Unless a section says
otherwise the clock is virtual: gradients and merges are computed for real,
time comes from the cost model calibrated on this machine (%s), with 5%%
log-normal noise per batch, and a 10 µs / 10 GB/s network.

Settings, after §5.1: b_max = %d is the initial batch, b_min = b_max/8 = %d,
β = b_min/2 = %d, pert_thr = 0.1, δ = 0.1, γ = 0.9, and the perturbed
weights as printed, not rescaled to sum to 1 (--renorm 0). The mega-batch is %d
batches of b_max: the paper's 100 batches would be a whole epoch of our
largest set, while the paper's mega-batches were a fraction of an epoch and
it finds 20 or more batches fine (§5.2.2); the sensitivity section runs 4 to
100. Elastic SGD merges after the same number of samples (K = ⌈%d/n⌉ local
steps per device); gradient aggregation (sync) keeps the global batch at
b_max (per-device batch b_max/n), as the paper does for TensorFlow; CROSSBOW
synchronises every step with a = 1/n and momentum 0.9. The learning rate for
b_max is the best of a power-of-ten grid across all algorithms (§5.1). Every
algorithm gets the same time (§5.1): the time sync needs for %g epochs on the
same devices. Accuracy (P@1) is measured on the whole test set every half
epoch, at the next synchronisation, and its time is excluded.

`, heterogeneity, cost.Default().Source, bmax, bmin, beta, megaSmall, megaSmall, epochsFor(opt))
	for _, set := range sets {
		s := &adaptiveStudy{runner: r, set: set, epochs: epochsFor(opt), budget: map[int]float64{}, main: map[string]*engine.Result{}}
		if err := s.run(ctx); err != nil {
			return err
		}
	}
	return nil
}

func epochsFor(opt Options) float64 {
	if opt.Quick {
		return 2
	}
	return 30
}

func (s *adaptiveStudy) run(ctx context.Context) error {
	s.rep.Printf("## %s\n\n%s\n\n", s.set.Name, s.set.Note)
	for _, step := range []func(context.Context) error{s.grid, s.compare, s.fig12, s.realTime, s.scalability, s.sensitivity} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return nil
}

// grid picks the learning rate: powers of ten, 4 devices, every algorithm
// for half the epochs; the rate with the best P@1 of any algorithm wins.
func (s *adaptiveStudy) grid(ctx context.Context) error {
	rates := []float64{0.1, 1, 10}
	if s.opt.Quick {
		rates = []float64{1}
	}
	t := &report.Table{Header: []string{"learning rate"}}
	t.Header = append(t.Header, mainStrategies...)
	bestP, bestLR := -1.0, rates[0]
	for _, lr := range rates {
		row := []any{lr}
		for _, strat := range mainStrategies {
			c := s.cfg(strat, 4, lr)
			c.Epochs = s.epochs / 2
			res, err := s.runner.run(ctx, s.name("grid", strat, "lr", lr), s.set, c)
			if err != nil {
				return err
			}
			p := best(res).P1
			row = append(row, p)
			if p > bestP {
				bestP, bestLR = p, lr
			}
		}
		t.Add(row...)
	}
	s.lr = bestLR
	s.rep.Printf("### Learning rate\n\nBest P@1 with 4 devices over %g epochs, per learning rate for b_max; the best across algorithms, **%g**, is used below.\n\n", s.epochs/2, s.lr)
	s.rep.Table(t)
	return nil
}

// compare is the paper's Fig. 6 and 7: time-to-accuracy and statistical
// efficiency of the four strategies on 1, 2 and 4 devices, equal time each.
func (s *adaptiveStudy) compare(ctx context.Context) error {
	megaSamples := float64(megaSmall * bmax)
	s.rep.Printf("### Time to accuracy and statistical efficiency (Fig. 6, 7)\n\n")
	t := &report.Table{Header: []string{"devices", "strategy", "best P@1", "at s", "epochs run", "s to elastic's best", "× elastic's time", "samples/s"}}
	for _, n := range []int{1, 2, 4} {
		// sync sets the time budget: its run for the full epochs.
		c := s.cfg("sync", n, s.lr)
		c.Epochs = s.epochs
		syncRes, err := s.runner.run(ctx, s.name("compare", n, "sync"), s.set, c)
		if err != nil {
			return err
		}
		s.budget[n] = syncRes.TrainSeconds
		results := map[string]*engine.Result{"sync": syncRes}
		strategies := mainStrategies
		if n == 1 {
			// One device: every strategy is mini-batch SGD (tested bit for
			// bit), so one curve stands for all, as in the paper's Fig. 6.
			strategies = []string{"sync"}
		}
		for _, strat := range strategies {
			if strat == "sync" {
				continue
			}
			c := s.cfg(strat, n, s.lr)
			c.TimeBudget = s.budget[n]
			res, err := s.runner.run(ctx, s.name("compare", n, strat), s.set, c)
			if err != nil {
				return err
			}
			results[strat] = res
		}
		var timeS, megaS []report.Series
		elastic := results["elastic"]
		for _, strat := range strategies {
			res := results[strat]
			b := best(res)
			name := strat
			if n == 1 {
				name = "SGD (every strategy)"
			}
			toEl, ratio := math.NaN(), math.NaN()
			if elastic != nil {
				eb := best(elastic)
				toEl = timeTo(res, eb.P1)
				ratio = toEl / eb.TrainSeconds
			}
			t.Add(n, name, b.P1, b.TrainSeconds, float64(res.Samples)/float64(s.set.Train.Len()), toEl, ratio, float64(res.Samples)/res.TrainSeconds)
			x, y := timeCurve(res)
			timeS = append(timeS, report.Series{Name: name, X: x, Y: y})
			x, y = megaCurve(res, megaSamples)
			megaS = append(megaS, report.Series{Name: name, X: x, Y: y})
			if n == 4 {
				s.main[strat] = res
			}
			if n == 1 {
				s.main["single"] = res
			}
		}
		if err := s.rep.Figure(s.name("time", n), report.Plot{Title: fmt.Sprintf("%s, %d device(s): P@1 against time", s.set.Name, n), X: "training time (virtual seconds)", Y: "P@1", Series: timeS}); err != nil {
			return err
		}
		if err := s.rep.Figure(s.name("megabatches", n), report.Plot{Title: fmt.Sprintf("%s, %d device(s): P@1 against mega-batches", s.set.Name, n), X: fmt.Sprintf("mega-batches (%d samples each)", megaSmall*bmax), Y: "P@1", Series: megaS}); err != nil {
			return err
		}
	}
	s.rep.Table(t)
	s.claims()
	return nil
}

// claims states the bars for this set, measured.
func (s *adaptiveStudy) claims() {
	a, e := s.main["adaptive"], s.main["elastic"]
	if a == nil || e == nil {
		return
	}
	ab, eb := best(a), best(e)
	highest := true
	var others []string
	for _, strat := range mainStrategies {
		if p := best(s.main[strat]).P1; strat != "adaptive" {
			others = append(others, fmt.Sprintf("%s %.4f", strat, p))
			highest = highest && ab.P1 >= p
		}
	}
	toEl := timeTo(a, eb.P1)
	single := best(s.main["single"])
	toSingle := timeTo(a, single.P1)
	s.rep.Printf(`Claims on 4 devices:

- Adaptive reaches the highest P@1 of the four: %s — adaptive %.4f; %v.
- Adaptive reaches elastic's best P@1 (%.4f, at %.3f s) within 3/4 of elastic's time: %s — at %s s, %s× elastic's time.
- Adaptive on 4 devices reaches a P@1 no lower than one device (%.4f at %.3f s), and sooner: %s — best %.4f, reaches one device's best at %s s.

`, yesNo(highest), ab.P1, others, eb.P1, eb.TrainSeconds, yesNo(toEl <= 0.75*eb.TrainSeconds), report.Float(toEl), report.Float(toEl/eb.TrainSeconds),
		single.P1, single.TrainSeconds, yesNo(ab.P1 >= single.P1 && toSingle < single.TrainSeconds), ab.P1, report.Float(toSingle))
}

// fig12 shows the batch sizes per device across merges and how often
// perturbation fires, from the 4-device adaptive run.
func (s *adaptiveStudy) fig12(ctx context.Context) error {
	a := s.main["adaptive"]
	if a == nil || len(a.Merges) == 0 {
		return nil
	}
	series := make([]report.Series, len(a.Merges[0].BatchSizes))
	perturbed := 0
	for i, m := range a.Merges {
		for d, b := range m.BatchSizes {
			series[d].Name = fmt.Sprintf("device %d (speed %g)", d, heterogeneity[d%len(heterogeneity)])
			series[d].X = append(series[d].X, float64(i+1))
			series[d].Y = append(series[d].Y, float64(b))
		}
		if m.Perturbed {
			perturbed++
		}
	}
	s.rep.Printf("### Batch sizes and perturbation (Fig. 12)\n\n")
	if err := s.rep.Figure(s.name("batchsizes"), report.Plot{Title: s.set.Name + ", 4 devices: batch size per device across merges", X: "merge number", Y: "batch size (samples)", Series: series}); err != nil {
		return err
	}
	last := a.Merges[len(a.Merges)-1]
	s.rep.Printf("Perturbation fired at %d of %d merges (%.0f%%). Last merge: batch sizes %v, updates %v, weights %s.\n\n",
		perturbed, len(a.Merges), 100*float64(perturbed)/float64(len(a.Merges)), last.BatchSizes, last.Updates, fmtWeights(last.Weights))
	return nil
}

func fmtWeights(w []float64) string {
	s := "["
	for i, v := range w {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%.3f", v)
	}
	return s + "]"
}

// realTime runs the comparison on 2 and 4 devices in real time: device
// goroutines sharing this machine's cores, slowdown injected.
func (s *adaptiveStudy) realTime(ctx context.Context) error {
	budget := 8.0
	if s.opt.Quick {
		budget = 0.5
	}
	s.rep.Printf("### Real time\n\nThe same comparison with the real-time engine: one goroutine per device on this machine's %s, each device's batches stretched to its relative speed; every strategy gets %g s of training (evaluation excluded). With more devices than cores the devices also slow each other down, as GPUs sharing a host do not; the ranking, not the absolute speed-up, is the point.\n\n", coresNote(), budget)
	t := &report.Table{Header: []string{"devices", "strategy", "best P@1", "at s", "epochs run", "s to elastic's best", "samples/s"}}
	for _, n := range []int{2, 4} {
		results := map[string]*engine.Result{}
		var series []report.Series
		for _, strat := range mainStrategies {
			c := s.cfg(strat, n, s.lr)
			c.Clock = engine.Real
			c.TimeBudget = budget
			res, err := s.runner.run(ctx, s.name("real", n, strat), s.set, c)
			if err != nil {
				return err
			}
			results[strat] = res
			x, y := timeCurve(res)
			series = append(series, report.Series{Name: strat, X: x, Y: y})
		}
		eb := best(results["elastic"])
		for _, strat := range mainStrategies {
			res := results[strat]
			b := best(res)
			t.Add(n, strat, b.P1, b.TrainSeconds, float64(res.Samples)/float64(s.set.Train.Len()), timeTo(res, eb.P1), float64(res.Samples)/res.TrainSeconds)
		}
		if err := s.rep.Figure(s.name("real", n), report.Plot{Title: fmt.Sprintf("%s, %d devices: P@1 against real time", s.set.Name, n), X: "training time (wall-clock seconds, evaluation excluded)", Y: "P@1", Series: series}); err != nil {
			return err
		}
	}
	s.rep.Table(t)
	return nil
}

// scalability is the paper's Fig. 8: adaptive on 1 to 16 devices, the same
// number of epochs each.
func (s *adaptiveStudy) scalability(ctx context.Context) error {
	counts := []int{1, 2, 4, 8, 16}
	if s.opt.Quick {
		counts = []int{1, 2}
	}
	s.rep.Printf("### Scalability (Fig. 8)\n\nAdaptive SGD on 1 to 16 devices (speeds cycling %v), %g epochs each.\n\n", heterogeneity, s.epochs)
	t := &report.Table{Header: []string{"devices", "best P@1", "at s", "s to one device's best", "speed-up to it", "merges"}}
	var timeS, megaS []report.Series
	var one *engine.Result
	for _, n := range counts {
		c := s.cfg("adaptive", n, s.lr)
		c.Epochs = s.epochs
		res, err := s.runner.run(ctx, s.name("scale", n), s.set, c)
		if err != nil {
			return err
		}
		if n == 1 {
			one = res
		}
		b, ob := best(res), best(one)
		to := timeTo(res, ob.P1)
		t.Add(n, b.P1, b.TrainSeconds, to, ob.TrainSeconds/to, len(res.Merges))
		x, y := timeCurve(res)
		timeS = append(timeS, report.Series{Name: fmt.Sprintf("%d devices", n), X: x, Y: y})
		x, y = megaCurve(res, float64(megaSmall*bmax))
		megaS = append(megaS, report.Series{Name: fmt.Sprintf("%d devices", n), X: x, Y: y})
	}
	s.rep.Table(t)
	if err := s.rep.Figure(s.name("scale-time"), report.Plot{Title: s.set.Name + ": adaptive, P@1 against time", X: "training time (virtual seconds, log scale)", Y: "P@1", Series: timeS, LogX: true}); err != nil {
		return err
	}
	return s.rep.Figure(s.name("scale-mega"), report.Plot{Title: s.set.Name + ": adaptive, P@1 against mega-batches", X: fmt.Sprintf("mega-batches (%d samples each)", megaSmall*bmax), Y: "P@1", Series: megaS})
}

// sensitivity is Fig. 9–11: one parameter at a time around the defaults,
// on 4 devices with the 4-device time budget.
func (s *adaptiveStudy) sensitivity(ctx context.Context) error {
	params := []struct {
		name, option, fig string
		values            []float64
	}{
		{"mega-batch (batches)", "mega-batch", "9", []float64{4, 10, 20, 50, 100}},
		{"initial batch size", "binit", "10a", []float64{bmax, bmax / 2, bmin}},
		{"β", "beta", "10b", []float64{beta / 2, beta, 2 * beta}},
		{"pert_thr", "pert-thr", "11a", []float64{0.05, 0.1, 0.15}},
		{"δ", "delta", "11b", []float64{0.05, 0.1, 0.2}},
	}
	if s.opt.Quick {
		params = params[:1]
		params[0].values = []float64{4, 20}
	}
	s.rep.Printf("### Sensitivity (Fig. 9–11)\n\nOne parameter at a time around the defaults, 4 devices, the 4-device time budget (%.3g s).\n\n", s.budget[4])
	t := &report.Table{Header: []string{"parameter", "value", "best P@1", "at s", "s to elastic's best", "merges", "perturbed"}}
	eb := best(s.main["elastic"])
	for _, p := range params {
		var series []report.Series
		for _, v := range p.values {
			c := s.cfg("adaptive", 4, s.lr)
			c.TimeBudget = s.budget[4]
			c.Options[p.option] = v
			res, err := s.runner.run(ctx, s.name("sens", p.option, v), s.set, c)
			if err != nil {
				return err
			}
			pert := 0
			for _, m := range res.Merges {
				if m.Perturbed {
					pert++
				}
			}
			b := best(res)
			t.Add(p.name, v, b.P1, b.TrainSeconds, timeTo(res, eb.P1), len(res.Merges), pert)
			x, y := timeCurve(res)
			series = append(series, report.Series{Name: fmt.Sprintf("%s = %g", p.option, v), X: x, Y: y})
		}
		if err := s.rep.Figure(s.name("sens", p.option), report.Plot{Title: fmt.Sprintf("%s, 4 devices: P@1 against time by %s (Fig. %s)", s.set.Name, p.option, p.fig), X: "training time (virtual seconds)", Y: "P@1", Series: series}); err != nil {
			return err
		}
	}
	s.rep.Table(t)
	return nil
}

func coresNote() string { return fmt.Sprintf("%d CPU cores", numCPU()) }
