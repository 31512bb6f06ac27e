package data

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hetsgd/hetsgd/progress/stage"
	"github.com/hetsgd/hetsgd/sparse"
)

// FitOptions tunes FitStandIn.
type FitOptions struct {
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
	// between the real set's splits (see FitStandIn).
	Test *Dataset
	// Learn, when set, is the default model's learning curve on a set:
	// its P@1 on test after each of epochs epochs on train, trained with
	// seed (train.LearningCurve). The fit then matches how fast and how
	// far a stand-in's model learns, besides the regression (see
	// FitStandIn).
	Learn func(ctx context.Context, train, test *Dataset, epochs int, seed uint64) ([]float64, error)
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
	Check func(*StandIn) error
}

// Constants of the model that the fit does not search (see the package
// documentation for why).
const (
	// topicShare is the chance that a feature not drawn from a label's
	// prototype comes from a topic's.
	topicShare = 0.3
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
	// An anchor of a label is a feature on at least anchorMinPoints
	// points, at least anchorPrecision of them carrying the label. Fewer
	// points would count chance: a rare label's prototype holds rare
	// features that, on a dozen points, all carry the label.
	anchorMinPoints = 50
	anchorPrecision = 0.9
)

// FitStandIn measures d and returns the parameters of a stand-in that
// reproduces it: its dimensions and points, the distributions of labels and
// features per point (quantiles), its label and feature frequency curves,
// its row norms and its anchors (the features on at least anchorMinPoints
// points of a sample of at most fitSamplePoints, at least anchorPrecision
// of them carrying one label, are that label's anchors; the anchor chance
// of a band of ranks is the mean share of its labels' points that hold
// their anchor); then the parameters that cannot be read off the data, by
// bisections on generated samples of the real set's size:
//
//   - Concentration, matched on the co-occurrence (mean log lift of the
//     label pairs that occur together, see Summary);
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
//     (fitSpeed): its P@1 after one epoch and its best of lateEpochs,
//     on the real set and on the stand-in. When the first epochs
//     differ by more than speedTolerance or the best by more than
//     lateTolerance, the speed model replaces the fit if it comes
//     closer: TopicShare matched on the first epoch and, at each
//     TopicShare, Vague and Signal (one knob, ease) on the best.
//     The regression's P@1 does not follow a trained network's first
//     epoch (Delicious's stand-ins learn it up to 0.06 more slowly than
//     the set at the regression's P@1 of the set), nor the network's
//     best once the topic share moves, so the network itself is trained:
//     at each TopicShare 10 bisection steps of two 10-epoch runs.
//
// The number of topics and the prototype size follow from the set's
// label count, labels per point and features per point (see the package
// documentation). The fit reads d and never changes it.
func FitStandIn(ctx context.Context, d *Dataset, opt FitOptions) (*StandIn, error) {
	N, D, L := d.Len(), d.Features(), d.Labels()
	if N < 20 || D < 1 || L < 2 {
		return nil, fmt.Errorf("data: fitting a stand-in to %s: %d points, %d features and %d labels; need at least 20, 1 and 2", d.Name, N, D, L)
	}
	// The generator holds a few words per label and feature: refuse
	// dimensions that the data does not come near (a header's claim).
	for _, m := range []*sparse.CSR{&d.X, &d.Y} {
		if int64(m.Cols) > max(1<<24, 64*int64(len(m.Indices))) {
			return nil, fmt.Errorf("data: fitting a stand-in to %s: %d columns for %d entries; the header's dimension is not that of the data", d.Name, m.Cols, len(m.Indices))
		}
	}
	logf := func(format string, args ...any) {
		if opt.Log != nil {
			fmt.Fprintf(opt.Log, format+"\n", args...)
		}
	}
	rep := stage.Or(opt.Progress)
	rep.Stage("measuring the set", 0, "")
	s := &StandIn{Name: d.Name, Train: N, Test: opt.TestPoints, Features: D, Labels: L, Calibration: CalibrateLogShare}
	if s.Test <= 0 {
		s.Test = max(8, N/4)
	}
	nl, nf := make([]int, N), make([]int, N)
	for i := range N {
		nl[i], nf[i] = d.Y.RowNNZ(i), d.X.RowNNZ(i)
	}
	s.LabelsPerPoint, s.FeaturesPerPoint = quantilesOf(nl), quantilesOf(nf)
	s.LabelCurve = curveOf(sortedCounts(d.Y.Indices, L), N)
	s.FeatureCurve = curveOf(sortedCounts(d.X.Indices, D), N)
	s.RowNorm = rowNorm(d)
	avgLabels, avgFeatures := meanOf(nl), meanOf(nf)
	// Topics hold about four times a point's labels (at least 8), so that
	// a point with a high concentration can still find its labels in one
	// or two of them; prototypes hold about a point's features (8 to
	// 256, at most a quarter of the features), so that a few labels
	// account for a point's features.
	s.Topics = max(1, int(math.Round(float64(L)/math.Max(8, 4*avgLabels))))
	s.PrototypeSize = max(1, min(D/4, max(8, min(256, int(math.Round(avgFeatures))))))
	s.TopicShare = topicShare
	measured := Summarize(d, 0)
	s.Real = &measured
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
		g := newStandInGen(&t, opt.Seed)
		sum := newSummer(L, coN)
		var labels []int32
		for i := range coN {
			r := rand.New(rand.NewPCG(opt.Seed, mix(1, uint64(i))))
			labels = g.drawLabels(r, labels[:0], drawQuantile(t.LabelsPerPoint, r.Float64()))
			sum.add(labels, 0)
		}
		return sum.coOccurrence(), nil
	}
	var err error
	rep.Stage("concentration search", searchSteps, "steps")
	steps := 0
	if s.Concentration, err = bisect(ctx, 0, 0.97, measured.CoOccurrence, co, func(c, v float64) {
		logf("fit %s: concentration %.4f: co-occurrence %.4f (real %.4f)", d.Name, c, v, measured.CoOccurrence)
		steps++
		rep.Update(float64(steps), fmt.Sprintf("concentration %.4f: co-occurrence %.4f (set's %.4f)", c, v, measured.CoOccurrence))
	}); err != nil {
		return nil, fmt.Errorf("data: fitting a stand-in to %s: %w", d.Name, err)
	}

	// Anchors: read off the set.
	rep.Stage("anchors", 0, "")
	K := proxyLabels(d)
	sample := sampleOf(d, K)
	s.Anchors, measured.AnchoredLabels, measured.AnchorRecall = anchorsOf(sample)
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
		v, err := proxyP1(ctx, sample, opt.Test, K, mix(opt.Seed^streamProxy, uint64(k)))
		if err != nil {
			return nil, fmt.Errorf("data: fitting a stand-in to %s: %w", d.Name, err)
		}
		measured.ProxyP1 += v / targetOrders
		rep.Update(float64(k+1), fmt.Sprintf("P@1 %.4f", v))
	}
	s.Real = &measured
	g := newStandInGen(s, opt.Seed)
	p1 := func(sig float64) (float64, error) {
		t := *s
		t.Signal = sig
		g.s = &t
		return proxyP1(ctx, g.sample(sample.Len()), nil, K, opt.Seed^streamProxy)
	}
	// When even features drawn only from the labels' prototypes do not
	// identify the labels as well as the real set's, the prototypes are
	// too diffuse: shrink them until they do.
	rep.Stage("prototype size", 0, "steps")
	for tries := 1; s.PrototypeSize > 2; tries++ {
		v, err := p1(1)
		if err != nil {
			return nil, fmt.Errorf("data: fitting a stand-in to %s: %w", d.Name, err)
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
		return nil, fmt.Errorf("data: fitting a stand-in to %s: %w", d.Name, err)
	}
	if opt.Learn != nil {
		if s, err = fitSpeed(ctx, s, g, sample, K, opt, rep, logf); err != nil {
			return nil, fmt.Errorf("data: fitting a stand-in to %s: %w", d.Name, err)
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

// sortedCounts returns the number of entries of each of n columns, most
// frequent first.
func sortedCounts(ids []int32, n int) []int {
	c := make([]int, n)
	for _, j := range ids {
		c[j]++
	}
	slices.SortFunc(c, func(a, b int) int { return b - a })
	return c
}

func meanOf(x []int) float64 {
	var s float64
	for _, v := range x {
		s += float64(v)
	}
	return s / float64(max(len(x), 1))
}

// rowNorm is 0 when every value is 1 (binary rows), otherwise the mean L2
// norm of the rows.
func rowNorm(d *Dataset) float64 {
	binary := true
	for _, v := range d.X.Values {
		if v != 1 {
			binary = false
			break
		}
	}
	if binary {
		return 0
	}
	var sum float64
	for i := range d.Len() {
		_, vals := d.X.Row(i)
		var n float64
		for _, v := range vals {
			n += float64(v) * float64(v)
		}
		sum += math.Sqrt(n)
	}
	return sum / float64(d.Len())
}

// sampleOf returns d, or evenly spaced rows of it when it has more than
// fitSamplePoints points or more than fitSampleEntries of the
// regression's work per pass over the labels it scores (proxyLabels).
func sampleOf(d *Dataset, labels int) *Dataset {
	N := d.Len()
	per := float64(d.X.NNZ()) / float64(N) * float64(labels)
	n := min(N, fitSamplePoints, max(50, int(fitSampleEntries/math.Max(per, 1))))
	if n == N {
		return d
	}
	rows := make([]int, n)
	for k := range rows {
		rows[k] = spread(k, N, n)
	}
	return pickRows(d, rows, d.Name+" sample")
}

// pickRows returns the rows of d at the given indices as a set of that name.
func pickRows(d *Dataset, rows []int, name string) *Dataset {
	n := len(rows)
	s := &Dataset{Name: name}
	s.X = sparse.CSR{Rows: n, Cols: d.X.Cols, Indptr: make([]int64, 1, n+1)}
	s.Y = sparse.CSR{Rows: n, Cols: d.Y.Cols, Indptr: make([]int64, 1, n+1)}
	for _, i := range rows {
		f, v := d.X.Row(i)
		l, _ := d.Y.Row(i)
		s.X.Indices = append(s.X.Indices, f...)
		if v != nil {
			s.X.Values = append(s.X.Values, v...)
		}
		s.Y.Indices = append(s.Y.Indices, l...)
		s.X.Indptr = append(s.X.Indptr, int64(len(s.X.Indices)))
		s.Y.Indptr = append(s.Y.Indptr, int64(len(s.Y.Indices)))
	}
	return s
}

// spread returns the k-th of n rows spread evenly over N (n ≤ N): k·N/n,
// rounded down, so that they are distinct and rise with k.
func spread(k, N, n int) int { return int(int64(k) * int64(N) / int64(n)) }

// proxyLabels returns how many of d's most frequent labels the fit's
// regression scores: proxyMaxLabels, or fewer (at least 64) when d's
// points have so many features that fitSampleEntries would otherwise
// cover fewer than fitMinPoints of them.
func proxyLabels(d *Dataset) int {
	perPoint := math.Max(1, float64(d.X.NNZ())/float64(max(1, d.Len())))
	return max(1, min(d.Labels(), proxyMaxLabels, max(64, int(fitSampleEntries/(fitMinPoints*perPoint)))))
}

// FitAny returns the stand-in that path names: a stand-in file (".json",
// as WriteJSON writes it) read back, or one fitted to the data LoadAny
// reads there: a folder's or bundled set's training split (its test split
// sizes the stand-in's), or a single file. The stand-in is named after
// the last element of path.
func (l Loader) FitAny(path string, opt FitOptions) (*StandIn, error) {
	if strings.EqualFold(filepath.Ext(path), ".json") {
		return LoadStandIn(path)
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
	s, err := FitStandIn(l.context(), sets[0], opt)
	if err != nil {
		return nil, err
	}
	s.Name = strings.TrimPrefix(filepath.Base(filepath.Clean(path)), "bundled:")
	return s, nil
}

// anchorsOf reads the anchors off d: the features on at least
// anchorMinPoints points, at least anchorPrecision of them carrying one
// label, each that label's anchor (a label keeps its most frequent one).
// It returns, by the labels' frequency rank, the share of a label's points
// that hold its anchor (0 for a label with none), averaged over bands of
// ranks (one by one at the head, then 25 % wider each), nil when no label
// has one; and the share of the labels with an anchor and the mean share
// of a label's points holding it.
func anchorsOf(d *Dataset) (a *Shares, anchored, recall float64) {
	N, D, L := d.Len(), d.Features(), d.Labels()
	nl := make([]int, L)
	for _, l := range d.Y.Indices {
		nl[l]++
	}
	// Each feature's points, to count their labels feature by feature.
	start := make([]int, D+1)
	for _, f := range d.X.Indices {
		start[f+1]++
	}
	for f := range D {
		start[f+1] += start[f]
	}
	points := make([]int32, len(d.X.Indices))
	next := slices.Clone(start[:D])
	for i := range N {
		feats, _ := d.X.Row(i)
		for _, f := range feats {
			points[next[f]] = int32(i)
			next[f]++
		}
	}
	best := make([]float64, L)
	count := make([]int, L)
	var touched []int32
	for f := range D {
		nf := start[f+1] - start[f]
		if nf < anchorMinPoints {
			continue
		}
		touched = touched[:0]
		top := int32(-1)
		for _, i := range points[start[f]:start[f+1]] {
			labels, _ := d.Y.Row(int(i))
			for _, l := range labels {
				if count[l] == 0 {
					touched = append(touched, l)
				}
				count[l]++
				if top < 0 || count[l] > count[top] {
					top = l
				}
			}
		}
		if top >= 0 && float64(count[top]) >= anchorPrecision*float64(nf) {
			best[top] = max(best[top], float64(count[top])/float64(nl[top]))
		}
		for _, l := range touched {
			count[l] = 0
		}
	}
	order := identity(L)
	slices.SortStableFunc(order, func(x, y int32) int { return nl[y] - nl[x] })
	a = &Shares{}
	for lo := 0; lo < L; {
		hi := min(L, max(lo+1, int(float64(lo)*1.25)))
		var sum float64
		for _, l := range order[lo:hi] {
			sum += best[l]
			if best[l] > 0 {
				anchored++
			}
		}
		a.At = append(a.At, (float64(lo+hi)/2)/float64(L))
		a.Value = append(a.Value, sum/float64(hi-lo))
		recall += sum
		lo = hi
	}
	if anchored == 0 {
		return nil, 0, 0
	}
	return a, anchored / float64(L), recall / float64(L)
}

// Constants of the speed fit (FitOptions.Learn).
const (
	// speedSignal is the least signal of the speed model: most of a
	// point's features come from its topics' prototypes, which identify
	// its labels quickly, and vague points cap the best.
	speedSignal = 0.1
	// lateEpochs is the length of the runs whose best P@1 is the late
	// target: Delicious's best of 20 epochs comes at epochs 7 to 12;
	// Bibtex's at 11 to 17, 0.011 above its best of 10 (means over
	// training seeds 1 to 5: 0.6363 and 0.6258).
	lateEpochs = 10
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
	// speedTolerance and lateTolerance are how far a stand-in's P@1 after
	// epoch 1 and its best may lie from the real set's before the fit
	// tries the speed model: inside the validation's 0.03, so that a kept
	// stand-in leaves room for one training seed's draw (about 1.3 and 3
	// standard errors of the differences of the means).
	speedTolerance = 0.02
	lateTolerance  = 0.01
)

// ease sets the speed model's difficulty from one number in [0, 1] that
// makes the set easier as it grows: below 1/2 the vague share falls from
// 1 to 0 at signal speedSignal; above, the signal rises from speedSignal
// to 1 with no vague points.
func ease(t *StandIn, e float64) {
	if e < 0.5 {
		t.Signal, t.Vague = speedSignal, 1-2*e
	} else {
		t.Signal, t.Vague = speedSignal+(2*e-1)*(1-speedSignal), 0
	}
}

// fitSpeed measures the learning curves of the real set and of the
// stand-in s fitted without them; when their first epochs differ by more
// than speedTolerance or their best P@1s of lateEpochs epochs by more
// than lateTolerance, it fits a stand-in of the speed model (the topic
// share matched on the first epoch's P@1 and, at each topic share, the
// ease on the best) and returns it if it misses the two by less, counted
// in tolerances. Otherwise it returns s, its curve recorded.
func fitSpeed(ctx context.Context, s *StandIn, g *standInGen, sample *Dataset, K int, opt FitOptions, rep stage.Reporter, logf func(string, ...any)) (*StandIn, error) {
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
	curve := func(train, test *Dataset, epochs, seeds int) (first, best float64, err error) {
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
	standIn := func(t *StandIn, epochs, seeds int) (first, best float64, err error) {
		g.s = t
		var train, test *Dataset
		if opt.Test != nil {
			train, test = g.sample(realTrain.Len()), g.sampleSplit(realTest.Len(), 1)
		} else {
			train, test = fifths(g.sample(sample.Len()))
		}
		return curve(train, test, epochs, seeds)
	}
	rep.Stage("learning curves", realSeeds+speedSeeds, "runs")
	rep.Update(0, fmt.Sprintf("the set's, %d epochs", lateEpochs))
	speed, late, err := curve(realTrain, realTest, lateEpochs, realSeeds)
	if err != nil {
		return nil, err
	}
	s.Real.Speed, s.Real.Late = speed, late
	rep.Update(float64(runs), fmt.Sprintf("the stand-in's, %d epochs", lateEpochs))
	if s.Speed, s.Late, err = standIn(s, lateEpochs, speedSeeds); err != nil {
		return nil, err
	}
	logf("fit %s: P@1 after epoch 1 and best of %d: %.4f and %.4f; the stand-in's %.4f and %.4f", s.Name, lateEpochs, speed, late, s.Speed, s.Late)
	// miss is how far a stand-in's two figures lie from the set's, in
	// tolerances.
	miss := func(t *StandIn) float64 {
		return max(math.Abs(t.Speed-speed)/speedTolerance, math.Abs(t.Late-late)/lateTolerance)
	}
	if miss(s) <= 1 {
		return s, nil
	}
	// The search trains speedSteps × (easeSteps × lateSeeds + speedSeeds)
	// runs: most of the fit's time.
	rep.Stage("speed model search", speedSteps*(easeSteps*lateSeeds+speedSeeds), "runs")
	runs = 0
	var last StandIn
	step := func(ts float64) (float64, error) {
		t := *s
		t.TopicShare = ts
		e, err := bisectSteps(ctx, 0, 1, late, easeSteps, func(e float64) (float64, error) {
			u := t
			ease(&u, e)
			_, v, err := standIn(&u, lateEpochs, lateSeeds)
			return v, err
		}, func(e, v float64) {
			u := t
			ease(&u, e)
			logf("fit %s: topic share %.4f, signal %.4f, vague %.4f: best P@1 of %d epochs %.4f (real %.4f)", s.Name, ts, u.Signal, u.Vague, lateEpochs, v, late)
			rep.Update(float64(runs), fmt.Sprintf("topic share %.3f, ease %.3f: best P@1 %.4f (set's %.4f)", ts, e, v, late))
		})
		if err != nil {
			return 0, err
		}
		ease(&t, e)
		if t.Speed, t.Late, err = standIn(&t, lateEpochs, speedSeeds); err != nil {
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
		g.s = &last
		if last.ProxyP1, err = proxyP1(ctx, g.sample(sample.Len()), nil, K, opt.Seed^streamProxy); err != nil {
			return nil, err
		}
		logf("fit %s: the speed model: topic share %.4f, signal %.4f, vague %.4f; proxy P@1 %.4f (real %.4f)", s.Name, last.TopicShare, last.Signal, last.Vague, last.ProxyP1, s.Real.ProxyP1)
		return &last, nil
	}
	logf("fit %s: the speed model got no closer (P@1 after epoch 1 %.4f, best of %d epochs %.4f): kept the fit without it", s.Name, last.Speed, lateEpochs, last.Late)
	return s, nil
}

// heldOut says whether row i of a set is in its held-out fifth (every
// fifth row, from the first): what the regression scores on when there is
// no test split, and what fifths leaves out.
func heldOut(i int) bool { return i%5 == 0 }

// fifths splits d into four fifths to train on and a fifth to score on,
// as the regression does (heldOut).
func fifths(d *Dataset) (train, test *Dataset) {
	var a, b []int
	for i := range d.Len() {
		if heldOut(i) {
			b = append(b, i)
		} else {
			a = append(a, i)
		}
	}
	return pickRows(d, a, d.Name+" training four fifths"), pickRows(d, b, d.Name+" held-out fifth")
}

// topLabels returns train and test with only train's K most frequent
// labels, numbered by frequency rank (ties by id), or the two as they are
// when they have at most K labels. The features are shared, not copied.
func topLabels(train, test *Dataset, K int) (*Dataset, *Dataset) {
	L := train.Labels()
	if L <= K {
		return train, test
	}
	counts := make([]int, L)
	for _, l := range train.Y.Indices {
		counts[l]++
	}
	_, slot := rankSlots(counts, K)
	keep := func(d *Dataset) *Dataset {
		r := &Dataset{Name: d.Name, X: d.X}
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
