package data

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/hetsgd/hetsgd/internal/atomicfile"
	"github.com/hetsgd/hetsgd/progress/stage"
	"github.com/hetsgd/hetsgd/setting"
)

// Profile gives the statistics a synthetic dataset imitates.
type Profile struct {
	Name              string
	Features, Labels  int
	Train, Test       int
	AvgNNZ, AvgLabels float64
	ZipfLabels        float64 // exponent of the label-frequency power law
	// TopLabelShare, when set, replaces ZipfLabels by the exponent that puts
	// the most frequent label on this share of the points, fitted to the
	// (scaled) label count and labels per point: with 75 labels a point, a
	// fixed exponent of 0.9 puts the head label on almost every point.
	TopLabelShare float64
}

// Profiles are the datasets the generator imitates, with the statistics of
// the real sets (the Extreme Classification Repository's tables for the
// large ones; the files in the standard splits for Bibtex and Delicious).
var Profiles = []Profile{
	{Name: "amazon-670k", Features: 135909, Labels: 670091, Train: 490449, Test: 153025, AvgNNZ: 75.7, AvgLabels: 5.4, ZipfLabels: 0.9},
	// Delicious-200k's head: the share of Delicious's training points that
	// carry its most frequent tag (0.402, the same bookmarking service's
	// tags); the set's own label counts are not in its table.
	{Name: "delicious-200k", Features: 782585, Labels: 205443, Train: 196606, Test: 100095, AvgNNZ: 301, AvgLabels: 75, ZipfLabels: 0.9, TopLabelShare: 0.4},
	{Name: "bibtex", Features: 1836, Labels: 159, Train: 4880, Test: 2515, AvgNNZ: 68.5, AvgLabels: 2.4, ZipfLabels: 0.9},
	{Name: "delicious", Features: 500, Labels: 983, Train: 12920, Test: 3185, AvgNNZ: 18.5, AvgLabels: 19.0, ZipfLabels: 0.9},
}

// LookupProfile returns the named profile.
func LookupProfile(name string) (Profile, error) {
	for _, p := range Profiles {
		if p.Name == name {
			return p, nil
		}
	}
	return Profile{}, fmt.Errorf("data: unknown profile %q (have %s)", name, strings.Join(ProfileNames(), ", "))
}

// ProfileNames returns the names of Profiles, in their order, for help
// texts and messages.
func ProfileNames() []string {
	names := make([]string, len(Profiles))
	for i, p := range Profiles {
		names[i] = p.Name
	}
	return names
}

// Scaled returns the profile with points, features and labels multiplied by
// scale (at least 16 features and labels, 8 test points); per-point counts
// keep their targets, capped by the scaled dimensions.
func (p Profile) Scaled(scale float64) Profile {
	if scale == 1 {
		return p
	}
	s := func(n, least int) int { return max(least, int(math.Round(float64(n)*scale))) }
	q := p
	q.Name = fmt.Sprintf("%s×%g", p.Name, scale)
	q.Features, q.Labels = s(p.Features, 16), s(p.Labels, 16)
	q.Train, q.Test = s(p.Train, 16), s(p.Test, 8)
	q.AvgNNZ = math.Min(p.AvgNNZ, float64(q.Features)/4)
	q.AvgLabels = math.Min(p.AvgLabels, float64(q.Labels)/4)
	return q
}

// WithPoints returns the profile with n training points and the test points
// in the profile's proportion (at least 8), its features, labels and
// per-point counts unchanged: the whole label space at a size that trains
// in minutes.
func (p Profile) WithPoints(n int) Profile {
	q := p
	q.Name = fmt.Sprintf("%s, %d points", p.Name, n)
	q.Test = max(8, int(math.Round(float64(n)*float64(p.Test)/float64(max(p.Train, 1)))))
	q.Train = n
	return q
}

// The generative model. Every label l owns a prototype: protoSize feature
// ids drawn uniformly (a per-label stream, so nothing is stored). A point
// draws its labels from the power law; its features are, for a fraction
// signal of them, drawn from its labels' prototypes, and for the rest, noise
// drawn from a power law over features (the common words of a text
// collection). Values are positive and rows have unit L2 norm, like the
// tf-idf rows of the real sets. The labels are therefore learnable from the
// features, more so for frequent labels, as in real extreme classification.
const (
	protoSize = 64
	protoZipf = 0.7
	signal    = 0.35
	nnzSigma  = 0.5 // log-normal spread of the points' feature counts
)

// GenStats describes what was generated, for comparison with the profile.
type GenStats struct {
	Profile                  Profile
	Points                   int
	AvgNNZ, AvgLabels        float64
	UsedLabels               int
	MaxLabelFreq             int
	LabelsWithOnePointOrLess int
	// Summary holds the label curve's and co-occurrence's statistics;
	// stand-ins fill it (the profile generator does not).
	Summary *Summary
}

// Generate writes a synthetic training and test set imitating p to trainW
// and testW in the XC format. Two runs with the same profile and seed write
// the same bytes.
func Generate(p Profile, seed uint64, trainW, testW io.Writer) (train, test GenStats, err error) {
	return GenerateContext(context.Background(), p, seed, trainW, testW)
}

// GenerateContext is Generate stopping when ctx ends, with an error that
// wraps ctx.Err(); the writers then hold part of a set.
func GenerateContext(ctx context.Context, p Profile, seed uint64, trainW, testW io.Writer) (train, test GenStats, err error) {
	return generate(ctx, p, seed, trainW, testW, nil)
}

// generate is GenerateContext telling rep of the points written.
func generate(ctx context.Context, p Profile, seed uint64, trainW, testW io.Writer, rep stage.Reporter) (train, test GenStats, err error) {
	g := newGenerator(p, seed)
	rep = stage.Or(rep)
	if train, err = g.write(ctx, trainW, p.Train, 0, rep); err != nil {
		return
	}
	test, err = g.write(ctx, testW, p.Test, 1, rep)
	return
}

// GenerateDir writes train.txt and test.txt into dir (created if needed).
// Existing files are not overwritten unless overwrite is set.
func GenerateDir(dir string, p Profile, seed uint64, overwrite bool) (train, test GenStats, err error) {
	return GenerateDirContext(context.Background(), dir, p, seed, overwrite)
}

// GenerateDirContext is GenerateDir stopping when ctx ends, with an error
// that wraps ctx.Err(). A run that fails or is stopped leaves dir as it
// was: both files are written under temporary names and take their names
// only once both are whole, so that dir holds no partial file, and a new
// train.txt beside an old test.txt only if the process dies between the two
// renames.
func GenerateDirContext(ctx context.Context, dir string, p Profile, seed uint64, overwrite bool) (train, test GenStats, err error) {
	return GenerateDirWith(ctx, dir, p, seed, GenOptions{Overwrite: overwrite})
}

// GenerateDirWith is GenerateDirContext with options: it tells
// opt.Progress of the points as they are written. Sets that would not fit
// on the disk are refused before any is written (CheckSpace).
func GenerateDirWith(ctx context.Context, dir string, p Profile, seed uint64, opt GenOptions) (train, test GenStats, err error) {
	return generateDir(dir, p.EstimateBytes(), opt.Overwrite, func(trainW, testW io.Writer) (GenStats, GenStats, error) {
		return generate(ctx, p, seed, trainW, testW, opt.Progress)
	})
}

// generateDir runs gen on train.txt and test.txt in dir, whole files or
// none (see GenerateDirContext), once a set of about bytes is known to fit
// (checkSpace).
func generateDir(dir string, bytes float64, overwrite bool, gen func(trainW, testW io.Writer) (GenStats, GenStats, error)) (train, test GenStats, err error) {
	if err = checkSpace(dir, bytes); err != nil {
		return train, test, err
	}
	if err = os.MkdirAll(dir, 0o755); err != nil {
		return train, test, fmt.Errorf("data: %w", err)
	}
	paths := [2]string{filepath.Join(dir, "train.txt"), filepath.Join(dir, "test.txt")}
	if !overwrite {
		// Both are checked before either is started, so that an existing
		// test.txt does not cost a written train.txt.
		for _, path := range paths {
			if _, err := os.Lstat(path); err == nil {
				return train, test, setting.Errorf("data", "data: %s already exists (choose another folder, or overwrite it: {GenerateDirContext.overwrite})", path)
			}
		}
	}
	var files [2]*atomicfile.File
	for i, path := range paths {
		if files[i], err = atomicfile.Create(path, overwrite); err != nil {
			return train, test, fmt.Errorf("data: %w", err)
		}
		defer files[i].Abort() // does nothing after Commit
	}
	if train, test, err = gen(files[0], files[1]); err != nil {
		return train, test, err
	}
	if err := files[0].Commit(); err != nil {
		return train, test, fmt.Errorf("data: %w", err)
	}
	if err := files[1].Commit(); err != nil {
		// The new train.txt is in place and test.txt is not: remove it
		// rather than leave a pair that does not belong together.
		os.Remove(paths[0])
		return train, test, fmt.Errorf("data: %w (removed the new %s too: the folder holds no half dataset)", err, paths[0])
	}
	// Earlier versions wrote through NAME.partial and left it when
	// stopped; it is ours to remove.
	for _, path := range paths {
		os.Remove(path + ".partial")
	}
	return train, test, nil
}

type generator struct {
	p          Profile
	seed       uint64
	labelCDF   []float64
	featureCDF []float64
	labelIDs   []int32 // popularity rank → label id
	protoCDF   []float64
	protoIDs   []int32 // prototype feature rank → feature id
}

func newGenerator(p Profile, seed uint64) *generator {
	g := &generator{p: p, seed: seed, labelCDF: zipfCDF(p.Labels, p.LabelExponent()), featureCDF: zipfCDF(p.Features, 1)}
	// Label ids are a seeded permutation of popularity ranks, so that
	// frequent labels are spread over the id space rather than sitting at
	// 0, 1, 2, ...
	g.labelIDs = make([]int32, p.Labels)
	for i := range g.labelIDs {
		g.labelIDs[i] = int32(i)
	}
	r := rand.New(rand.NewPCG(seed, 0x1abe1))
	r.Shuffle(len(g.labelIDs), func(i, j int) { g.labelIDs[i], g.labelIDs[j] = g.labelIDs[j], g.labelIDs[i] })
	// Prototype features follow a milder power law over another permutation
	// of the features than the noise, so labels share some features.
	g.protoCDF = zipfCDF(p.Features, protoZipf)
	g.protoIDs = make([]int32, p.Features)
	for i := range g.protoIDs {
		g.protoIDs[i] = int32(i)
	}
	r.Shuffle(len(g.protoIDs), func(i, j int) { g.protoIDs[i], g.protoIDs[j] = g.protoIDs[j], g.protoIDs[i] })
	return g
}

// LabelExponent is the exponent s of the labels' power law, P(rank k) ∝
// k^−s: ZipfLabels, or with TopLabelShare the s at which a point's labels
// (AvgLabels distinct draws) include the head label with that probability,
// 1 − (1 − P(1))^AvgLabels = TopLabelShare. The draws are distinct, so the
// head's share comes out a little above the target (data gen reports it).
func (p Profile) LabelExponent() float64 {
	if p.TopLabelShare <= 0 || p.TopLabelShare >= 1 || p.Labels < 2 || p.AvgLabels < 1 {
		return p.ZipfLabels
	}
	// The head's probability per draw that gives the share.
	want := 1 - math.Pow(1-p.TopLabelShare, 1/p.AvgLabels)
	head := func(s float64) float64 {
		sum := 0.0
		for k := 1; k <= p.Labels; k++ {
			sum += math.Pow(float64(k), -s)
		}
		return 1 / sum
	}
	lo, hi := 0.0, 4.0 // head(s) grows with s, from 1/Labels at s = 0
	if head(lo) >= want {
		return lo
	}
	for range 40 {
		mid := (lo + hi) / 2
		if head(mid) < want {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// zipfCDF returns the cumulative distribution of P(i) ∝ 1/(i+1)^s.
func zipfCDF(n int, s float64) []float64 {
	cdf := make([]float64, n)
	var sum float64
	for i := range cdf {
		sum += math.Pow(float64(i+1), -s)
		cdf[i] = sum
	}
	for i := range cdf {
		cdf[i] /= sum
	}
	return cdf
}

func draw(cdf []float64, u float64) int32 {
	return int32(min(sort.SearchFloat64s(cdf, u), len(cdf)-1))
}

// Mix is a stateless 64-bit hash (splitmix64 finaliser) of two words: the
// seed of a stream derived from a seed and a stream's number.
func Mix(a, b uint64) uint64 {
	z := a*0x9e3779b97f4a7c15 + b
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// genCheck is how many points are generated between checks of the context
// (and reports of the progress): milliseconds of work at the largest
// profiles.
const genCheck = 1024

// splitNames are the stages of a generator, by split.
var splitNames = [2]string{"generating the training split", "generating the test split"}

func (g *generator) write(ctx context.Context, w io.Writer, n int, split uint64, rep stage.Reporter) (GenStats, error) {
	st := GenStats{Profile: g.p, Points: n}
	rep.Stage(splitNames[split], float64(n), "points")
	freq := make([]int32, g.p.Labels)
	bw := bufio.NewWriterSize(w, 1<<20)
	fmt.Fprintf(bw, "%d %d %d\n", n, g.p.Features, g.p.Labels)
	var (
		labels []int32
		feats  []int32
		vals   []float32
		seen   = map[int32]struct{}{}
		line   []byte
		nnz    int64
		nlab   int64
	)
	for i := 0; i < n; i++ {
		if i%genCheck == 0 {
			if err := ctx.Err(); err != nil {
				return st, fmt.Errorf("data: generating %s: stopped at point %d of %d: %w", g.p.Name, i, n, err)
			}
			rep.Update(float64(i), "")
		}
		r := rand.New(rand.NewPCG(g.seed, Mix(split+1, uint64(i))))
		// Labels: 1 + Poisson(avg − 1), distinct, from the power law.
		k := min(g.p.Labels, 1+poisson(r, g.p.AvgLabels-1))
		labels = labels[:0]
		clear(seen)
		for len(labels) < k {
			l := g.labelIDs[draw(g.labelCDF, r.Float64())]
			if _, dup := seen[l]; !dup {
				seen[l] = struct{}{}
				labels = append(labels, l)
			}
		}
		// Features: a log-normal count around the average, a signal share
		// from the labels' prototypes, the rest noise.
		m := int(math.Round(g.p.AvgNNZ * math.Exp(nnzSigma*r.NormFloat64()-nnzSigma*nnzSigma/2)))
		m = max(1, min(m, g.p.Features/2))
		feats, vals = feats[:0], vals[:0]
		clear(seen)
		add := func(f int32, v float32) {
			if _, dup := seen[f]; !dup {
				seen[f] = struct{}{}
				feats = append(feats, f)
				vals = append(vals, v)
			}
		}
		fromProto := int(math.Round(signal * float64(m)))
		for j := 0; j < fromProto; j++ {
			l := labels[j%len(labels)]
			slot := uint64(r.IntN(protoSize))
			u := float64(Mix(g.seed^uint64(l)<<20, slot)>>11) / (1 << 53)
			f := g.protoIDs[draw(g.protoCDF, u)]
			add(f, float32(1+r.Float64()))
		}
		for tries := 0; len(feats) < m && tries < 4*m; tries++ {
			add(draw(g.featureCDF, r.Float64()), float32(0.5+r.Float64()))
		}
		var norm float64
		for _, v := range vals {
			norm += float64(v) * float64(v)
		}
		inv := float32(1 / math.Sqrt(norm))
		slices.Sort(labels)
		for _, l := range labels {
			freq[l]++
		}
		line = appendXCLine(line[:0], labels, feats, vals, inv, 4)
		if _, err := bw.Write(line); err != nil {
			return st, fmt.Errorf("data: writing synthetic data: %w", err)
		}
		nnz += int64(len(feats))
		nlab += int64(len(labels))
	}
	if err := bw.Flush(); err != nil {
		return st, fmt.Errorf("data: writing synthetic data: %w", err)
	}
	st.AvgNNZ = float64(nnz) / float64(max(n, 1))
	st.AvgLabels = float64(nlab) / float64(max(n, 1))
	for _, c := range freq {
		if c > 0 {
			st.UsedLabels++
		}
		if c <= 1 {
			st.LabelsWithOnePointOrLess++
		}
		st.MaxLabelFreq = max(st.MaxLabelFreq, int(c))
	}
	return st, nil
}

// poisson draws from a Poisson distribution of mean lambda (Knuth's method
// for small means, a rounded normal approximation above 30).
func poisson(r *rand.Rand, lambda float64) int {
	if lambda <= 0 {
		return 0
	}
	if lambda > 30 {
		return max(0, int(math.Round(lambda+math.Sqrt(lambda)*r.NormFloat64())))
	}
	l, k, p := math.Exp(-lambda), 0, 1.0
	for {
		p *= r.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

// WriteReport prints generated statistics beside the profile's targets.
func WriteReport(w io.Writer, train, test GenStats) error {
	p := train.Profile
	_, err := fmt.Fprintf(w, `%-22s %12s %12s
%-22s %12d %12d
%-22s %12d %12d
%-22s %12d %12d
%-22s %12d %12d
%-22s %12.2f %12.2f
%-22s %12.2f %12.2f
%-22s %12s %12d
%-22s %12s %12d
%-22s %12s %12d
`,
		p.Name, "target", "generated",
		"train points", p.Train, train.Points,
		"test points", p.Test, test.Points,
		"features", p.Features, p.Features,
		"labels", p.Labels, p.Labels,
		"avg nnz per point", p.AvgNNZ, train.AvgNNZ,
		"avg labels per point", p.AvgLabels, train.AvgLabels,
		"labels used (train)", "", train.UsedLabels,
		"most frequent label", "", train.MaxLabelFreq,
		"labels on ≤1 point", "", train.LabelsWithOnePointOrLess)
	return err
}

// GenerateSets generates a synthetic train/test pair in memory.
func GenerateSets(p Profile, seed uint64) (train, test *Dataset, err error) {
	var tr, te bytes.Buffer
	if _, _, err = Generate(p, seed, &tr, &te); err != nil {
		return nil, nil, err
	}
	if train, err = ReadXC(&tr, p.Name+"/train"); err != nil {
		return nil, nil, err
	}
	if test, err = ReadXC(&te, p.Name+"/test"); err != nil {
		return nil, nil, err
	}
	return train, test, nil
}

// appendXCLine appends one point as an XC line: its labels, comma
// separated, then each feature as id:value, the value scale·vals[j] (as a
// float32 product) with digits significant digits (-1: as many as the
// float32 needs to read back exactly), and a newline.
func appendXCLine(line []byte, labels, feats []int32, vals []float32, scale float32, digits int) []byte {
	for j, l := range labels {
		if j > 0 {
			line = append(line, ',')
		}
		line = strconv.AppendInt(line, int64(l), 10)
	}
	for j, f := range feats {
		line = append(line, ' ')
		line = strconv.AppendInt(line, int64(f), 10)
		line = append(line, ':')
		line = strconv.AppendFloat(line, float64(vals[j]*scale), 'g', digits, 32)
	}
	return append(line, '\n')
}
