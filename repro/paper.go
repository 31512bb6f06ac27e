package repro

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/hetsgd/hetsgd/cost"
	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/report"
	"github.com/hetsgd/hetsgd/workload"
)

// The paper-scale study's budgets. Half an epoch of the Amazon-670K
// stand-in is 245,000 samples, about two minutes of the sampled output
// layer on one device of two cores; but sync sums every replica's whole
// gradient (412 MB) and CROSSBOW averages every replica's whole model at
// every step, so the study's eight runs of a set take hours. The dense
// layer would take half an hour an epoch per run, so the study trains the
// sampled layer; the claims are about how the strategies merge, which the
// output layer does not change.
const (
	paperEpochs     = 0.5
	paperEvals      = 10   // evaluations per paperEpochs
	paperEvalPoints = 4000 // test points per evaluation (the sets' 153,025 and 100,095 would take minutes each)
)

// PaperParts are the sections of the paper study: adaptive on 1 to 8
// devices (Fig. 8); sync, adaptive and elastic on 4 devices for equal time
// with adaptive's batch sizes (Fig. 6 and 12); and CROSSBOW in that
// section. CROSSBOW is a part of its own so that the equal-time claims can
// be read against sync and elastic without it: at its default τ = 1 it
// averages every replica's whole model at every step, the
// study's costliest step (about a second on two cores for the Amazon-670K
// stand-in's 412 MB model); naming it runs the equal-time section with it.
var PaperParts = []string{"scaling", "equal-time", "crossbow"}

// paperCounts are the device counts of the scaling section (the paper's
// Fig. 8 runs 1 to 8 GPUs).
var paperCounts = []int{1, 2, 4, 8}

// Paper re-runs the Adaptive SGD paper's large experiments on the stand-ins
// of its sets at full scale (data.PaperStandIn): the four strategies at
// their defaults on 4 devices at the paper's speeds for equal time (its
// Fig. 6), adaptive on 1 to 8 devices for equal epochs (Fig. 8), and
// adaptive's batch sizes across merges (Fig. 12); and it says of each claim
// whether it holds here. Every run trains the sampled output layer at its
// defaults under the virtual clock, so that the study repeats byte for
// byte on any machine.
func Paper(ctx context.Context, rep *report.Dir, sets []Set, opt Options) error {
	r, err := newRunner(rep, opt)
	if err != nil {
		return err
	}
	epochs := paperEpochs
	if opt.Quick {
		epochs = 1
	}
	rep.Printf(`# The papers' large experiments at full scale

Adaptive SGD's experiments (§5: Fig. 6, 8 and 12) on the stand-ins of the
paper's sets built from their published statistics (hetsgd data gen --like
amazon-670k, --like delicious-200k). Every strategy runs at its defaults, as
hetsgd train runs it when only the strategy is named (hetsgd strategies -v),
with the tool's network (hidden layer %v, dropout %g) and the sampled output
layer at its defaults (--output lsh): the dense layer would take half an hour
an epoch on two cores, and the claims are about how the strategies merge,
which the output layer does not change. Virtual clock with the shipped cost
model (%s), 5%% log-normal noise per batch, a 10 µs / 10 GB/s network, the
paper's speeds %v cycled over the devices. P@1 on %d test points every
%g epochs (%d times in the budget). One seed (%d): the runs of one set take
hours here.

The budget is %g epochs, not the paper's tens: the claims are read early in
training, where the strategies differ most in time to accuracy.

`, workload.DefaultHidden(), workload.DefaultDropout, cost.Default().Source, heterogeneity, paperEvalPoints,
		epochs/paperEvals, paperEvals, opt.Seed, epochs)
	for _, set := range sets {
		x, ok := set.Workload.(*workload.XML)
		if !ok {
			return fmt.Errorf("repro: paper: %s is not an XML set", set.Name)
		}
		w, err := workload.NewXML(x.Train, x.Test, workload.DefaultHidden(), workload.DefaultDropout, paperEvalPoints, 256)
		if err != nil {
			return err
		}
		if err := w.SetSampling(workload.DefaultSampling()); err != nil {
			return err
		}
		h := &heteroStudy{runner: r, set: set, w: w, epochs: epochs, seeds: []uint64{opt.Seed}, done: map[string]*engine.Result{}, prefix: "paper"}
		s := &paperStudy{heteroStudy: h, floor: headFloor(w, paperEvalPoints)}
		if err := s.run(ctx); err != nil {
			return err
		}
	}
	return nil
}

// paperStudy is one set's runs of the paper study: the heterogeneity
// study's runner and tables, on the sampled layer, one seed, the study's
// budget.
type paperStudy struct {
	*heteroStudy
	// floor is the P@1 of always predicting the training set's most
	// frequent label, on the test points the study evaluates: a run whose
	// best is not learnMargin above it has learnt nothing a claim can be
	// read on.
	floor float64
}

// learnMargin is how far above the floor a run's best P@1 must be for the
// run to count as learning: 2.5 standard errors of a P@1 near 0.4 on the
// study's 4,000 test points. Without it a claim would be read at the floor
// itself, which a run that predicts one label for every point reaches in
// its first evaluation.
const learnMargin = 0.02

// headFloor is the P@1 of always predicting w's most frequent training
// label, on the first n test points (those an evaluation scores).
func headFloor(w *workload.XML, n int) float64 {
	y := &w.Train.Y
	count := make([]int, w.Train.Labels())
	for _, k := range y.Indices[:y.Indptr[y.Rows]] {
		count[k]++
	}
	head := 0
	for k, c := range count {
		if c > count[head] {
			head = k
		}
	}
	n = min(n, w.Test.Len())
	hits := 0
	for i := range n {
		labels, _ := w.Test.Y.Row(i)
		if slices.Contains(labels, int32(head)) {
			hits++
		}
	}
	return float64(hits) / float64(max(n, 1))
}

// target is the level a claim is read at: the lowest of the bests that
// clear the floor by learnMargin, a level every run that learnt reaches;
// ok is false when none does.
func target(bests []float64, floor float64) (t float64, ok bool) {
	t = math.Inf(1)
	for _, b := range bests {
		if b >= floor+learnMargin {
			t, ok = min(t, b), true
		}
	}
	return t, ok
}

func (s *paperStudy) cfg(strat string, n int) engine.Config {
	c := s.heteroStudy.cfg(strat, speeds(n), s.seeds[0])
	c.EvalEvery = s.epochs / paperEvals
	return c
}

func (s *paperStudy) run(ctx context.Context) error {
	s.rep.Printf("## %s\n\n%s\n\nAlways predicting the most frequent training label scores P@1 %.4f on the evaluated test points (the floor); a run counts as learning when its best is at least %g above it, and each claim is read at a level above the floor.\n\n", s.set.Name, s.set.Note, s.floor, learnMargin)
	// The scaling section first: its runs average whole models only at
	// merges, where the equal-time section's sync and CROSSBOW do at every
	// step, so a study stopped part way has the most claims read.
	part := partsOf(PaperParts, s.opt.Parts)
	if part("scaling") {
		if err := s.scaling(ctx); err != nil {
			return err
		}
	}
	if !part("equal-time") && !part("crossbow") {
		return nil
	}
	adaptive, err := s.equalTime(ctx, part("crossbow"))
	if err != nil {
		return err
	}
	return s.fig12(adaptive)
}

// equalTime is Fig. 6: the four strategies (CROSSBOW only when crossbow
// is set) on 4 devices, each for the time sync needs for the budget's
// epochs. It returns adaptive's run.
func (s *paperStudy) equalTime(ctx context.Context, crossbow bool) (*engine.Result, error) {
	c := s.cfg("sync", 4)
	c.Epochs = s.epochs
	b, err := s.do(ctx, s.name(4, "sync"), c)
	if err != nil {
		return nil, err
	}
	runs := map[string][]*engine.Result{"sync": {b}}
	for _, strat := range mainStrategies {
		if strat == "sync" || strat == "crossbow" && !crossbow {
			continue
		}
		c := s.cfg(strat, 4)
		c.TimeBudget = b.TrainSeconds
		res, err := s.do(ctx, s.name(4, strat), c)
		if err != nil {
			return nil, err
		}
		runs[strat] = []*engine.Result{res}
	}
	s.rep.Printf("### 4 devices, equal time (Fig. 6)\n\nEach strategy for sync's time for %g epochs (%.1f virtual s).\n\n", s.epochs, b.TrainSeconds)
	if !crossbow {
		s.rep.Printf("CROSSBOW was left out (--parts without crossbow): the claims below are read against the other three.\n\n")
	}
	t, series := compareTable(runs, s.set.Train.Len())
	s.rep.Table(t)
	s.rep.Printf("%s%s\n", verdict(runs), firstTo(runs, s.floor))
	err = s.rep.Figure(s.name(4, "time"), report.Plot{Title: fmt.Sprintf("%s, 4 devices at speeds %v: P@1 against time", s.set.Name, heterogeneity),
		X: "training time (virtual seconds)", Y: "P@1", Series: series})
	return runs["adaptive"][0], err
}

// firstTo states claim (a) on one table: which strategy first reaches the
// lowest of the best P@1 of the strategies that learnt (target), a level
// every one of them reaches.
func firstTo(runs map[string][]*engine.Result, floor float64) string {
	var ran []string
	var bests []float64
	for _, strat := range mainStrategies {
		if len(runs[strat]) > 0 {
			ran = append(ran, strat)
			bests = append(bests, best(runs[strat][0]).P1)
		}
	}
	level, ok := target(bests, floor)
	if !ok {
		return fmt.Sprintf("- Adaptive is the first to reach a given P@1: cannot be read (no strategy's best is %g above the floor, %.4f).\n", learnMargin, floor)
	}
	first, at := "", math.Inf(1)
	var times []string
	for _, strat := range ran {
		t := timeTo(runs[strat][0], level)
		if math.IsNaN(t) {
			times = append(times, strat+" never")
			continue
		}
		times = append(times, fmt.Sprintf("%s %s s", strat, report.Float(t)))
		if t < at {
			first, at = strat, t
		}
	}
	return fmt.Sprintf("- Adaptive is the first to reach P@1 %.4f, the lowest of the bests above the floor: %s (%s).\n", level, yesNo(first == "adaptive"), strings.Join(times, ", "))
}

// fig12 is the paper's Fig. 12 from the 4-device adaptive run: batch sizes
// and updates per device across merges, and how often perturbation fired.
func (s *paperStudy) fig12(a *engine.Result) error {
	if a == nil || len(a.Merges) == 0 {
		return nil
	}
	perturbed := 0
	for _, m := range a.Merges {
		if m.Perturbed {
			perturbed++
		}
	}
	// The band: each device's batch sizes over the second half of the
	// merges, once the scaling has had half the run to settle.
	late := a.Merges[len(a.Merges)/2:]
	var band []string
	for d := range late[0].BatchSizes {
		lo, hi := math.MaxInt, 0
		for _, m := range late {
			lo, hi = min(lo, m.BatchSizes[d]), max(hi, m.BatchSizes[d])
		}
		band = append(band, fmt.Sprintf("device %d (speed %g): %d–%d", d, heterogeneity[d%len(heterogeneity)], lo, hi))
	}
	s.rep.Printf("### Batch sizes and perturbation (Fig. 12)\n\nFrom the 4-device adaptive run above: perturbation fired at %d of %d merges (%.0f%%). Batch sizes over the second half of the merges: %s.\n\n",
		perturbed, len(a.Merges), 100*float64(perturbed)/float64(len(a.Merges)), strings.Join(band, "; "))
	return s.heteroStudy.fig12(scenarios[0], a)
}

// scaling is Fig. 8: adaptive on 1 to 8 devices for the budget's epochs
// each. Claim (c), fewer mega-batches as devices are added, is read at
// the lowest of their best P@1 above the floor (target), a level every
// count that learnt reaches.
func (s *paperStudy) scaling(ctx context.Context) error {
	results := make([]*engine.Result, len(paperCounts))
	for i, n := range paperCounts {
		c := s.cfg("adaptive", n)
		c.Epochs = s.epochs
		res, err := s.do(ctx, s.name("scale", n), c)
		if err != nil {
			return err
		}
		results[i] = res
	}
	bests := make([]float64, len(results))
	for i, res := range results {
		bests[i] = best(res).P1
	}
	level, learnt := target(bests, s.floor)
	goal := fmt.Sprintf("The target is the lowest of the bests above the floor, %.4f; a count whose best is not above the floor never reaches it.", level)
	if !learnt {
		goal = "No count's best is above the floor: there is no target."
	}
	s.rep.Printf("### 1 to 8 devices (Fig. 8)\n\nAdaptive SGD on 1 to 8 devices, %g epochs each. A mega-batch is the samples between two merges; one device never merges, and its column counts mega-batches of the 2-device run's size. %s\n\n", s.epochs, goal)
	t := &report.Table{Header: []string{"devices", "best P@1", "at s", "samples a mega-batch", "mega-batches to the target", "s to the target", "merges"}}
	var timeS, megaS []report.Series
	mega := make([]float64, len(results))
	var size float64
	for i := len(results) - 1; i >= 0; i-- {
		if m := megaSamples(results[i]); m > 0 {
			size = m // one device: the next count's
		}
		mega[i] = size
	}
	var toTarget []float64
	for i, res := range results {
		n := paperCounts[i]
		b := best(res)
		at, samples := math.NaN(), math.NaN()
		for _, e := range res.Evals {
			if e.P1 >= level {
				at, samples = e.TrainSeconds, float64(e.Samples)
				break
			}
		}
		t.Add(n, b.P1, b.TrainSeconds, mega[i], samples/mega[i], at, len(res.Merges))
		if math.IsNaN(samples) {
			samples = math.Inf(1) // never: more than any count that gets there
		}
		toTarget = append(toTarget, samples/mega[i])
		tx, ty := timeCurve(res)
		mx, my := megaCurve(res, mega[i])
		timeS = append(timeS, report.Series{Name: fmt.Sprintf("%d devices", n), X: tx, Y: ty})
		megaS = append(megaS, report.Series{Name: fmt.Sprintf("%d devices", n), X: mx, Y: my})
	}
	s.rep.Table(t)
	fewer := true
	for i := 1; i < len(toTarget); i++ {
		fewer = fewer && toTarget[i] <= toTarget[i-1]
	}
	fewer = fewer && toTarget[len(toTarget)-1] < toTarget[0]
	if learnt {
		s.rep.Printf("- Fewer mega-batches to the target as devices are added (never more, and fewer on 8 than on 1): %s.\n\n", yesNo(fewer))
	} else {
		s.rep.Printf("- Fewer mega-batches to the target as devices are added: cannot be read (no count's best is %g above the floor, %.4f).\n\n", learnMargin, s.floor)
	}
	if err := s.rep.Figure(s.name("scale", "time"), report.Plot{Title: s.set.Name + ": adaptive on 1 to 8 devices, P@1 against time", X: "training time (virtual seconds, log scale)", Y: "P@1", Series: timeS, LogX: true}); err != nil {
		return err
	}
	return s.rep.Figure(s.name("scale", "mega"), report.Plot{Title: s.set.Name + ": adaptive on 1 to 8 devices, P@1 against mega-batches", X: "mega-batches", Y: "P@1", Series: megaS})
}

// megaSamples is the samples of a run's first mega-batch: what its devices
// processed between the start and the first merge (0: no merge).
func megaSamples(res *engine.Result) float64 {
	if len(res.Merges) == 0 {
		return 0
	}
	m := res.Merges[0]
	total := 0
	for d, b := range m.BatchSizes {
		total += b * m.Updates[d]
	}
	return float64(total)
}
