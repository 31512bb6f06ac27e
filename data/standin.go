package data

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/hetsgd/hetsgd/progress/stage"
	"github.com/hetsgd/hetsgd/sparse"
)

// StandIn holds the parameters of the stand-in generator: the statistics of
// a real set that it reproduces (MeasureStandIn measures them) and the knobs of
// its model, which the package documentation describes. A StandIn is plain
// data: it is saved and read back as JSON (WriteJSON, ReadStandIn), and the
// same StandIn and seed always generate the same bytes.
type StandIn struct {
	// Name is the set the parameters were fitted to.
	Name string `json:"name"`
	// Train and Test are the points of each split to generate; Features
	// and Labels the dimensions.
	Train    int `json:"train"`
	Test     int `json:"test"`
	Features int `json:"features"`
	Labels   int `json:"labels"`
	// LabelsPerPoint and FeaturesPerPoint are quantiles of the per-point
	// counts at the probabilities i/(n−1), i = 0..n−1: the whole
	// distribution, its spread and its tail, in a few hundred bytes.
	LabelsPerPoint   []float64 `json:"labels_per_point"`
	FeaturesPerPoint []float64 `json:"features_per_point"`
	// LabelCurve is the share of points carrying the label of each
	// frequency rank, as a function of the rank's fraction of the label
	// count, so that it rescales to any number of labels.
	LabelCurve Curve `json:"label_curve"`
	// FeatureCurve is the same for features; it shapes the noise.
	FeatureCurve Curve `json:"feature_curve"`
	// RowNorm is the L2 norm given to every row; 0 means binary rows (every
	// value 1), as in Bibtex and Delicious.
	RowNorm float64 `json:"row_norm"`
	// Topics is the number of label clusters; Concentration the chance
	// that a point's next label comes from one of the topics it already
	// has rather than from the whole label set.
	Topics        int     `json:"topics"`
	Concentration float64 `json:"concentration"`
	// Signal is the chance that a feature of a point is drawn from one of
	// its labels' prototypes; TopicShare the chance that one that is not
	// comes from one of its topics' prototypes (the rest is noise).
	Signal     float64 `json:"signal"`
	TopicShare float64 `json:"topic_share"`
	// Vague is the chance that a point is vague: all its features come
	// from the feature curve, none from a prototype or an anchor. Vague
	// points cap how well a model can do without slowing how fast it
	// learns the rest (see standin.Fit); 0 in stand-ins fitted before it.
	Vague float64 `json:"vague,omitempty"`
	// PrototypeSize is the number of features in each label's and each
	// topic's prototype.
	PrototypeSize int `json:"prototype_size"`
	// Anchors is the chance that a point carrying the label of each
	// frequency rank holds the label's anchor, a feature of its own, as a
	// function of the rank's fraction of the label count; nil: no anchors
	// (stand-ins fitted before anchors, and sets with no label that a
	// feature marks).
	Anchors *Shares `json:"anchors,omitempty"`
	// Calibration names how the label weights are calibrated to the label
	// curve: CalibrateLogShare (what MeasureStandIn writes), or "" for the
	// first rule, which stand-in files written before it and the papers'
	// profiles keep so that they generate the bytes they always did.
	Calibration string `json:"calibration,omitempty"`
	// Real holds the statistics of the set fitted to, for reports; nil
	// for a StandIn built by hand.
	Real *Summary `json:"real,omitempty"`
	// ProxyP1 is the regression's P@1 on the fit's sample of the stand-in
	// at the fitted signal, to set beside Real.ProxyP1: they differ when
	// the fit could not reach the set's (0: not fitted, or fitted before
	// it was kept).
	ProxyP1 float64 `json:"proxy_p1,omitempty"`
	// Speed is the default model's P@1 after one epoch on the fit's
	// samples of the stand-in (its mean over training seeds; see
	// standin.Options.Learn), to set beside Real.Speed (0: not measured).
	Speed float64 `json:"speed,omitempty"`
	// Late is the same for the best P@1 of lateEpochs epochs.
	Late float64 `json:"late,omitempty"`
}

// Summary is what a stand-in is compared on.
type Summary struct {
	Points            int     `json:"points"`
	AvgLabels         float64 `json:"avg_labels"`
	AvgFeatures       float64 `json:"avg_features"`
	TopLabelShare     float64 `json:"top_label_share"`       // points carrying the most frequent label, over points
	HeadShare         float64 `json:"head_share"`            // label assignments on the most frequent tenth of the labels
	LabelsOnOneOrLess float64 `json:"labels_on_one_or_less"` // share of the labels on at most 1 point
	LabelsOnTwoOrLess float64 `json:"labels_on_two_or_less"`
	// CoOccurrence is the mean log lift of the label pairs that occur
	// together, log(N·n_ij/(n_i·n_j)) weighted by n_ij, measured on
	// CoOccurrencePoints points (it depends on their number, so sets are
	// compared on the same number): spread evenly over a set Summarize
	// reads, the first of a generated one (drawn alike).
	CoOccurrence       float64 `json:"co_occurrence"`
	CoOccurrencePoints int     `json:"co_occurrence_points"`
	// NearDuplicates is the share of the points that have a
	// near-duplicate (see nearDuplicateShare) among
	// NearDuplicatePoints points, chosen as the co-occurrence's are;
	// for reports (the model draws every point on its own).
	NearDuplicates      float64 `json:"near_duplicates,omitempty"`
	NearDuplicatePoints int     `json:"near_duplicate_points,omitempty"`
	// ProxyP1 is the P@1 of the softmax regression standin.Fit matches the
	// signal on, on the fit's sample (its mean over orders of the rows);
	// 0 when not measured.
	ProxyP1 float64 `json:"proxy_p1,omitempty"`
	// Speed is the default model's P@1 after one epoch (its mean over
	// training seeds), when the fit measured it (standin.Options.Learn).
	Speed float64 `json:"speed,omitempty"`
	// Late is the mean best P@1 of lateEpochs epochs.
	Late float64 `json:"late,omitempty"`
	// AnchoredLabels is the share of the labels with an anchor (a feature
	// on at least anchorMinPoints points, at least anchorPrecision of them
	// carrying the label), AnchorRecall the mean share of a label's points
	// that hold its anchor, over all labels; for reports.
	AnchoredLabels float64 `json:"anchored_labels,omitempty"`
	AnchorRecall   float64 `json:"anchor_recall,omitempty"`
}

// Curve is a positive, non-increasing function of a rank fraction q in
// (0, 1], known at knots At (increasing) and interpolated linearly in log
// Value between them (constant beyond the ends).
type Curve struct {
	At    []float64 `json:"at"`
	Value []float64 `json:"value"`
}

// Eval returns the curve at q.
func (c Curve) Eval(q float64) float64 {
	i, t := bracket(c.At, q)
	if t == 0 {
		return c.Value[i]
	}
	return math.Exp((1-t)*math.Log(c.Value[i-1]) + t*math.Log(c.Value[i]))
}

// bracket returns where q falls among the increasing knots at: the knot
// i and, when q lies between knots i−1 and i, how far along (t in (0,
// 1)); t is 0 at or beyond the ends, where the value is the end's.
func bracket(at []float64, q float64) (i int, t float64) {
	n := len(at)
	i = sort.SearchFloat64s(at, q)
	switch {
	case i == 0:
		return 0, 0
	case i == n:
		return n - 1, 0
	}
	return i, (q - at[i-1]) / (at[i] - at[i-1])
}

// Shares is a function of a rank fraction q in (0, 1] with values in
// [0, 1], known at knots At (increasing) and interpolated linearly between
// them (constant beyond the ends). Unlike a Curve it may be 0 and need not
// decrease.
type Shares struct {
	At    []float64 `json:"at"`
	Value []float64 `json:"value"`
}

// Eval returns the shares at q.
func (c *Shares) Eval(q float64) float64 {
	i, t := bracket(c.At, q)
	if t == 0 {
		return c.Value[i]
	}
	return (1-t)*c.Value[i-1] + t*c.Value[i]
}

// curveOf returns the curve of counts sorted in decreasing order, as
// shares of points, at the ranks curveRanks keeps: the set's counts as
// estimates of how often a point carries each rank, which is what the
// generator draws from at any size.
//
// The counts seen are that estimate only where they are large. In a
// sample that leaves most ranks empty (20,000 points of a set of 670,091
// labels leave 89 % of its labels on no point), the ranks seen once
// stand for many rarer ones, some of which a new point will carry. So the
// counts below goodTuringBelow are Good–Turing's: a count r becomes
// (r+1)·n(r+1)/n(r), n(r) the number of ranks seen r times (kept as r
// where either is 0, and never raised above r), and the ranks seen on no
// point share n(1), the mass of the ranks seen once; then the counts
// below goodTuringBelow are scaled together so that they keep their sum.
// The head keeps its counts.
// With no rank seen once, an empty rank gets a quarter point, or less if
// the empty ranks would otherwise carry more than zeroMass of the counts:
// the generator scales a curve to the counts a point has, so mass on the
// empty ranks is taken from the head. (A quarter point on each empty
// rank, the first rule, halved the head of that 20,000-point sample: its
// most frequent label came out on 2.4 % of the points, not 5.6 %.) A set
// with no count below goodTuringBelow, as Bibtex and Delicious, keeps its
// curve as the counts give it.
func curveOf(sorted []int, points int) Curve {
	n := len(sorted)
	ranks := curveRanks(n)
	P := float64(max(points, 1))
	var seen [goodTuringBelow + 1]int
	var total int
	for _, c := range sorted {
		total += c
		if c < len(seen) {
			seen[c]++
		}
	}
	// adj[c] is the count a rank seen c < goodTuringBelow times stands
	// for; the ranks below goodTuringBelow keep their sum, so the head
	// keeps its share of the curve (Katz's renormalization).
	var adj [goodTuringBelow]float64
	zeros := seen[0]
	var low, lowAdj float64
	for c := range adj {
		adj[c] = float64(c)
		switch {
		case c == 0 && seen[1] > 0:
			adj[c] = float64(seen[1]) / float64(zeros)
		case c == 0:
			adj[c] = 0.25
			if total > 0 {
				adj[c] = min(adj[c], zeroMass*float64(total)/float64(max(zeros, 1)))
			}
		case seen[c] > 0 && seen[c+1] > 0:
			adj[c] = min(adj[c], float64(c+1)*float64(seen[c+1])/float64(seen[c]))
		}
		low += float64(c * seen[c])
		lowAdj += adj[c] * float64(seen[c])
	}
	if low > 0 && lowAdj > 0 {
		for c := range adj {
			adj[c] *= low / lowAdj
		}
	}
	count := func(c int) float64 {
		if c < goodTuringBelow {
			return adj[c]
		}
		return float64(c)
	}
	c := Curve{At: make([]float64, len(ranks)), Value: make([]float64, len(ranks))}
	for i, r := range ranks {
		c.At[i] = (float64(r) + 0.5) / float64(n)
		c.Value[i] = count(sorted[r]) / P
		if i > 0 {
			c.Value[i] = min(c.Value[i], c.Value[i-1])
		}
	}
	return c
}

// goodTuringBelow is the count below which curveOf takes Good–Turing's
// estimate for the count seen (Katz's threshold: larger counts are
// reliable as they are), and zeroMass the most of a curve's counts that
// its empty ranks may carry when no rank was seen once.
const (
	goodTuringBelow = 5
	zeroMass        = 0.01
)

// curveRanks returns the ranks of n that a curve keeps: every rank when
// there are few, otherwise the head's ranks one by one, geometrically
// spaced ranks after them and a uniform grid, so that both the head and
// the long tail are kept.
func curveRanks(n int) []int {
	ranks := []int{}
	if n <= 256 {
		for r := range n {
			ranks = append(ranks, r)
		}
		return ranks
	}
	for r := range 32 {
		ranks = append(ranks, r)
	}
	for x := 32.0; x < float64(n); x *= 1.1 {
		ranks = append(ranks, int(x))
	}
	for i := range 65 {
		ranks = append(ranks, min(n-1, i*(n-1)/64))
	}
	slices.Sort(ranks)
	return slices.Compact(ranks)
}

// quantileKnots is how many quantiles of a per-point count are kept.
const quantileKnots = 129

// quantilesOf returns the counts' quantiles at i/(quantileKnots−1).
func quantilesOf(counts []int) []float64 {
	s := slices.Clone(counts)
	slices.Sort(s)
	q := make([]float64, quantileKnots)
	if len(s) == 0 {
		return q
	}
	for i := range q {
		q[i] = float64(s[int(math.Round(float64(i)*float64(len(s)-1)/(quantileKnots-1)))])
	}
	return q
}

// drawQuantile draws a count from quantiles q: the inverse distribution
// function interpolated at u, rounded.
func drawQuantile(q []float64, u float64) int {
	x := u * float64(len(q)-1)
	i := min(int(x), len(q)-2)
	t := x - float64(i)
	return int(math.Round((1-t)*q[i] + t*q[i+1]))
}

// meanQuantile is the mean of the distribution drawQuantile draws from
// (before rounding and clamping).
func meanQuantile(q []float64) float64 {
	var s float64
	for i := 1; i < len(q); i++ {
		s += (q[i-1] + q[i]) / 2
	}
	return s / float64(len(q)-1)
}

// WithPoints returns the stand-in with n training points and its test
// points in the same proportion (at least 8).
func (s *StandIn) WithPoints(n int) *StandIn {
	q := *s
	q.Test = max(8, int(math.Round(float64(n)*float64(s.Test)/float64(max(s.Train, 1)))))
	q.Train = n
	return &q
}

// Scaled returns the stand-in with points, features and labels multiplied
// by scale (at least 16 features and labels, 16 training and 8 test
// points); the curves rescale with them, the per-point counts are capped
// at a quarter of the dimensions.
func (s *StandIn) Scaled(scale float64) *StandIn {
	if scale == 1 {
		return s
	}
	q := *s
	sc := func(n, least int) int { return max(least, int(math.Round(float64(n)*scale))) }
	q.Features, q.Labels = sc(s.Features, 16), sc(s.Labels, 16)
	q.Train, q.Test = sc(s.Train, 16), sc(s.Test, 8)
	capped := func(qs []float64, most int) []float64 {
		out := slices.Clone(qs)
		for i := range out {
			out[i] = math.Min(out[i], float64(max(1, most/4)))
		}
		return out
	}
	q.LabelsPerPoint = capped(s.LabelsPerPoint, q.Labels)
	q.FeaturesPerPoint = capped(s.FeaturesPerPoint, q.Features)
	q.Topics = max(1, min(q.Labels, int(math.Round(float64(s.Topics)*float64(q.Labels)/float64(s.Labels)))))
	q.PrototypeSize = max(1, min(s.PrototypeSize, q.Features))
	return &q
}

// profile is the stand-in as a Profile, for GenStats and WriteReport.
func (s *StandIn) profile() Profile {
	return Profile{
		Name: s.Name + " stand-in", Features: s.Features, Labels: s.Labels, Train: s.Train, Test: s.Test,
		AvgNNZ: meanQuantile(s.FeaturesPerPoint), AvgLabels: meanQuantile(s.LabelsPerPoint),
	}
}

// standInGen generates points of a StandIn. Everything it holds is O(labels
// + features); each point comes from its own seeded stream.
type standInGen struct {
	s    *StandIn
	seed uint64
	// By label frequency rank: the label's id, its topic, its weight.
	labelIDs []int32
	topicOf  []int32
	weight   []float64
	// globalCDF draws a rank by weight; topicRanks holds the ranks
	// grouped by topic (topic t at topicStart[t]:topicStart[t+1]) and
	// topicCDF the cumulative weights within each group.
	globalCDF  []float64
	topicStart []int
	topicRanks []int32
	topicCDF   []float64
	// featureIDs maps feature frequency rank to id; featureCDF draws a
	// rank from the feature curve.
	featureIDs []int32
	featureCDF []float64
	// anchor is the chance of each label rank's anchor and anchorOf its
	// feature; nil without anchors.
	anchor   []float64
	anchorOf []int32
	// Scratch, reused from point to point: stamps mark what a point
	// already holds (stamp, bumped per point, saves clearing them).
	labelStamp, featStamp, topicStamp []uint32
	stamp                             uint32
	topics                            []int32
}

// CalibrateLogShare is the calibration rule that corrects the weights on
// −log(1 − share) for calibrationRounds rounds. The first rule ("")
// corrected them by the ratio of the shares for firstCalibrationRounds:
// Delicious's head label (share 0.40, concentration 0.97) stopped at
// 0.377, and took 11 to 16 rounds to get within 0.005 (simulated on
// 20,000 points); the log-share rule gets there in 9.
const CalibrateLogShare = "log-share"

const (
	calibrationRounds      = 12
	firstCalibrationRounds = 6
)

// Streams of the generator, the second word of its PCG sources.
const (
	streamLayout    = 0x5ea7d1
	streamCalibrate = 0xca11b
	streamAnchor    = 0xa9c40
)

func newStandInGen(s *StandIn, seed uint64) *standInGen {
	g := &standInGen{s: s, seed: seed}
	L, D := s.Labels, s.Features
	r := rand.New(rand.NewPCG(seed, streamLayout))
	g.labelIDs = identity(L)
	r.Shuffle(L, func(i, j int) { g.labelIDs[i], g.labelIDs[j] = g.labelIDs[j], g.labelIDs[i] })
	// Topics take the ranks of a seeded permutation in turn, so that each
	// has head and tail labels alike.
	order := identity(L)
	r.Shuffle(L, func(i, j int) { order[i], order[j] = order[j], order[i] })
	g.topicOf = make([]int32, L)
	for i, rank := range order {
		g.topicOf[rank] = int32(i % s.Topics)
	}
	g.featureIDs = identity(D)
	r.Shuffle(D, func(i, j int) { g.featureIDs[i], g.featureIDs[j] = g.featureIDs[j], g.featureIDs[i] })
	g.featureCDF = make([]float64, D)
	var sum float64
	for k := range D {
		sum += s.FeatureCurve.Eval((float64(k) + 0.5) / float64(D))
		g.featureCDF[k] = sum
	}
	for k := range g.featureCDF {
		g.featureCDF[k] /= sum
	}
	if s.Anchors != nil {
		// A label's anchor is drawn uniformly from the rarer half of the
		// features, so that it occurs mostly with its label.
		g.anchor = make([]float64, L)
		g.anchorOf = make([]int32, L)
		for k := range L {
			g.anchor[k] = s.Anchors.Eval((float64(k) + 0.5) / float64(L))
			g.anchorOf[k] = g.featureIDs[D/2+int(Mix(seed^streamAnchor, uint64(k))%uint64(D-D/2))]
		}
	}
	g.labelStamp = make([]uint32, L)
	g.featStamp = make([]uint32, D)
	g.topicStamp = make([]uint32, s.Topics)
	g.weight = make([]float64, L)
	g.globalCDF = make([]float64, L)
	g.topicStart = make([]int, s.Topics+1)
	g.topicRanks = make([]int32, L)
	g.topicCDF = make([]float64, L)
	g.calibrate()
	return g
}

func identity(n int) []int32 {
	p := make([]int32, n)
	for i := range p {
		p[i] = int32(i)
	}
	return p
}

// calibrate sets the label weights so that the share of points carrying
// each rank follows the label curve. A point draws labels until it has
// its count of distinct ones, so a frequent label's share is not
// proportional to its weight: a label of share p gets the weight −log(1−p)
// (exact when the number of draws is Poisson), and then a few rounds of
// simulation correct the weights of each band of ranks by the ratio of
// −log(1−p) at their target and at what came out (s.Calibration says
// which rule).
func (g *standInGen) calibrate() {
	s := g.s
	L := s.Labels
	target := make([]float64, L)
	var sum float64
	for k := range target {
		target[k] = s.LabelCurve.Eval((float64(k) + 0.5) / float64(L))
		sum += target[k]
	}
	avg := meanQuantile(s.LabelsPerPoint)
	for k := range target {
		target[k] = math.Min(target[k]*avg/sum, 0.98)
		g.weight[k] = -math.Log1p(-target[k])
	}
	// Bands: the head's ranks one by one, then geometrically wider.
	var bands []int
	for b := 0; b < L; b = max(b+1, int(float64(b)*1.15)) {
		bands = append(bands, b)
	}
	bands = append(bands, L)
	n := min(s.Train, 20000)
	counts := make([]int32, L)
	var labels []int32
	rounds, logShare := firstCalibrationRounds, s.Calibration == CalibrateLogShare
	if logShare {
		rounds = calibrationRounds
	}
	for round := range rounds + 1 {
		g.index()
		if round == rounds {
			break
		}
		clear(counts)
		for i := range n {
			r := rand.New(rand.NewPCG(g.seed^streamCalibrate, uint64(i)))
			labels = g.drawLabels(r, labels[:0], drawQuantile(s.LabelsPerPoint, r.Float64()))
			for _, l := range labels {
				counts[l]++ // labels are ranks here
			}
		}
		for b := 0; b+1 < len(bands); b++ {
			var want, got float64
			for k := bands[b]; k < bands[b+1]; k++ {
				want += target[k] * float64(n)
				got += float64(counts[k])
			}
			// Too few draws in a band to tell: leave it.
			if got < 5 || want < 5 {
				continue
			}
			f := want / got
			if logShare {
				// A head label's share grows ever slower with its
				// weight: correct where the draws act.
				size := float64(n * (bands[b+1] - bands[b]))
				f = math.Log1p(-math.Min(want/size, 0.98)) / math.Log1p(-math.Min(got/size, 0.98))
			}
			for k := bands[b]; k < bands[b+1]; k++ {
				g.weight[k] *= f
			}
		}
	}
}

// index rebuilds the cumulative tables from the weights.
func (g *standInGen) index() {
	var sum float64
	for k, w := range g.weight {
		sum += w
		g.globalCDF[k] = sum
	}
	for k := range g.globalCDF {
		g.globalCDF[k] /= sum
	}
	T := g.s.Topics
	clear(g.topicStart)
	for _, t := range g.topicOf {
		g.topicStart[t+1]++
	}
	for t := range T {
		g.topicStart[t+1] += g.topicStart[t]
	}
	next := slices.Clone(g.topicStart[:T])
	for k, t := range g.topicOf {
		g.topicRanks[next[t]] = int32(k)
		next[t]++
	}
	for t := range T {
		lo, hi := g.topicStart[t], g.topicStart[t+1]
		sum = 0
		for i := lo; i < hi; i++ {
			sum += g.weight[g.topicRanks[i]]
			g.topicCDF[i] = sum
		}
		for i := lo; i < hi; i++ {
			g.topicCDF[i] /= sum
		}
	}
}

// drawLabels appends k distinct label ranks to labels and leaves the
// point's topics in g.topics. The first label, and each later one with
// chance 1 − Concentration, comes from the whole label set by weight
// (its topic joins the point's); the others come from one of the point's
// topics, by weight within it. Either way a label's chance stays
// proportional to its weight, so the label curve holds whatever the
// concentration.
func (g *standInGen) drawLabels(r *rand.Rand, labels []int32, k int) []int32 {
	s := g.s
	k = max(1, min(k, s.Labels))
	g.stamp++
	if g.stamp == 0 { // wrapped: old stamps could match again
		clear(g.labelStamp)
		clear(g.featStamp)
		clear(g.topicStamp)
		g.stamp = 1
	}
	g.topics = g.topics[:0]
	for tries := 0; len(labels) < k && tries < 8*k+16; tries++ {
		var rank int32
		if len(g.topics) > 0 && r.Float64() < s.Concentration {
			t := g.topics[r.IntN(len(g.topics))]
			lo, hi := g.topicStart[t], g.topicStart[t+1]
			i := lo + sort.SearchFloat64s(g.topicCDF[lo:hi], r.Float64())
			rank = g.topicRanks[min(i, hi-1)]
		} else {
			rank = draw(g.globalCDF, r.Float64())
			if t := g.topicOf[rank]; g.topicStamp[t] != g.stamp {
				g.topicStamp[t] = g.stamp
				g.topics = append(g.topics, t)
			}
		}
		if g.labelStamp[rank] != g.stamp {
			g.labelStamp[rank] = g.stamp
			labels = append(labels, rank)
		}
	}
	return labels
}

// prototype returns the slot'th feature of the prototype of a label rank
// (kind 0) or topic (kind 1): a hash of the seed, the owner and the slot,
// uniform over the features, so nothing is stored.
func (g *standInGen) prototype(kind uint64, owner int32, slot int) int32 {
	h := Mix(g.seed^(kind+1)<<56^uint64(owner)<<20, uint64(slot))
	return g.featureIDs[draw(g.featureCDF, float64(h>>11)/(1<<53))]
}

// point draws point i of a split: label ids (sorted), feature ids and
// values, appended to the given slices.
func (g *standInGen) point(split uint64, i int, labels, feats []int32, vals []float32) ([]int32, []int32, []float32) {
	s := g.s
	r := rand.New(rand.NewPCG(g.seed, Mix(split+1, uint64(i))))
	labels = g.drawLabels(r, labels, drawQuantile(s.LabelsPerPoint, r.Float64()))
	m := max(1, min(drawQuantile(s.FeaturesPerPoint, r.Float64()), s.Features))
	first := len(feats)
	add := func(f int32) {
		g.featStamp[f] = g.stamp
		feats = append(feats, f)
		if s.RowNorm == 0 {
			vals = append(vals, 1)
		} else {
			vals = append(vals, float32(0.5+r.Float64()))
		}
	}
	// The vague coin is tossed only when there are vague points, so that
	// stand-ins without them draw the bytes they always did.
	vague := s.Vague > 0 && r.Float64() < s.Vague
	// Anchors first: each label's, with its chance.
	if g.anchor != nil && !vague {
		for _, l := range labels {
			if r.Float64() < g.anchor[l] && len(feats)-first < m && g.featStamp[g.anchorOf[l]] != g.stamp {
				add(g.anchorOf[l])
			}
		}
	}
	for tries := 0; len(feats)-first < m && tries < 4*m+16; tries++ {
		var f int32
		switch u := r.Float64(); {
		case vague:
			f = g.featureIDs[draw(g.featureCDF, r.Float64())]
		case u < s.Signal:
			f = g.prototype(0, labels[r.IntN(len(labels))], r.IntN(s.PrototypeSize))
		case u < s.Signal+(1-s.Signal)*s.TopicShare:
			f = g.prototype(1, g.topics[r.IntN(len(g.topics))], r.IntN(s.PrototypeSize))
		default:
			f = g.featureIDs[draw(g.featureCDF, r.Float64())]
		}
		if g.featStamp[f] == g.stamp {
			continue
		}
		add(f)
	}
	if s.RowNorm > 0 {
		var norm float64
		for _, v := range vals[first:] {
			norm += float64(v) * float64(v)
		}
		scale := float32(s.RowNorm / math.Sqrt(norm))
		for j := first; j < len(vals); j++ {
			vals[j] *= scale
		}
	}
	for j := range labels {
		labels[j] = g.labelIDs[labels[j]]
	}
	slices.Sort(labels)
	return labels, feats, vals
}

// write writes n points of a split in the XC format and returns their
// statistics.
func (g *standInGen) write(ctx context.Context, w io.Writer, n int, split uint64, rep stage.Reporter) (GenStats, error) {
	s := g.s
	rep.Stage(splitNames[split], float64(n), "points")
	st := GenStats{Profile: s.profile(), Points: n}
	sum := newSummer(s.Labels, coPoints(s))
	if split == 0 { // the report compares the training split's
		sum.rowLimit = nearDuplicatePoints(s)
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	fmt.Fprintf(bw, "%d %d %d\n", n, s.Features, s.Labels)
	var (
		labels, feats []int32
		vals          []float32
		line          []byte
	)
	for i := range n {
		if i%genCheck == 0 {
			if err := ctx.Err(); err != nil {
				return st, fmt.Errorf("data: generating a stand-in of %s: stopped at point %d of %d: %w", s.Name, i, n, err)
			}
			rep.Update(float64(i), "")
		}
		labels, feats, vals = g.point(split, i, labels[:0], feats[:0], vals[:0])
		sum.add(labels, len(feats))
		sum.row(feats)
		line = appendXCLine(line[:0], labels, feats, vals, 1, 4)
		if _, err := bw.Write(line); err != nil {
			return st, fmt.Errorf("data: writing a stand-in of %s: %w", s.Name, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return st, fmt.Errorf("data: writing a stand-in of %s: %w", s.Name, err)
	}
	sum.fill(&st)
	return st, nil
}

// coPoints is the number of points the co-occurrence is measured on: the
// real set's, so that the two are comparable.
func coPoints(s *StandIn) int {
	if s.Real != nil && s.Real.CoOccurrencePoints > 0 {
		return s.Real.CoOccurrencePoints
	}
	return coOccurrenceMaxPoints
}

// nearDuplicatePoints is the number of points the near-duplicates are
// measured on: the real set's, so that the two are comparable.
func nearDuplicatePoints(s *StandIn) int {
	n := nearDuplicateRows(math.MaxInt, meanQuantile(s.FeaturesPerPoint))
	if s.Real != nil && s.Real.NearDuplicatePoints > 0 {
		return min(s.Real.NearDuplicatePoints, n)
	}
	return n
}

// sampleSplit generates the first n points of a split (0 training, 1
// test) as a Dataset.
func (g *standInGen) sampleSplit(n int, split uint64) *Dataset {
	s := g.s
	d := &Dataset{Name: s.Name + " stand-in sample"}
	d.X = sparse.CSR{Rows: n, Cols: s.Features, Indptr: make([]int64, 1, n+1)}
	d.Y = sparse.CSR{Rows: n, Cols: s.Labels, Indptr: make([]int64, 1, n+1)}
	var labels []int32
	for i := range n {
		labels, d.X.Indices, d.X.Values = g.point(split, i, labels[:0], d.X.Indices, d.X.Values)
		d.Y.Indices = append(d.Y.Indices, labels...)
		d.X.Indptr = append(d.X.Indptr, int64(len(d.X.Indices)))
		d.Y.Indptr = append(d.Y.Indptr, int64(len(d.Y.Indices)))
	}
	return d
}

// A Generator draws samples of stand-ins that share one layout: the
// labels' and features' ids by frequency rank, the topics, the label
// weights calibrated to the label curve, and the anchors, all of the
// stand-in it was made for. The fit (package standin) compares samples of
// stand-ins that differ only in the knobs that shape a point (Signal,
// Vague, TopicShare, PrototypeSize) without building the layout again
// for each.
type Generator struct{ g *standInGen }

// Generator returns a Generator of s's layout with the generator's seed.
func (s *StandIn) Generator(seed uint64) *Generator {
	return &Generator{newStandInGen(s, seed)}
}

// Sample returns the first n points of split 0 (training) or 1 (test) of
// t as a Dataset: the points GenerateContext writes for t with g's seed.
// t has g's layout (see Generator): Sample panics when its dimensions,
// topics or concentration differ from those g was made with.
func (g *Generator) Sample(t *StandIn, n int, split uint64) *Dataset {
	s := g.g.s
	if t.Labels != s.Labels || t.Features != s.Features || t.Topics != s.Topics || t.Concentration != s.Concentration {
		panic(fmt.Sprintf("data: sampling a stand-in of %d labels, %d features, %d topics and concentration %g with the layout of one of %d, %d, %d and %g",
			t.Labels, t.Features, t.Topics, t.Concentration, s.Labels, s.Features, s.Topics, s.Concentration))
	}
	g.g.s = t
	defer func() { g.g.s = s }()
	return g.g.sampleSplit(n, split)
}

// CoOccurrence returns the co-occurrence (see Summary) of the label sets
// of n points drawn from g's layout, each from its own seeded stream:
// what the stand-in's training split would show on n points, without
// drawing their features.
func (g *Generator) CoOccurrence(n int) float64 {
	s := g.g.s
	sum := newSummer(s.Labels, n)
	var labels []int32
	for i := range n {
		r := rand.New(rand.NewPCG(g.g.seed, Mix(1, uint64(i))))
		labels = g.g.drawLabels(r, labels[:0], drawQuantile(s.LabelsPerPoint, r.Float64()))
		sum.add(labels, 0)
	}
	return sum.coOccurrence()
}

// GenerateContext writes the stand-in's training and test sets to trainW
// and testW in the XC format, stopping when ctx ends. Two runs with the
// same StandIn and seed write the same bytes.
func (s *StandIn) GenerateContext(ctx context.Context, seed uint64, trainW, testW io.Writer) (train, test GenStats, err error) {
	return s.generate(ctx, seed, trainW, testW, nil)
}

// generate is GenerateContext telling rep of the points written.
func (s *StandIn) generate(ctx context.Context, seed uint64, trainW, testW io.Writer, rep stage.Reporter) (train, test GenStats, err error) {
	if err = s.Check(); err != nil {
		return train, test, fmt.Errorf("data: the stand-in of %s: %w", s.Name, err)
	}
	g := newStandInGen(s, seed)
	rep = stage.Or(rep)
	if train, err = g.write(ctx, trainW, s.Train, 0, rep); err != nil {
		return
	}
	test, err = g.write(ctx, testW, s.Test, 1, rep)
	return
}

// GenerateDirContext writes train.txt and test.txt into dir as
// GenerateDirContext does for a profile: whole files or none.
func (s *StandIn) GenerateDirContext(ctx context.Context, dir string, seed uint64, overwrite bool) (train, test GenStats, err error) {
	return s.GenerateDirWith(ctx, dir, seed, GenOptions{Overwrite: overwrite})
}

// GenerateDirWith is GenerateDirContext with options, as GenerateDirWith
// is for a profile.
func (s *StandIn) GenerateDirWith(ctx context.Context, dir string, seed uint64, opt GenOptions) (train, test GenStats, err error) {
	if err = s.Check(); err != nil {
		return train, test, fmt.Errorf("data: the stand-in of %s: %w", s.Name, err)
	}
	return generateDir(dir, s.EstimateBytes(), opt.Overwrite, func(trainW, testW io.Writer) (GenStats, GenStats, error) {
		return s.generate(ctx, seed, trainW, testW, opt.Progress)
	})
}

// WriteStandInReport prints the generated sets' statistics beside those of
// the set the stand-in was fitted to (blank when it was built by hand).
// The co-occurrence is compared on the same number of points; at other
// sizes of the sets the real set's label curve is compared through shares,
// which do not depend on the number of points.
func WriteStandInReport(w io.Writer, s *StandIn, train, test GenStats) error {
	ref := Summary{}
	if s.Real != nil {
		ref = *s.Real
	}
	gen := Summary{}
	if train.Summary != nil {
		gen = *train.Summary
	}
	num := func(v float64, format string) string {
		if s.Real == nil {
			return ""
		}
		return fmt.Sprintf(format, v)
	}
	type row struct{ name, real, gen string }
	rows := []row{
		{"train points", num(float64(ref.Points), "%.0f"), fmt.Sprint(train.Points)},
		{"test points", "", fmt.Sprint(test.Points)},
		{"features", "", fmt.Sprint(s.Features)},
		{"labels", "", fmt.Sprint(s.Labels)},
		{"avg nnz per point", num(ref.AvgFeatures, "%.2f"), fmt.Sprintf("%.2f", gen.AvgFeatures)},
		{"avg labels per point", num(ref.AvgLabels, "%.2f"), fmt.Sprintf("%.2f", gen.AvgLabels)},
		{"top label share", num(ref.TopLabelShare, "%.4f"), fmt.Sprintf("%.4f", gen.TopLabelShare)},
		{"head share (top 10%)", num(ref.HeadShare, "%.4f"), fmt.Sprintf("%.4f", gen.HeadShare)},
		{"labels on ≤1 point", num(ref.LabelsOnOneOrLess, "%.4f"), fmt.Sprintf("%.4f", gen.LabelsOnOneOrLess)},
		{"labels on ≤2 points", num(ref.LabelsOnTwoOrLess, "%.4f"), fmt.Sprintf("%.4f", gen.LabelsOnTwoOrLess)},
		{"co-occurrence", num(ref.CoOccurrence, "%.4f"), fmt.Sprintf("%.4f", gen.CoOccurrence)},
		{"  on points", num(float64(ref.CoOccurrencePoints), "%.0f"), fmt.Sprint(gen.CoOccurrencePoints)},
	}
	if gen.NearDuplicatePoints > 0 {
		was := ""
		if ref.NearDuplicatePoints > 0 {
			was = fmt.Sprintf("%.4f", ref.NearDuplicates)
		}
		rows = append(rows, row{"near-duplicates", was, fmt.Sprintf("%.4f", gen.NearDuplicates)},
			row{"  on points", num(float64(ref.NearDuplicatePoints), "%.0f"), fmt.Sprint(gen.NearDuplicatePoints)})
	}
	if s.ProxyP1 > 0 && ref.ProxyP1 > 0 {
		rows = append(rows, row{"regression P@1 (fit)", fmt.Sprintf("%.4f", ref.ProxyP1), fmt.Sprintf("%.4f", s.ProxyP1)})
	}
	if s.Speed > 0 && ref.Speed > 0 {
		rows = append(rows, row{"P@1, epoch 1 (fit)", fmt.Sprintf("%.4f", ref.Speed), fmt.Sprintf("%.4f", s.Speed)})
	}
	if s.Late > 0 && ref.Late > 0 {
		rows = append(rows, row{fmt.Sprintf("best P@1, %d ep. (fit)", LateEpochs), fmt.Sprintf("%.4f", ref.Late), fmt.Sprintf("%.4f", s.Late)})
	}
	if _, err := fmt.Fprintf(w, "%-22s %12s %12s\n", s.Name, "real", "stand-in"); err != nil {
		return err
	}
	for _, r := range rows {
		if _, err := fmt.Fprintf(w, "%-22s %12s %12s\n", r.name, r.real, r.gen); err != nil {
			return err
		}
	}
	var extra string
	if s.Anchors != nil {
		var sum float64
		for k := range s.Labels {
			sum += s.Anchors.Eval((float64(k) + 0.5) / float64(s.Labels))
		}
		extra += fmt.Sprintf(", anchors (chance %.4f a label)", sum/float64(s.Labels))
	}
	if s.Vague > 0 {
		extra += fmt.Sprintf(", vague points %.3f", s.Vague)
	}
	if _, err := fmt.Fprintf(w, "model: %d topics, concentration %.3f, signal %.3f, topic share %.2f, prototypes of %d features%s, %s\n",
		s.Topics, s.Concentration, s.Signal, s.TopicShare, s.PrototypeSize, extra, valuesName(s.RowNorm)); err != nil {
		return err
	}
	if ref.NearDuplicatePoints > 0 && ref.NearDuplicates-gen.NearDuplicates > nearDuplicateMismatch {
		if _, err := fmt.Fprintf(w, "note: %.1f%% of the set's points have a near-duplicate, %.1f%% of the stand-in's: the model draws every point on its own and makes no families of near-copies\n",
			100*ref.NearDuplicates, 100*gen.NearDuplicates); err != nil {
			return err
		}
	}
	if s.Late > 0 && ref.Late > 0 {
		// The trained model's own figures say more than the regression's,
		// which the speed model does not match.
		if math.Abs(s.Speed-ref.Speed) > SpeedTolerance || math.Abs(s.Late-ref.Late) > LateTolerance {
			_, err := fmt.Fprintf(w, "note: the default model's P@1 after epoch 1 and its best of %d epochs are %.4f and %.4f on the stand-in's samples, %.4f and %.4f on the set: the fit came no closer\n",
				LateEpochs, s.Speed, s.Late, ref.Speed, ref.Late)
			return err
		}
		return nil
	}
	if d := s.ProxyP1 - ref.ProxyP1; s.ProxyP1 > 0 && ref.ProxyP1 > 0 && math.Abs(d) > proxyMismatch {
		easier := "harder"
		if d > 0 {
			easier = "easier"
		}
		_, err := fmt.Fprintf(w, "note: the fit could not bring the stand-in's regression P@1 to the set's (%.4f against %.4f): by that measure the stand-in is %s than the set\n",
			s.ProxyP1, ref.ProxyP1, easier)
		return err
	}
	return nil
}

// How fast and how far the default model learns, as the fit (package
// standin) measures it with a learner and the report compares it.
const (
	// LateEpochs is the length of the runs whose best P@1 is the late
	// target: Delicious's best of 20 epochs comes at epochs 7 to 12;
	// Bibtex's at 11 to 17, 0.011 above its best of 10 (means over
	// training seeds 1 to 5: 0.6363 and 0.6258).
	LateEpochs = 10
	// SpeedTolerance and LateTolerance are how far a stand-in's P@1 after
	// epoch 1 and its best may lie from the real set's before the fit
	// tries the speed model and the report says the fit came no closer:
	// inside the validation's 0.03, so that a kept stand-in leaves room
	// for one training seed's draw (about 1.3 and 3 standard errors of
	// the differences of the means).
	SpeedTolerance = 0.02
	LateTolerance  = 0.01
)

// nearDuplicateMismatch is how much larger the set's share of
// near-duplicates may be than the stand-in's before the report says so.
const nearDuplicateMismatch = 0.02

// proxyMismatch is how far the stand-in's regression P@1 may end from the
// set's before the report says so: twice the spread of one order's P@1
// (the fit averages the set's over three orders, see package standin).
const proxyMismatch = 0.02

func valuesName(rowNorm float64) string {
	if rowNorm == 0 {
		return "binary values"
	}
	return fmt.Sprintf("rows of L2 norm %.3g", rowNorm)
}
