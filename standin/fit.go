package standin

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/progress/stage"
	"github.com/hetsgd/hetsgd/sparse"
)

// Options tunes Fit.
type Options struct {
	// TestPoints is the size of the stand-in's test split (0: a quarter of
	// the training points, at least 8).
	TestPoints int
	// Seed seeds the generated samples the searches compare with the real
	// set (0 is a seed like any other).
	Seed uint64
	// Log, when set, receives a line per step of the searches.
	Log io.Writer
	// Test, when set, is the real set's test split: the signal is then
	// matched on the regression's P@1 on it rather than on a fifth of
	// the training split, so that the stand-in carries any difference
	// between the real set's splits (see Fit).
	Test *data.Dataset
	// Learn, when set, is the default model's learning curve on a set:
	// its P@1 on test after each of epochs epochs on train, trained with
	// seed (train.LearningCurve). The fit then matches how fast and how
	// far a stand-in's model learns, besides the regression (see Fit).
	Learn func(ctx context.Context, train, test *data.Dataset, epochs int, seed uint64) ([]float64, error)
	// Progress, when set, is told of the fit's stages as they go: the
	// set's measures, the concentration's search, the anchors, the
	// regression on the set, the prototypes' size, the signal's search
	// and, with Learn, the learning curves and the speed model's search
	// (each with its steps or runs, so that it can tell the time left).
	Progress stage.Reporter
	// Check, when set, is given the stand-in once its dimensions, points
	// and per-point counts are measured, before the searches (its knobs
	// not yet fitted): an error ends the fit. A caller that will write
	// the stand-in's sets checks that they fit on the disk, rather than
	// learn it after the fit.
	Check func(*data.StandIn) error
}

// Constants of the fit's samples and searches.
const (
	// fitSamplePoints bounds the sample the signal is matched on, and
	// fitSampleEntries the regression's work per pass (points × features
	// × labels, the labels at most 1024): a second or so.
	fitSamplePoints  = 20000
	fitSampleEntries = 256 << 20
	// fitMinPoints is the fewest points the sample holds when the set has
	// them; the regression scores fewer labels (proxyLabels) to afford
	// them. Before, 871 points of Delicious-200K's stand-in (301
	// features a point, 1,024 labels scored) taught the regression
	// nothing beyond the most frequent label at any signal.
	fitMinPoints = 5000
	// proxyMaxLabels is the most labels the regression scores.
	proxyMaxLabels = 1024
	// prototypeShrink is the factor by which the fit shrinks prototypes
	// that are too diffuse, one step at a time. Halving them went too
	// far: Delicious's stand-in fell from 19 features to 9, at which even
	// its topics' prototypes alone (signal 0) outscored the real set, and
	// which of the two a seed got decided the fit.
	prototypeShrink = 0.85
	// targetOrders is the number of orders of the real set's rows the
	// regression's P@1 is averaged over, since it is measured once: one
	// order's P@1 spreads by about 0.01 (Delicious 0.644 to 0.650 over
	// three orders).
	targetOrders = 3
	// streamProxy, mixed into the fit's seed, seeds the regression's
	// orders of rows.
	streamProxy = 0x960c5
	// searchSteps is the number of bisection steps of each search: the
	// interval shrinks 2^searchSteps times, well below the statistics'
	// sampling noise.
	searchSteps = 12
)

// Fit measures d and returns the parameters of a stand-in that
// reproduces it: what data.MeasureStandIn reads off it and its anchors
// (data.Anchors, on a sample of at most fitSamplePoints points); then the
// parameters that cannot be read off the data, by bisections on generated
// samples of the real set's size:
//
//   - Concentration, matched on the co-occurrence (mean log lift of the
//     label pairs that occur together, see data.Summary);
//   - Signal, matched on the P@1 of a softmax regression trained by SGD
//     for ten passes, in a seeded random order, on four fifths of a
//     sample of at most fitSamplePoints points (the real set's P@1 the
//     mean over targetOrders orders) and scored on the rest, or, when
//     opt.Test holds the real set's test split, on that: the stand-in
//     draws its test split like its training split, so a real set whose
//     test split is harder than its training split (Delicious: 0.647
//     against 0.676) would otherwise get a stand-in whose models score
//     higher than the real set's do. A one-pass scorer (cosine to the
//     labels' centroids) was tried first: stand-ins that matched it
//     trained to P@1s 0.08 apart, since it rewards prototypes that a
//     trained model does not; the regression's P@1 follows the trained
//     model's across stand-ins within about 0.03. When even signal 1
//     falls short of the real set's, the prototypes shrink by
//     prototypeShrink until it does not (Delicious, some seeds: 19
//     features to 16).
//   - With opt.Learn, how fast and how far the default model learns
//     (fitSpeed): its P@1 after one epoch and its best of data.LateEpochs,
//     on the real set and on the stand-in. When the first epochs
//     differ by more than data.SpeedTolerance or the best by more than
//     data.LateTolerance, the speed model replaces the fit if it comes
//     closer: TopicShare matched on the first epoch and, at each
//     TopicShare, Vague and Signal (one knob, ease) on the best.
//     The regression's P@1 does not follow a trained network's first
//     epoch (Delicious's stand-ins learn it up to 0.06 more slowly than
//     the set at the regression's P@1 of the set), nor the network's
//     best once the topic share moves, so the network itself is trained:
//     at each TopicShare 10 bisection steps of two 10-epoch runs.
//
// The fit reads d and never changes it.
func Fit(ctx context.Context, d *data.Dataset, opt Options) (*data.StandIn, error) {
	logf := func(format string, args ...any) {
		if opt.Log != nil {
			fmt.Fprintf(opt.Log, format+"\n", args...)
		}
	}
	rep := stage.Or(opt.Progress)
	rep.Stage("measuring the set", 0, "")
	s, err := data.MeasureStandIn(d, opt.TestPoints)
	if err != nil {
		return nil, err
	}
	measured := *s.Real
	if opt.Check != nil {
		if err := opt.Check(s); err != nil {
			return nil, err
		}
	}

	// Concentration: the co-occurrence grows with it.
	coN := measured.CoOccurrencePoints
	co := func(c float64) (float64, error) {
		t := *s
		t.Concentration = c
		t.Train = max(t.Train, coN)
		return t.Generator(opt.Seed).CoOccurrence(coN), nil
	}
	rep.Stage("concentration search", searchSteps, "steps")
	steps := 0
	if s.Concentration, err = bisect(ctx, 0, 0.97, measured.CoOccurrence, co, func(c, v float64) {
		logf("fit %s: concentration %.4f: co-occurrence %.4f (real %.4f)", d.Name, c, v, measured.CoOccurrence)
		steps++
		rep.Update(float64(steps), fmt.Sprintf("concentration %.4f: co-occurrence %.4f (set's %.4f)", c, v, measured.CoOccurrence))
	}); err != nil {
		return nil, fmt.Errorf("standin: fitting a stand-in to %s: %w", d.Name, err)
	}

	// Anchors: read off the set.
	rep.Stage("anchors", 0, "")
	K := proxyLabels(d)
	sample := sampleOf(d, K)
	s.Anchors, measured.AnchoredLabels, measured.AnchorRecall = data.Anchors(sample)
	if s.Anchors != nil {
		logf("fit %s: anchors on %.1f%% of the labels, recall %.4f a label", d.Name, 100*measured.AnchoredLabels, measured.AnchorRecall)
	}

	// Signal: the scorer's P@1 grows with it from the middle of the range
	// up. Below, it need not: on Delicious it falls from 0.636 at signal 0
	// (the topics' prototypes alone name a point's topic) to about 0.59
	// at 0.25–0.5, then climbs to 0.667 at 1. The search's first step,
	// at 0.5, lands in that trough, so a target above it is sought on the
	// rising side. The real set's P@1 is measured once, so it is averaged
	// over targetOrders orders of its rows.
	rep.Stage("regression on the set", targetOrders, "runs")
	for k := range targetOrders {
		v, err := proxyP1(ctx, sample, opt.Test, K, data.Mix(opt.Seed^streamProxy, uint64(k)))
		if err != nil {
			return nil, fmt.Errorf("standin: fitting a stand-in to %s: %w", d.Name, err)
		}
		measured.ProxyP1 += v / targetOrders
		rep.Update(float64(k+1), fmt.Sprintf("P@1 %.4f", v))
	}
	s.Real = &measured
	g := s.Generator(opt.Seed)
	p1 := func(sig float64) (float64, error) {
		t := *s
		t.Signal = sig
		return proxyP1(ctx, g.Sample(&t, sample.Len(), 0), nil, K, opt.Seed^streamProxy)
	}
	// When even features drawn only from the labels' prototypes do not
	// identify the labels as well as the real set's, the prototypes are
	// too diffuse: shrink them until they do.
	rep.Stage("prototype size", 0, "steps")
	for tries := 1; s.PrototypeSize > 2; tries++ {
		v, err := p1(1)
		if err != nil {
			return nil, fmt.Errorf("standin: fitting a stand-in to %s: %w", d.Name, err)
		}
		logf("fit %s: prototypes of %d features, signal 1: proxy P@1 %.4f (real %.4f)", d.Name, s.PrototypeSize, v, measured.ProxyP1)
		rep.Update(float64(tries), fmt.Sprintf("%d features at signal 1: P@1 %.4f (set's %.4f)", s.PrototypeSize, v, measured.ProxyP1))
		if v >= measured.ProxyP1 {
			break
		}
		s.PrototypeSize = min(s.PrototypeSize-1, int(float64(s.PrototypeSize)*prototypeShrink))
	}
	rep.Stage("signal search", searchSteps, "steps")
	steps = 0
	if s.Signal, err = bisect(ctx, 0, 1, measured.ProxyP1, p1, func(sig, v float64) {
		s.ProxyP1 = v // the last step's is within 2^-searchSteps of the fitted signal
		logf("fit %s: signal %.4f: proxy P@1 %.4f (real %.4f)", d.Name, sig, v, measured.ProxyP1)
		steps++
		rep.Update(float64(steps), fmt.Sprintf("signal %.4f: P@1 %.4f (set's %.4f)", sig, v, measured.ProxyP1))
	}); err != nil {
		return nil, fmt.Errorf("standin: fitting a stand-in to %s: %w", d.Name, err)
	}
	if opt.Learn != nil {
		if s, err = fitSpeed(ctx, s, g, sample, K, opt, rep, logf); err != nil {
			return nil, fmt.Errorf("standin: fitting a stand-in to %s: %w", d.Name, err)
		}
	}
	return s, nil
}

// bisect returns the x in [lo, hi] at which the increasing function f
// reaches target (an end when it does not get there), calling step after
// each evaluation; it stops at f's error or when ctx ends.
func bisect(ctx context.Context, lo, hi, target float64, f func(float64) (float64, error), step func(x, v float64)) (float64, error) {
	return bisectSteps(ctx, lo, hi, target, searchSteps, f, step)
}

// bisectSteps is bisect with the given number of steps.
func bisectSteps(ctx context.Context, lo, hi, target float64, steps int, f func(float64) (float64, error), step func(x, v float64)) (float64, error) {
	for range steps {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		mid := (lo + hi) / 2
		v, err := f(mid)
		if err != nil {
			return 0, err
		}
		step(mid, v)
		if v < target {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2, nil
}

// sampleOf returns d, or evenly spaced rows of it when it has more than
// fitSamplePoints points or more than fitSampleEntries of the
// regression's work per pass over the labels it scores (proxyLabels).
func sampleOf(d *data.Dataset, labels int) *data.Dataset {
	N := d.Len()
	per := float64(d.X.NNZ()) / float64(N) * float64(labels)
	return d.Spaced(min(N, fitSamplePoints, max(50, int(fitSampleEntries/math.Max(per, 1)))), d.Name+" sample")
}

// proxyLabels returns how many of d's most frequent labels the fit's
// regression scores: proxyMaxLabels, or fewer (at least 64) when d's
// points have so many features that fitSampleEntries would otherwise
// cover fewer than fitMinPoints of them.
func proxyLabels(d *data.Dataset) int {
	perPoint := math.Max(1, float64(d.X.NNZ())/float64(max(1, d.Len())))
	return max(1, min(d.Labels(), proxyMaxLabels, max(64, int(fitSampleEntries/(fitMinPoints*perPoint)))))
}

// FitPath returns the stand-in that path names: a stand-in file (".json",
// as data.StandIn.WriteJSON writes it) read back, or one fitted to the
// data l.LoadAny reads there: a folder's or bundled set's training split
// (its test split sizes the stand-in's), or a single file. The stand-in
// is named after the last element of path. It stops with l.Context's
// error when that ends.
func FitPath(l data.Loader, path string, opt Options) (*data.StandIn, error) {
	if strings.EqualFold(filepath.Ext(path), ".json") {
		return data.LoadStandIn(path)
	}
	stage.Or(opt.Progress).Stage("reading "+path, 0, "")
	sets, err := l.LoadAny(path)
	if err != nil {
		return nil, err
	}
	if len(sets) == 2 {
		if opt.TestPoints == 0 {
			opt.TestPoints = sets[1].Len()
		}
		if opt.Test == nil {
			opt.Test = sets[1]
		}
	}
	ctx := l.Context
	if ctx == nil {
		ctx = context.Background()
	}
	s, err := Fit(ctx, sets[0], opt)
	if err != nil {
		return nil, err
	}
	s.Name = strings.TrimPrefix(filepath.Base(filepath.Clean(path)), "bundled:")
	return s, nil
}

// Constants of the speed fit (Options.Learn).
const (
	// speedSignal is the least signal of the speed model: most of a
	// point's features come from its topics' prototypes, which identify
	// its labels quickly, and vague points cap the best.
	speedSignal = 0.1
	// realSeeds, speedSeeds and lateSeeds are the training seeds the real
	// set's curve, a stand-in's speed and its late P@1 inside the search
	// are averaged over: one run's P@1 after an epoch spreads over
	// training seeds by about 0.012 on Delicious and 0.025 on its
	// stand-ins, its best by 0.002 to 0.003 on the real sets.
	realSeeds  = 5
	speedSeeds = 3
	lateSeeds  = 2
	// speedSteps and easeSteps are the bisection steps of the topic
	// share's search and of the ease's inside each of its steps. Bibtex's
	// best P@1 rises by 0.02 a 0.01 of signal near its fit: 2^-10 of
	// the ease is 0.0018 of signal.
	speedSteps = 7
	easeSteps  = 10
	// speedMaxLabels is the most labels the speed runs train on: a set
	// with more is trained on its most frequent ones, as the regression
	// scores them, so that a run costs seconds whatever the label count.
	speedMaxLabels = 1024
)

// ease sets the speed model's difficulty from one number in [0, 1] that
// makes the set easier as it grows: below 1/2 the vague share falls from
// 1 to 0 at signal speedSignal; above, the signal rises from speedSignal
// to 1 with no vague points.
func ease(t *data.StandIn, e float64) {
	if e < 0.5 {
		t.Signal, t.Vague = speedSignal, 1-2*e
	} else {
		t.Signal, t.Vague = speedSignal+(2*e-1)*(1-speedSignal), 0
	}
}

// fitSpeed measures the learning curves of the real set and of the
// stand-in s fitted without them; when their first epochs differ by more
// than data.SpeedTolerance or their best P@1s of data.LateEpochs epochs by more
// than data.LateTolerance, it fits a stand-in of the speed model (the topic
// share matched on the first epoch's P@1 and, at each topic share, the
// ease on the best) and returns it if it misses the two by less, counted
// in tolerances. Otherwise it returns s, its curve recorded.
func fitSpeed(ctx context.Context, s *data.StandIn, g *data.Generator, sample *data.Dataset, K int, opt Options, rep stage.Reporter, logf func(string, ...any)) (*data.StandIn, error) {
	realTrain, realTest := sample, opt.Test
	if realTest == nil {
		realTrain, realTest = fifths(sample)
	} else {
		// At most fitSamplePoints of the test split, spread evenly (one
		// label counted: only the points bound the sample here).
		realTest = sampleOf(realTest, 1)
	}
	// curve is the mean over seeds of the P@1 after epoch 1 and of the
	// best P@1 of epochs epochs.
	runs := 0 // of the stage, reported after each
	curve := func(train, test *data.Dataset, epochs, seeds int) (first, best float64, err error) {
		train, test = topLabels(train, test, speedMaxLabels)
		for k := range seeds {
			p, err := opt.Learn(ctx, train, test, epochs, uint64(k+1))
			if err != nil {
				return 0, 0, err
			}
			if len(p) == 0 {
				return 0, 0, fmt.Errorf("no P@1 from %d epochs of training", epochs)
			}
			first += p[0] / float64(seeds)
			best += slices.Max(p) / float64(seeds)
			runs++
			rep.Update(float64(runs), "")
		}
		return first, best, nil
	}
	// standIn is the curve of t's samples, drawn as the real set's were
	// split.
	standIn := func(t *data.StandIn, epochs, seeds int) (first, best float64, err error) {
		var train, test *data.Dataset
		if opt.Test != nil {
			train, test = g.Sample(t, realTrain.Len(), 0), g.Sample(t, realTest.Len(), 1)
		} else {
			train, test = fifths(g.Sample(t, sample.Len(), 0))
		}
		return curve(train, test, epochs, seeds)
	}
	rep.Stage("learning curves", realSeeds+speedSeeds, "runs")
	rep.Update(0, fmt.Sprintf("the set's, %d epochs", data.LateEpochs))
	speed, late, err := curve(realTrain, realTest, data.LateEpochs, realSeeds)
	if err != nil {
		return nil, err
	}
	s.Real.Speed, s.Real.Late = speed, late
	rep.Update(float64(runs), fmt.Sprintf("the stand-in's, %d epochs", data.LateEpochs))
	if s.Speed, s.Late, err = standIn(s, data.LateEpochs, speedSeeds); err != nil {
		return nil, err
	}
	logf("fit %s: P@1 after epoch 1 and best of %d: %.4f and %.4f; the stand-in's %.4f and %.4f", s.Name, data.LateEpochs, speed, late, s.Speed, s.Late)
	// miss is how far a stand-in's two figures lie from the set's, in
	// tolerances.
	miss := func(t *data.StandIn) float64 {
		return max(math.Abs(t.Speed-speed)/data.SpeedTolerance, math.Abs(t.Late-late)/data.LateTolerance)
	}
	if miss(s) <= 1 {
		return s, nil
	}
	// The search trains speedSteps × (easeSteps × lateSeeds + speedSeeds)
	// runs: most of the fit's time.
	rep.Stage("speed model search", speedSteps*(easeSteps*lateSeeds+speedSeeds), "runs")
	runs = 0
	var last data.StandIn
	step := func(ts float64) (float64, error) {
		t := *s
		t.TopicShare = ts
		e, err := bisectSteps(ctx, 0, 1, late, easeSteps, func(e float64) (float64, error) {
			u := t
			ease(&u, e)
			_, v, err := standIn(&u, data.LateEpochs, lateSeeds)
			return v, err
		}, func(e, v float64) {
			u := t
			ease(&u, e)
			logf("fit %s: topic share %.4f, signal %.4f, vague %.4f: best P@1 of %d epochs %.4f (real %.4f)", s.Name, ts, u.Signal, u.Vague, data.LateEpochs, v, late)
			rep.Update(float64(runs), fmt.Sprintf("topic share %.3f, ease %.3f: best P@1 %.4f (set's %.4f)", ts, e, v, late))
		})
		if err != nil {
			return 0, err
		}
		ease(&t, e)
		if t.Speed, t.Late, err = standIn(&t, data.LateEpochs, speedSeeds); err != nil {
			return 0, err
		}
		t.ProxyP1 = 0 // measured below, for the pair kept
		last = t
		return t.Speed, nil
	}
	if _, err = bisectSteps(ctx, 0, 1, speed, speedSteps, step, func(ts, v float64) {
		logf("fit %s: topic share %.4f, signal %.4f, vague %.4f: P@1 after epoch 1 %.4f (real %.4f)", s.Name, ts, last.Signal, last.Vague, v, speed)
	}); err != nil {
		return nil, err
	}
	if miss(&last) < miss(s) {
		if last.ProxyP1, err = proxyP1(ctx, g.Sample(&last, sample.Len(), 0), nil, K, opt.Seed^streamProxy); err != nil {
			return nil, err
		}
		logf("fit %s: the speed model: topic share %.4f, signal %.4f, vague %.4f; proxy P@1 %.4f (real %.4f)", s.Name, last.TopicShare, last.Signal, last.Vague, last.ProxyP1, s.Real.ProxyP1)
		return &last, nil
	}
	logf("fit %s: the speed model got no closer (P@1 after epoch 1 %.4f, best of %d epochs %.4f): kept the fit without it", s.Name, last.Speed, data.LateEpochs, last.Late)
	return s, nil
}

// heldOut says whether row i of a set is in its held-out fifth (every
// fifth row, from the first): what the regression scores on when there is
// no test split, and what fifths leaves out.
func heldOut(i int) bool { return i%5 == 0 }

// fifths splits d into four fifths to train on and a fifth to score on,
// as the regression does (heldOut).
func fifths(d *data.Dataset) (train, test *data.Dataset) {
	var a, b []int32
	for i := range d.Len() {
		if heldOut(i) {
			b = append(b, int32(i))
		} else {
			a = append(a, int32(i))
		}
	}
	return d.Pick(a, d.Name+" training four fifths"), d.Pick(b, d.Name+" held-out fifth")
}

// topLabels returns train and test with only train's K most frequent
// labels, numbered by frequency rank (ties by id), or the two as they are
// when they have at most K labels. The features are shared, not copied.
func topLabels(train, test *data.Dataset, K int) (*data.Dataset, *data.Dataset) {
	L := train.Labels()
	if L <= K {
		return train, test
	}
	counts := make([]int, L)
	for _, l := range train.Y.Indices {
		counts[l]++
	}
	_, slot := rankSlots(counts, K)
	keep := func(d *data.Dataset) *data.Dataset {
		r := &data.Dataset{Name: d.Name, X: d.X}
		r.Y = sparse.CSR{Rows: d.Len(), Cols: K, Indptr: make([]int64, 1, d.Len()+1)}
		for i := range d.Len() {
			labels, _ := d.Y.Row(i)
			first := len(r.Y.Indices)
			for _, l := range labels {
				if int(l) < L && slot[l] >= 0 {
					r.Y.Indices = append(r.Y.Indices, slot[l])
				}
			}
			slices.Sort(r.Y.Indices[first:])
			r.Y.Indptr = append(r.Y.Indptr, int64(len(r.Y.Indices)))
		}
		return r
	}
	return keep(train), keep(test)
}
