package repro

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/cost"
	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/optim"
	"github.com/hetsgd/hetsgd/report"
	"github.com/hetsgd/hetsgd/runlog"
	"github.com/hetsgd/hetsgd/workload"
)

// A scenario is how the devices differ in speed.
type scenario struct {
	name, about string
	speeds      []float64
	slowdown    bool // device 0 slows down 4× at half the time budget
}

var scenarios = []scenario{
	{"paper", "the Adaptive SGD paper's spread (its Fig. 1: up to 32%)", []float64{1, 0.9, 0.8, 0.68}, false},
	{"wide", "a wider spread: a device 10× slower than the fastest", []float64{1, 0.5, 0.25, 0.1}, false},
	{"slowdown", "the paper's spread, and the fastest device slows down 4× at half-time, as a shared GPU does", []float64{1, 0.9, 0.8, 0.68}, true},
}

// heteroStudy holds one dataset's runs of the heterogeneity study.
type heteroStudy struct {
	*runner
	set    Set
	w      engine.Workload // the set under the tool's default network
	epochs float64         // sync's budget, which sets the time budget
	seeds  []uint64
	done   map[string]*engine.Result // by name: a run two sections share runs once
	prefix string                    // of its runs' and figures' names ("": "hetero")
}

// Heterogeneity measures every strategy at its defaults — what hetsgd train
// runs when only the strategy is named — on devices of unequal speed, under
// the virtual clock: three spreads of speed (one of them changing mid-run)
// over several seeds, the same at a learning rate shared by every strategy
// and at each one's own best, 1 to 16 devices, and Adaptive SGD's batch
// sizes and updates per device across merges (the paper's Fig. 12).
func Heterogeneity(ctx context.Context, rep *report.Dir, sets []Set, opt Options) error {
	r, err := newRunner(rep, opt)
	if err != nil {
		return err
	}
	seeds := []uint64{opt.Seed, opt.Seed + 1, opt.Seed + 2}
	if opt.Quick {
		seeds = seeds[:1]
	}
	rep.Printf(`# Heterogeneous devices: every strategy at its defaults

Sync, Elastic SGD, CROSSBOW and Adaptive SGD as hetsgd train runs them when
only the strategy is named: each strategy's own optimizer, learning rate and
batch (hetsgd strategies -v), the tool's network (hidden layer %v, dropout
%g), 4 devices unless a section says otherwise. Virtual clock with the
shipped cost model (%s), 5%% log-normal noise per batch, a 10 µs / 10 GB/s
network. Every strategy gets the same time: the time sync needs for %g epochs
on the same devices. P@1 on the whole test set every half epoch. Figures are
means over seeds %v, evaluation by evaluation; "best" is the best of that
mean curve, and "time to elastic's best" the first evaluation where the mean
curve reaches elastic's, over elastic's own time to it.

Speeds:
%s
`, workload.DefaultHidden(), workload.DefaultDropout, cost.Default().Source, epochsFor(opt), seeds, scenarioList())
	for _, set := range sets {
		x, ok := set.Workload.(*workload.XML)
		if !ok {
			return fmt.Errorf("repro: heterogeneity: %s is not an XML set", set.Name)
		}
		w, err := workload.NewXML(x.Train, x.Test, workload.DefaultHidden(), workload.DefaultDropout, 0, 256)
		if err != nil {
			return err
		}
		s := &heteroStudy{runner: r, set: set, w: w, epochs: epochsFor(opt), seeds: seeds, done: map[string]*engine.Result{}}
		if err := s.run(ctx); err != nil {
			return err
		}
	}
	return nil
}

func scenarioList() string {
	var b strings.Builder
	for _, sc := range scenarios {
		fmt.Fprintf(&b, "- %s: %v, %s.\n", sc.name, sc.speeds, sc.about)
	}
	return b.String()
}

// HeterogeneityParts are the sections of the heterogeneity study, in the
// order they run: the three spreads of speed, the two protocols, 1 to 16
// devices, and the Local-SGD strategies beyond the papers against Adaptive
// SGD on 4 and 16 devices.
var HeterogeneityParts = []string{"spreads", "protocols", "devices", "local"}

// localStrategies are the section "local"'s: DiLoCo, Streaming DiLoCo and
// asynchronous Local-SGD (whose dynamic local updates scale each device's
// work to its speed, as Adaptive SGD scales its batch) against the
// model-averaging and synchronous baselines.
var localStrategies = []string{"adaptive", "elastic", "sync", "diloco", "streaming-diloco", "async-local"}

func (s *heteroStudy) run(ctx context.Context) error {
	s.rep.Printf("## %s\n\n%s\n\n", s.set.Name, s.set.Note)
	spreads := func(ctx context.Context) error {
		for _, sc := range scenarios {
			if err := s.scenario(ctx, sc); err != nil {
				return err
			}
		}
		return nil
	}
	part := partsOf(HeterogeneityParts, s.opt.Parts)
	for i, step := range []func(context.Context) error{spreads, s.protocols, s.devices, s.local} {
		if !part(HeterogeneityParts[i]) {
			continue
		}
		if err := step(ctx); err != nil {
			return err
		}
	}
	return nil
}

// cfg is strategy strat at its defaults on the given speeds.
func (s *heteroStudy) cfg(strat string, speeds []float64, seed uint64) engine.Config {
	return engine.Config{Strategy: strat, Devices: len(speeds), Speeds: speeds, Clock: engine.Virtual,
		EvalEvery: 0.5, Seed: seed, Cost: cost.Default(), Net: comm.DefaultModel, Noise: engine.DefaultNoise}
}

// do runs cfg on the study's workload, once per name.
func (s *heteroStudy) do(ctx context.Context, name string, cfg engine.Config) (*engine.Result, error) {
	if res, ok := s.done[name]; ok {
		return res, nil
	}
	set := s.set
	set.Workload = s.w
	res, err := s.runner.run(ctx, name, set, cfg)
	if err == nil {
		s.done[name] = res
	}
	return res, err
}

// name is the run's name, seed last.
func (s *heteroStudy) name(parts ...any) string {
	p := s.prefix
	if p == "" {
		p = "hetero"
	}
	n := p + "-" + s.set.Name
	for _, p := range parts {
		n += "-" + fmt.Sprint(p)
	}
	return slug(n)
}

// budget is sync's time for the study's epochs on speeds, at seed.
func (s *heteroStudy) budget(ctx context.Context, prefix string, speeds []float64, seed uint64) (*engine.Result, error) {
	c := s.cfg("sync", speeds, seed)
	c.Epochs = s.epochs
	return s.do(ctx, s.name(prefix, "sync", "s", seed), c)
}

// scenario runs the four strategies on one spread of speeds, over the seeds.
func (s *heteroStudy) scenario(ctx context.Context, sc scenario) error {
	runs := map[string][]*engine.Result{}
	for _, seed := range s.seeds {
		// The slowdown's budget is the paper spread's: the time is the
		// same, and part of it is lost to the slow device.
		prefix := sc.name
		if sc.slowdown {
			prefix = scenarios[0].name
		}
		b, err := s.budget(ctx, prefix, sc.speeds, seed)
		if err != nil {
			return err
		}
		if !sc.slowdown {
			runs["sync"] = append(runs["sync"], b)
		}
		for _, strat := range mainStrategies {
			if strat == "sync" && !sc.slowdown {
				continue
			}
			c := s.cfg(strat, sc.speeds, seed)
			c.TimeBudget = b.TrainSeconds
			if sc.slowdown {
				c.Faults = []engine.Fault{{Device: 0, At: b.TrainSeconds / 2, Kind: engine.Slow, Factor: 4}}
			}
			res, err := s.do(ctx, s.name(sc.name, strat, "s", seed), c)
			if err != nil {
				return err
			}
			runs[strat] = append(runs[strat], res)
		}
	}
	s.rep.Printf("### %s: %v\n\n", sc.name, sc.speeds)
	if sc.slowdown {
		s.rep.Printf("Device 0 (speed 1) slows down 4× at half the time budget.\n\n")
	}
	t, series := compareTable(runs, s.set.Train.Len())
	s.rep.Table(t)
	s.rep.Printf("%s\n", verdict(runs))
	if err := s.rep.Figure(s.name(sc.name, "time"), report.Plot{Title: fmt.Sprintf("%s, %s speeds %v: P@1 against time, mean of %d seeds", s.set.Name, sc.name, sc.speeds, len(s.seeds)),
		X: "training time (virtual seconds)", Y: "P@1", Series: series}); err != nil {
		return err
	}
	if sc.name != "paper" {
		return s.fig12(sc, runs["adaptive"][0])
	}
	return nil
}

// meanCurve is P@1 against time averaged over runs, evaluation by
// evaluation (the runs' evaluations fall at the same sample counts; their
// times differ by the noise), as far as the shortest run goes.
func meanCurve(runs []*engine.Result) []runlog.Eval {
	n := math.MaxInt
	for _, r := range runs {
		n = min(n, len(r.Evals))
	}
	out := make([]runlog.Eval, 0, n)
	for i := 0; i < n; i++ {
		var e runlog.Eval
		for _, r := range runs {
			e.TrainSeconds += r.Evals[i].TrainSeconds / float64(len(runs))
			e.P1 += r.Evals[i].P1 / float64(len(runs))
			e.Epoch += r.Evals[i].Epoch / float64(len(runs))
		}
		out = append(out, e)
	}
	return out
}

// compareTable is the scenario's table and figure series: each strategy's
// best mean P@1, its spread over seeds, and its time to elastic's best.
func compareTable(runs map[string][]*engine.Result, points int) (*report.Table, []report.Series) {
	return compareTableOf(mainStrategies, runs, points)
}

// compareTableOf is compareTable over the given strategies, in their order.
func compareTableOf(strategies []string, runs map[string][]*engine.Result, points int) (*report.Table, []report.Series) {
	t := &report.Table{Header: []string{"strategy", "best P@1 (mean)", "seeds' bests", "at s", "epochs run", "s to elastic's best", "× elastic's time"}}
	eb, _ := runlog.Best(meanCurve(runs["elastic"]))
	var series []report.Series
	for _, strat := range strategies {
		rs := runs[strat]
		if len(rs) == 0 {
			continue
		}
		m := meanCurve(rs)
		b, _ := runlog.Best(m)
		var bests []string
		epochs := 0.0
		for _, r := range rs {
			bests = append(bests, fmt.Sprintf("%.4f", best(r).P1))
			epochs += float64(r.Samples) / float64(points) / float64(len(rs))
		}
		to, ok := runlog.TimeTo(m, eb.P1)
		if !ok {
			to = math.NaN() // never: the table writes –
		}
		t.Add(strat, b.P1, strings.Join(bests, " "), b.TrainSeconds, epochs, to, to/eb.TrainSeconds)
		var x, y []float64
		for _, e := range m {
			x, y = append(x, e.TrainSeconds), append(y, e.P1)
		}
		series = append(series, report.Series{Name: strat, X: x, Y: y})
	}
	return t, series
}

// verdict states the bars on one table: adaptive's best the highest
// of the four, and elastic's best reached within 3/4 of elastic's time.
func verdict(runs map[string][]*engine.Result) string {
	a, e := meanCurve(runs["adaptive"]), meanCurve(runs["elastic"])
	ab, _ := runlog.Best(a)
	eb, _ := runlog.Best(e)
	highest := true
	var others []string
	for _, strat := range mainStrategies {
		if strat == "adaptive" || len(runs[strat]) == 0 {
			continue
		}
		b, _ := runlog.Best(meanCurve(runs[strat]))
		others = append(others, fmt.Sprintf("%s %.4f", strat, b.P1))
		highest = highest && ab.P1 > b.P1
	}
	to, ok := runlog.TimeTo(a, eb.P1)
	when := "never"
	if ok {
		when = report.Float(to/eb.TrainSeconds) + "× elastic's time"
	}
	return fmt.Sprintf("- Adaptive's best P@1 is the highest of the %s: %s (adaptive %.4f; %s).\n- Adaptive reaches elastic's best (%.4f at %.3f s) within 3/4 of elastic's time: %s (%s).\n",
		count(1+len(others)), yesNo(highest), ab.P1, strings.Join(others, ", "), eb.P1, eb.TrainSeconds, yesNo(ok && to <= 0.75*eb.TrainSeconds), when)
}

// fig12 draws adaptive's batch size and updates per device against the
// merge number (the paper's Fig. 12).
func (s *heteroStudy) fig12(sc scenario, a *engine.Result) error {
	if a == nil || len(a.Merges) == 0 {
		return nil
	}
	n := len(a.Merges[0].BatchSizes)
	batches, updates := make([]report.Series, n), make([]report.Series, n)
	for d := range n {
		batches[d].Name = fmt.Sprintf("device %d (speed %g)", d, sc.speeds[d])
		updates[d].Name = batches[d].Name
	}
	for i, m := range a.Merges {
		for d := range n {
			batches[d].X, batches[d].Y = append(batches[d].X, float64(i+1)), append(batches[d].Y, float64(m.BatchSizes[d]))
			updates[d].X, updates[d].Y = append(updates[d].X, float64(i+1)), append(updates[d].Y, float64(m.Updates[d]))
		}
	}
	last := a.Merges[len(a.Merges)-1]
	s.rep.Printf("Adaptive SGD's last merge (seed %d): batch sizes %v, updates %v, weights %s.\n\n", s.seeds[0], last.BatchSizes, last.Updates, fmtWeights(last.Weights))
	if err := s.rep.Figure(s.name(sc.name, "batch"), report.Plot{Title: fmt.Sprintf("%s, %s speeds: adaptive's batch size per device across merges (Fig. 12)", s.set.Name, sc.name),
		X: "merge number", Y: "batch size (samples)", Series: batches}); err != nil {
		return err
	}
	return s.rep.Figure(s.name(sc.name, "updates"), report.Plot{Title: fmt.Sprintf("%s, %s speeds: adaptive's updates per device per merge (Fig. 12)", s.set.Name, sc.name),
		X: "merge number", Y: "updates (batches) in the mega-batch", Series: updates})
}

// protocols compares the strategies on the paper's spread, first seed, at
// one learning rate shared by all (Adam, the best of a grid for any of
// them) and each at its own best (its default rate ×0.5, ×1, ×2).
func (s *heteroStudy) protocols(ctx context.Context) error {
	sc, seed := scenarios[0], s.seeds[0]
	b, err := s.budget(ctx, sc.name, sc.speeds, seed)
	if err != nil {
		return err
	}
	// at runs strat with optimizer o at rate lr (o's zero value: the
	// strategy's defaults).
	at := func(strat string, o optim.Config, lr float64) (*engine.Result, error) {
		c := s.cfg(strat, sc.speeds, seed)
		c.TimeBudget = b.TrainSeconds
		c.Optimizer, c.LR = o, lr
		name := s.name("protocol", strat, o.Name, "lr", lr, "s", seed)
		if o.Name == "" {
			name = s.name(sc.name, strat, "s", seed) // the scenario's run
			if strat == "sync" {
				return b, nil
			}
		}
		return s.do(ctx, name, c)
	}
	shared := []float64{1e-3, 3.16e-3, 1e-2}
	factors := []float64{0.5, 1, 2}
	if s.opt.Quick {
		shared, factors = shared[1:2], factors[1:2]
	}
	t := &report.Table{Header: []string{"strategy", "defaults", "own best", "at its rate", "one rate for all (Adam)"}}
	sharedBest := map[float64]map[string]float64{}
	for _, lr := range shared {
		sharedBest[lr] = map[string]float64{}
		for _, strat := range mainStrategies {
			res, err := at(strat, optim.Config{Name: "adam"}, lr)
			if err != nil {
				return err
			}
			sharedBest[lr][strat] = best(res).P1
		}
	}
	// The shared rate is the one with the best P@1 of any strategy.
	bestLR, top := shared[0], -1.0
	for _, lr := range shared {
		for _, p := range sharedBest[lr] {
			if p > top {
				bestLR, top = lr, p
			}
		}
	}
	for _, strat := range mainStrategies {
		def, err := at(strat, optim.Config{}, 0)
		if err != nil {
			return err
		}
		full, err := s.cfg(strat, sc.speeds, seed).WithDefaults()
		if err != nil {
			return err
		}
		own, ownLR := best(def).P1, full.LR
		for _, f := range factors {
			if f == 1 {
				continue
			}
			res, err := at(strat, full.Optimizer, f*full.LR)
			if err != nil {
				return err
			}
			if p := best(res).P1; p > own {
				own, ownLR = p, f*full.LR
			}
		}
		t.Add(strat, best(def).P1, own, fmt.Sprintf("%s %s", full.Optimizer.Name, report.Float(ownLR)), sharedBest[bestLR][strat])
	}
	s.rep.Printf("### Protocols: defaults, each at its own best, one rate for all\n\n"+
		"The paper's spread, seed %d, sync's %g-epoch time. Own best: the strategy's optimizer at its default rate ×%v. "+
		"One rate for all: every strategy with Adam at the rate of %v where any of them does best (%s).\n\n",
		seed, s.epochs, factors, shared, report.Float(bestLR))
	s.rep.Table(t)
	return nil
}

// devices runs adaptive and elastic on 1 to 16 devices (the paper's speeds
// cycled) over the seeds. One device runs the study's epochs, which gives
// the target, its best P@1, and its time to it; every other count runs for
// twice that time, so that it can reach the target however many epochs it
// takes (a fixed number of epochs would stop more devices sooner, before a
// model averaged over more replicas has taken as many steps).
func (s *heteroStudy) devices(ctx context.Context) error {
	counts := []int{1, 2, 4, 8, 16}
	if s.opt.Quick {
		counts = []int{1, 2}
	}
	type key struct {
		n     int
		strat string
	}
	to := map[key][]float64{}    // time to one device's best, per seed
	bests := map[key][]float64{} // best P@1, per seed
	ones := make([]runlog.Eval, len(s.seeds))
	var series []report.Series
	for k, seed := range s.seeds {
		for _, n := range counts {
			for _, strat := range []string{"adaptive", "elastic"} {
				if n == 1 && strat == "elastic" {
					continue // one device: every strategy is mini-batch SGD
				}
				c := s.cfg(strat, speeds(n), seed)
				if n == 1 {
					c.Epochs = s.epochs
				} else {
					c.TimeBudget = 2 * ones[k].TrainSeconds
				}
				res, err := s.do(ctx, s.name("devices", n, strat, "s", seed), c)
				if err != nil {
					return err
				}
				if n == 1 {
					ones[k] = best(res)
				}
				id := key{n, strat}
				to[id] = append(to[id], timeTo(res, ones[k].P1))
				bests[id] = append(bests[id], best(res).P1)
				if strat == "adaptive" && k == 0 {
					x, y := timeCurve(res)
					series = append(series, report.Series{Name: fmt.Sprintf("%d devices", n), X: x, Y: y})
				}
			}
		}
	}
	t := &report.Table{Header: []string{"devices", "strategy", "best P@1, mean", "s to one device's best, per seed", "speed-up to it, per seed"}}
	for _, n := range counts {
		for _, strat := range []string{"adaptive", "elastic"} {
			id := key{n, strat}
			if len(to[id]) == 0 {
				continue
			}
			var times, ups []string
			for k, v := range to[id] {
				times = append(times, report.Float(v))
				ups = append(ups, report.Float(ones[k].TrainSeconds/v))
			}
			sum := 0.0
			for _, b := range bests[id] {
				sum += b
			}
			t.Add(n, strat, sum/float64(len(bests[id])), strings.Join(times, ", "), strings.Join(ups, ", "))
		}
	}
	var targets []string
	for _, o := range ones {
		targets = append(targets, fmt.Sprintf("%.4f at %.3f s", o.P1, o.TrainSeconds))
	}
	s.rep.Printf("### 1 to 16 devices\n\nAdaptive and elastic at their defaults, speeds %v cycled, seeds %v. "+
		"One device runs %g epochs; its best P@1 is the target (per seed: %s), and every other count runs for twice one device's time to it. "+
		"–: not within that time.\n\n",
		heterogeneity, s.seeds, s.epochs, strings.Join(targets, "; "))
	s.rep.Table(t)
	if len(to[key{8, "adaptive"}]) > 0 {
		sooner := 0
		for k, v := range to[key{8, "adaptive"}] {
			if v < to[key{4, "adaptive"}][k] || (!math.IsNaN(v) && math.IsNaN(to[key{4, "adaptive"}][k])) {
				sooner++
			}
		}
		s.rep.Printf("Adaptive SGD on 8 devices reaches one device's best sooner than on 4 in %d of %d seeds.\n\n", sooner, len(s.seeds))
	}
	return s.rep.Figure(s.name("devices"), report.Plot{Title: fmt.Sprintf("%s: adaptive on 1 to 16 devices, P@1 against time, seed %d", s.set.Name, s.seeds[0]),
		X: "training time (virtual seconds, log scale)", Y: "P@1", Series: series, LogX: true})
}

// local runs localStrategies at their defaults on 4 and 16 devices at the
// paper's spread (cycled), each for the time sync needs for the study's
// epochs on the same devices, over the seeds: do DiLoCo or asynchronous
// Local-SGD beat Adaptive SGD where devices differ in speed?
func (s *heteroStudy) local(ctx context.Context) error {
	counts := []int{4, 16}
	if s.opt.Quick {
		counts = []int{4}
	}
	for _, n := range counts {
		sp := speeds(n)
		runs := map[string][]*engine.Result{}
		for _, seed := range s.seeds {
			b, err := s.budget(ctx, fmt.Sprintf("local%d", n), sp, seed)
			if err != nil {
				return err
			}
			runs["sync"] = append(runs["sync"], b)
			for _, strat := range localStrategies {
				if strat == "sync" {
					continue
				}
				c := s.cfg(strat, sp, seed)
				c.TimeBudget = b.TrainSeconds
				res, err := s.do(ctx, s.name("local", n, strat, "s", seed), c)
				if err != nil {
					return err
				}
				runs[strat] = append(runs[strat], res)
			}
		}
		s.rep.Printf("### Local-SGD strategies, %d devices at the paper's spread\n\n"+
			"DiLoCo, Streaming DiLoCo and asynchronous Local-SGD at their defaults against Adaptive SGD, elastic and sync, speeds %v, "+
			"each for sync's time for %g epochs, seeds %v.\n\n", n, sp, s.epochs, s.seeds)
		t, series := compareTableOf(localStrategies, runs, s.set.Train.Len())
		s.rep.Table(t)
		ab, _ := runlog.Best(meanCurve(runs["adaptive"]))
		for _, strat := range []string{"diloco", "streaming-diloco", "async-local"} {
			b, _ := runlog.Best(meanCurve(runs[strat]))
			verdict := "level with"
			switch {
			case b.P1 > ab.P1:
				verdict = "above"
			case b.P1 < ab.P1:
				verdict = "below"
			}
			s.rep.Printf("- %s: best mean P@1 %.4f, %s Adaptive SGD's %.4f (%+.4f).\n", strat, b.P1, verdict, ab.P1, b.P1-ab.P1)
		}
		s.rep.Printf("\n")
		if err := s.rep.Figure(s.name("local", n, "time"), report.Plot{Title: fmt.Sprintf("%s, %d devices at the paper's spread: P@1 against time, mean of %d seeds", s.set.Name, n, len(s.seeds)),
			X: "training time (virtual seconds)", Y: "P@1", Series: series}); err != nil {
			return err
		}
	}
	return nil
}
