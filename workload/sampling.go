package workload

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"math"
	"sync"

	"github.com/hetsgd/hetsgd/internal/memory"
	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/lsh"
	"github.com/hetsgd/hetsgd/metric"
	"github.com/hetsgd/hetsgd/model"
	"github.com/hetsgd/hetsgd/setting"
	"github.com/hetsgd/hetsgd/sparse"
)

// Sampling is the sampled output layer of SLIDE (Chen et al., MLSys 2020):
// each device keeps hash tables over its replica's output rows, and a
// point's softmax runs over its labels, the rows its hidden vector
// retrieves, and random rows its batch shares (model.Sampled). Evaluation
// stays exact, over every label.
type Sampling struct {
	Hash     string  // "dwta" (densified winner-take-all) or "srp" (signed random projections)
	K, L     int     // K hash values a table (DWTA: 3 bits each, SRP: 1), L tables
	Capacity int     // rows a bucket keeps
	Active   float64 // the share of the labels each point retrieves at most, and a batch shares at random
	// Fill is where the random rows come from: "batch", Active of the
	// labels every point of a batch shares (one GEMM); "labels" (the
	// default), those and the batch's labels, so that every point's
	// softmax holds the other points' labels as negatives
	// (model.SampledOptions.Labels); or "point", each point's own, padding
	// its set to Active when retrieval gives fewer (in SLIDE's mode,
	// SLIDE's rules instead: see slideFloor).
	Fill string
	// Update is "lazy" (only the rows a batch touches) or "dense" (every
	// weight after each batch, as SLIDE's code runs Adam).
	Update string
	// Correct lets a batch's shared rows stand for every label outside a
	// point's own rows in the softmax's normalizer (the sampled softmax's
	// correction, model.SampledOptions.Correct): with Fill labels, each
	// weighed by the inverse of its probability of being shared, from its
	// frequency in the training set and the batch size.
	Correct bool
	// Rehash is the samples a device trains between rebuilding its tables
	// from its weights, at first; Rebuild the samples between drawing new
	// hash functions. Both intervals grow by e^Growth after each: SLIDE's
	// schedule, whose updates come rarer as the weights settle.
	Rehash, Rebuild int
	Growth          float64
	// Background builds the tables on a pool of their own from a copy of
	// the weights while training goes on with the old ones, and puts them
	// in use when the next build is due (one interval later, whatever the
	// time the build took: see sampledWorker.tables); otherwise a step
	// waits for the build and uses it at once.
	Background bool
}

// DefaultSampling is SLIDE's setting for Amazon-670k: DWTA with K 6 and
// L 50 (2^18 buckets of 128 rows), 0.5% of the labels active, tables
// rebuilt from the weights every 6,400 samples and new hash functions
// every 128,000, both growing by e^0.05 a time, built in the background.
// (The paper gives the growth as e^λt without λ; 0.05 makes the 50th
// rehash come after about three Amazon-670k epochs.) Ours are the random
// rows shared by the batch with its labels, and the correction: on the
// Amazon-670k-like set they take P@1 from 0.20 to the dense layer's 0.59
// after three epochs (BENCHMARKS.md §12).
func DefaultSampling() Sampling {
	return Sampling{Hash: "dwta", K: 6, L: 50, Capacity: 128, Active: 0.005, Fill: "labels", Correct: true, Update: "lazy", Rehash: 6400, Rebuild: 128_000, Growth: 0.05, Background: true}
}

// SLIDE returns s in the mode of SLIDE's code, the only one the slide
// strategy trains: each point padded with random rows of its own, Adam over
// every weight after each batch, no correction. In this mode a point's
// active set follows SLIDE's rules rather than Active (see slideFloor): it
// keeps every row its buckets hold, and one that retrieves fewer than
// slideFloor rows is padded to slideFloor (all the labels, when there are
// fewer).
func (s Sampling) SLIDE() Sampling {
	s.Fill, s.Update, s.Correct = "point", "dense", false
	return s
}

// isSLIDE reports whether s is in SLIDE's mode, where SLIDE's active-set
// rules replace Active's budget; the other modes keep the tool's own.
func (s Sampling) isSLIDE() bool { return s == s.SLIDE() }

// SLIDE's code (HashingDeepLearning, SLIDE/Layer.cpp,
// Layer::queryActiveNodeandComputeActivations, Mode 4 of SLIDE/Config.h,
// the mode it ships) builds a point's active set of the output layer in
// three steps:
//
//  1. the point's labels, then every row found in the buckets its hidden
//     vector hashes to in the L tables (BUCKETSIZE 128 rows a bucket, in
//     Config.h): no budget caps this, and the layer's Sparsity (0.005 in
//     Config_amz.csv) is read only as "not 1", i.e. "sample this layer";
//  2. if that set holds fewer than slideThreshold (1,500) rows, random rows
//     are added, from a shuffled list of all the rows (Layer's constructor,
//     reshuffled every 6,946 batches by Network::ProcessInput through
//     Layer::updateRandomNodes) starting at a random place, until it holds
//     slideFloor (1,000), or every row;
//  3. the softmax runs over the set.
//
// Step 2 pads to 1,000 only, so the 1,500 threshold changes nothing: a set
// of 1,000 to 1,499 rows is left as it is, as it would be by a floor of
// 1,000 alone. On a label space of at most 1,000 labels (Delicious's 983)
// every point therefore trains every label, a full softmax; on
// Amazon-670K a point trains between 1,000 and L·128 = 6,400 rows.
// Evaluation (Network::predictClass) passes the test layer's Sparsity, 1
// in its config: every label is scored.
const (
	slideThreshold = 1500
	slideFloor     = 1000
)

// SLIDE's hashing of the output layer per data set: K, L and RangePow
// come from its config files (K, L and RangePow lists, output layer
// second), the hash family from the HashFunction constant of
// SLIDE/Config.h, a compile-time choice. Config_amz.csv (Amazon-670K, the
// one config its code ships now) gives K 6, L 50, RangePow 18 with
// HashFunction 2, densified winner-take-all with binsize 8, i.e. 3 bits a
// value: 18 bits, the 2^18 buckets of RangePow 18. For Delicious (983
// labels) its authors ran Simhash, HashFunction 4, with K 9, L 50 and
// RangePow 9: 9 one-bit values, the 2^9 buckets of RangePow 9. These are
// in no config file of the code we read (an older revision's
// Config_delicious.csv is for Delicious-200K); they are the settings of
// the SLIDE runs on Delicious that BENCHMARKS.md §12 compares with. Its
// Simhash (SLIDE/srp.cpp) is a sparse random projection over a third of
// the hidden units with ±1 weights; ours (lsh.NewSRP) projects on them
// all. Our bucket capacity is its BUCKETSIZE, 128.
const (
	deliciousLabels = 983
	amazon670kLabel = 670_091
)

// SLIDEFor returns s with SLIDE's hashing for a label space of labels
// rows, and the data set that setting is SLIDE's for: Delicious's for 983
// labels, Amazon-670K's for 670,091 labels, and otherwise Amazon-670K's,
// the only config SLIDE's code ships (named "" then: the tool cannot tell
// the data set from its labels).
func (s Sampling) SLIDEFor(labels int) (Sampling, string) {
	s.Capacity = 128
	switch labels {
	case deliciousLabels:
		s.Hash, s.K, s.L = "srp", 9, 50
		return s, "Delicious"
	case amazon670kLabel:
		s.Hash, s.K, s.L = "dwta", 6, 50
		return s, "Amazon-670K"
	}
	s.Hash, s.K, s.L = "dwta", 6, 50
	return s, ""
}

// Check validates the settings, each error naming its field.
func (s Sampling) Check() error {
	bits := s.K
	switch s.Hash {
	case "dwta":
		bits = 3 * s.K
	case "srp":
	default:
		return setting.Errorf("workload", "workload: {Sampling.Hash} %q: want dwta or srp", s.Hash)
	}
	if s.Fill != "batch" && s.Fill != "labels" && s.Fill != "point" {
		return setting.Errorf("workload", "workload: {Sampling.Fill} %q: want batch, labels or point", s.Fill)
	}
	if s.Update != "lazy" && s.Update != "dense" {
		return setting.Errorf("workload", "workload: {Sampling.Update} %q: want lazy or dense", s.Update)
	}
	for _, n := range []struct {
		key, field string
		v          float64
	}{
		{"lsh-k", "{Sampling.K}", float64(s.K)},
		{"lsh-l", "{Sampling.L}", float64(s.L)},
		{"lsh-capacity", "{Sampling.Capacity}", float64(s.Capacity)},
		{"lsh-active", "{Sampling.Active}", s.Active},
		{"lsh-rehash", "{Sampling.Rehash}", float64(s.Rehash)},
		{"lsh-rebuild", "{Sampling.Rebuild}", float64(s.Rebuild)},
		{"lsh-growth", "{Sampling.Growth}", s.Growth},
	} {
		if r := Ranges[n.key]; !r.Contains(n.v) {
			return setting.Errorf("workload", "workload: "+n.field+" %s", r.Need(n.v))
		}
	}
	if bits > 30 {
		return setting.Errorf("workload", "workload: {Sampling.K} %d: dwta packs 3 bits a value, at most 30 in all: need at most 10", s.K)
	}
	return nil
}

// family draws the hash functions of a table build.
func (s Sampling) family(dim int, seed uint64) (lsh.Family, error) {
	if s.Hash == "srp" {
		return lsh.NewSRP(dim, s.K, s.L, seed)
	}
	return lsh.NewDWTA(dim, s.K, s.L, seed)
}

// Tables returns the approximate top-k evaluation of networks of shape m
// through tables of these settings (Hash, K, L, Capacity; Active of the
// labels ranked at most a point), their hash functions drawn from seed.
func (s Sampling) Tables(m *model.MLP, seed uint64) (metric.Tables, error) {
	if err := s.Check(); err != nil {
		return metric.Tables{}, err
	}
	layers := m.Layers()
	if len(layers) < 2 {
		return metric.Tables{}, setting.Errorf("workload", "workload: {model.Config.Hidden} none: approximate top-k hashes the last hidden layer")
	}
	l := layers[len(layers)-1]
	fam, err := s.family(l.In, seed)
	if err != nil {
		return metric.Tables{}, setting.Errorf("workload", "workload: {Sampling.Hash} %s over a hidden layer of %d: %w", s.Hash, l.In, err)
	}
	return metric.Tables{Family: fam, Capacity: s.Capacity, Budget: s.active(l.Out), Seed: seed}, nil
}

// active is the rows each point retrieves at most, and a batch shares.
func (s Sampling) active(labels int) int { return max(1, int(math.Ceil(s.Active*float64(labels)))) }

// SetSampling makes the workload train with a sampled output layer: the
// network becomes label-major (the same parameters, the output layer
// stored a row per label), and every device's worker keeps its tables.
// It must come before Init and NewWorker.
func (w *XML) SetSampling(s Sampling) error {
	if w.backend != nil {
		return errSampledOnBackend(w.backend)
	}
	if err := s.Check(); err != nil {
		return err
	}
	cfg := w.m.Config()
	if len(cfg.Hidden) == 0 {
		return setting.Errorf("workload", "workload: {model.Config.Hidden} none: a sampled output layer needs a hidden layer before it")
	}
	if _, err := s.family(cfg.Hidden[len(cfg.Hidden)-1], 0); err != nil {
		return setting.Errorf("workload", "workload: {Sampling.Hash} %s over a hidden layer of %d: %w", s.Hash, cfg.Hidden[len(cfg.Hidden)-1], err)
	}
	cfg.LabelMajor = true
	m, err := model.New(cfg)
	if err != nil {
		return err
	}
	w.m, w.sampling, w.shared = m, &s, nil
	// Counted once here, not for every worker and estimate: it sizes a
	// batch's room for its labels (sampledSize).
	w.mostLabels = 0
	for i := range w.Train.Len() {
		w.mostLabels = max(w.mostLabels, w.Train.Y.RowNNZ(i))
	}
	w.newEvaluator()
	return nil
}

// Sampling returns the workload's sampled output layer, nil when dense.
func (w *XML) Sampling() *Sampling { return w.sampling }

// sampledWorker is a device's compute with a sampled output layer.
type sampledWorker struct {
	xmlWorker
	cfg     Sampling
	smp     *model.Sampled
	sampler *lsh.Sampler
	layer   model.Layer
	seed    uint64

	ix, spare *lsh.Index    // the tables in use, and the ones a background build fills
	snapshot  []float32     // the output layer's weights a background build reads
	done      chan struct{} // closed when the background build is over; nil: none
	// swapAt is the samples at which the background build under way comes
	// into use: when the schedule's next build is due.
	swapAt float64
	// ixDraws and spareDraws are the hash families of the tables in use
	// and of those being built: drawn from seed + draws.
	ixDraws, spareDraws uint64
	built               bool    // the first tables are built
	trained             int     // samples trained since the start
	nextHash            float64 // samples at which the next build starts
	nextDraw            float64 // samples from which a build draws new functions
	hashGap             float64
	drawGap             float64
	draws               uint64 // hash families drawn, for their seeds
	hashes              int64  // hash values computed in line since the last batch began (a table build)
	beside              int64  // the same, of a build that stands for a background one (overlapped)
	// overlapped: the builds are in line only for the virtual clock's sake,
	// and stand for background builds, whose time the training hides.
	overlapped bool
}

func (w *XML) newSampledWorker(maxBatch int, seed uint64, base *xmlWorker, background bool) (*sampledWorker, error) {
	s := *w.sampling
	// In line under the virtual clock; a build the settings put in the
	// background then costs the device nothing (LastWork), as under the
	// real clock, where it runs beside the training.
	overlapped := s.Background && !background
	s.Background = s.Background && background
	ls := w.m.Layers()
	l := ls[len(ls)-1]
	fam, err := s.family(l.In, seed)
	if err != nil {
		return nil, err
	}
	z := w.sampledSize(s, fam, maxBatch)
	active, pad, batchLabels := z.active, z.pad, z.batchLabels
	if err := memory.Check(z.bytes, fmt.Sprintf("a device's sampled output layer (%d hash tables over %d labels, %s)", s.L, l.Out, memory.Format(z.bytes))); err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	ix, err := lsh.NewIndex(fam, l.Out, s.Capacity)
	if err != nil {
		return nil, err
	}
	sampler, err := lsh.NewSampler(ix, active, seed^0x5a3b1e)
	if err != nil {
		return nil, err
	}
	smp, err := w.m.NewSampled(maxBatch, sampler, s.passOptions(&w.Train.Y, maxBatch, active, pad, batchLabels, l.Out))
	if err != nil {
		return nil, err
	}
	if err := smp.Workspace().SetDropout(w.dropout, seed); err != nil {
		return nil, err
	}
	base.ws = smp.Workspace()
	sw := &sampledWorker{xmlWorker: *base, cfg: s, smp: smp, sampler: sampler, layer: l, seed: seed, ix: ix, overlapped: overlapped,
		hashGap: float64(s.Rehash), drawGap: float64(s.Rebuild), nextDraw: float64(s.Rebuild)}
	if s.Background {
		sw.snapshot = make([]float32, l.In*l.Out)
		if sw.spare, err = lsh.NewIndex(fam, l.Out, s.Capacity); err != nil {
			return nil, err
		}
	}
	return sw, nil
}

// passOptions are the options of a sampled pass of these settings over
// labels labels, for batches of up to maxBatch points drawn from a set
// whose labels are y: active rows a point and shared at random, SLIDE's
// padding to pad rows in its mode, room for batchLabels labels a batch.
func (s Sampling) passOptions(y *sparse.CSR, maxBatch, active, pad, batchLabels, labels int) model.SampledOptions {
	o := model.SampledOptions{Fill: active, Dense: s.Update == "dense", Correct: s.Correct, Labels: s.Fill == "labels", BatchLabels: batchLabels}
	if s.isSLIDE() {
		o.Fill, o.Pad = 0, pad
	}
	if o.Labels && o.Correct {
		o.Inclusion = inclusion(y, maxBatch, active, labels)
	}
	return o
}

// sampledWorkerSize is what a sampled worker allocates for batches of up to
// maxBatch points: its active set a point, padding and shared rows, the
// labels a batch holds at most, and its bytes (tables, two sets of them
// and a copy of the output layer when built in the background, the
// sampled pass's buffers and the model's workspace).
type sampledWorkerSize struct {
	active, pad, shared, batchLabels int
	bytes                            int64
}

func (w *XML) sampledSize(s Sampling, fam lsh.Family, maxBatch int) sampledWorkerSize {
	ls := w.m.Layers()
	l := ls[len(ls)-1]
	z := sampledWorkerSize{active: s.active(l.Out)}
	z.pad = z.active // a point's set is padded up to pad rows
	if s.isSLIDE() {
		// SLIDE's rules: no budget on retrieval (every row of the point's
		// L buckets), and a set of fewer than slideFloor rows padded to it.
		z.active = min(s.L*s.Capacity, l.Out)
		z.pad = min(slideFloor, l.Out)
	}
	z.shared = z.active // the shared rows a batch holds at most
	if s.Fill == "labels" {
		z.batchLabels = min(maxBatch*w.mostLabels, l.Out)
		z.shared = min(z.active+z.batchLabels, l.Out)
	}
	tables := lsh.Bytes(fam, l.Out)
	if s.Background {
		tables = memory.Add(memory.Mul(2, tables), memory.Mul(4, int64(l.In*l.Out)))
	}
	z.bytes = memory.Add(tables, memory.Add(w.m.SampledBytes(maxBatch, max(z.active, z.pad), z.shared, kernel.Default().Workers(), lsh.SamplerBytes(l.Out, s.L, s.Capacity)), w.m.WorkspaceBytes(maxBatch, kernel.Default().Workers())))
	return z
}

// Close implements Closer: it waits for a background build under way,
// which reads the worker's snapshot and fills its spare tables, and swaps
// its tables in, so that no goroutine of the worker outlives the run.
func (x *sampledWorker) Close() {
	if x.done != nil {
		x.swap()
	}
}

// swap waits for the background build under way and puts its tables in
// use.
func (x *sampledWorker) swap() {
	<-x.done
	x.ix, x.spare, x.done = x.spare, x.ix, nil
	x.ixDraws, x.spareDraws = x.spareDraws, x.ixDraws
	x.sampler.Use(x.ix)
}

// buildPool returns the pool the background table builds run on: as many
// workers as the kernels' pool, but workers of their own. On the kernels'
// pool a build's long parts would hold the workers the training's kernels
// wait for (BENCHMARKS §12: twice the epoch's time); on a pool of its own
// it runs beside the training, the Go scheduler sharing the cores
// (GOMAXPROCS) between the two, and on every core while the training
// waits for nothing. Devices share it: each build's goroutine works on
// its own parts too.
func buildPool() *kernel.Pool {
	n := kernel.Default().Workers()
	buildMu.Lock()
	defer buildMu.Unlock()
	if builds == nil || builds.Workers() != n {
		builds = kernel.NewPool(n) // after a change of threads: the old one's goroutines stay parked
	}
	return builds
}

var (
	buildMu sync.Mutex
	builds  *kernel.Pool
)

// tables keeps the device's tables in step with its weights p: built before
// the first step, then rebuilt every Rehash samples (new hash functions
// every Rebuild), the intervals growing by e^Growth each time.
//
// A background build comes into use when the schedule's next build is
// due, one interval after it began, waiting for it then if it is not over:
// the tables are one rebuild behind the schedule, and which tables a batch
// uses depends on the samples trained only, not on how fast the build ran.
// So the run is the same whatever the cores (and its time the same when
// builds take longer than an interval's training: they are never
// skipped), and a resumed run is the run it continues. Putting each build
// in use as soon as it finished would give fresher tables by a fraction of
// an interval, at the price of a run that differs from one machine, one
// thread count and one try to the next.
func (x *sampledWorker) tables(p []float32) {
	now := float64(x.trained)
	if x.done != nil && now >= x.swapAt {
		x.swap()
	}
	if x.built && (now < x.nextHash || x.done != nil) {
		return
	}
	fam, draws := x.ix.Family(), x.ixDraws
	if x.built && now >= x.nextDraw {
		x.draws++
		draws = x.draws
		f, err := x.cfg.family(x.layer.In, x.seed+x.draws)
		if err != nil {
			panic(err) // the settings were checked when the worker was made
		}
		fam = f
		x.drawGap *= math.Exp(x.cfg.Growth)
		x.nextDraw = now + x.drawGap
	}
	w, seed := p[x.layer.W:x.layer.B], x.seed+uint64(x.trained)
	if !x.built || !x.cfg.Background {
		// In line, on the kernels' pool: the training waits for it.
		x.ix.SetPool(nil)
		x.ix.SetFamily(fam)
		x.ixDraws = draws
		x.ix.Build(w, x.layer.In, seed)
		if h := int64(x.layer.Out) * int64(x.cfg.K*x.cfg.L); x.overlapped && x.built {
			x.beside += h
		} else {
			x.hashes += h
		}
	} else {
		x.spare.SetPool(buildPool())
		x.spare.SetFamily(fam)
		x.spareDraws = draws
		kernel.Copy(x.snapshot, w)
		x.done = make(chan struct{})
		spare, snap, done, in := x.spare, x.snapshot, x.done, x.layer.In
		go func() {
			defer close(done)
			spare.Build(snap, in, seed)
		}()
	}
	if x.built {
		x.hashGap *= math.Exp(x.cfg.Growth)
	}
	x.built = true
	x.nextHash = now + x.hashGap
	x.swapAt = x.nextHash
}

// sampledState is what a checkpoint keeps of a sampled worker beyond the
// dropout stream: the sampler's stream, the schedule of table builds and
// draws of hash functions, the tables in use (their functions are drawn
// again from the worker's seed and TablesDraws, or Draws when absent: a
// checkpoint of an earlier hetsgd), and a background build's tables,
// joined, with the samples at which they come into use.
type sampledState struct {
	Dropout, Sampler, Tables             []byte
	Trained                              int
	NextHash, NextDraw, HashGap, DrawGap float64
	Draws                                uint64
	Built                                bool
	TablesDraws                          *uint64
	Pending                              []byte
	PendingDraws                         uint64
	SwapAt                               float64
	// The rows the last batch touched (model.Sampled.LastRows): a device
	// that computed a gradient the run has not applied yet marks them
	// when a resumed run applies it.
	LastFeatures, LastLabels []int32
}

// RandomState implements RandomStater: every stream and table the
// worker's next batches depend on, so that a resumed run samples as the
// run it continues. A background build under way is joined first (not
// put in use: its tables are kept apart, to come into use when the run
// would have put them).
func (x *sampledWorker) RandomState() ([]byte, error) {
	ixDraws := x.ixDraws
	st := sampledState{Trained: x.trained, NextHash: x.nextHash, NextDraw: x.nextDraw, HashGap: x.hashGap, DrawGap: x.drawGap,
		Draws: x.draws, Built: x.built, TablesDraws: &ixDraws}
	if x.done != nil {
		<-x.done
		var err error
		if st.Pending, err = x.spare.MarshalBinary(); err != nil {
			return nil, err
		}
		st.PendingDraws, st.SwapAt = x.spareDraws, x.swapAt
	}
	st.LastFeatures, st.LastLabels = x.smp.LastRows()
	var err error
	if st.Dropout, err = x.xmlWorker.RandomState(); err != nil {
		return nil, err
	}
	if st.Sampler, err = x.sampler.State(); err != nil {
		return nil, err
	}
	if x.built {
		if st.Tables, err = x.ix.MarshalBinary(); err != nil {
			return nil, err
		}
	}
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(st); err != nil {
		return nil, fmt.Errorf("workload: the sampled layer's state: %w", err)
	}
	return b.Bytes(), nil
}

// SetRandomState implements RandomStater.
func (x *sampledWorker) SetRandomState(b []byte) error {
	var st sampledState
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&st); err != nil {
		// A checkpoint of an earlier hetsgd kept the dropout stream only
		// (its file's checksum rules out damage): the tables are built
		// anew at the next batch.
		return x.xmlWorker.SetRandomState(b)
	}
	x.Close()
	if err := x.xmlWorker.SetRandomState(st.Dropout); err != nil {
		return err
	}
	if err := x.sampler.SetState(st.Sampler); err != nil {
		return fmt.Errorf("workload: the sampled layer's sampler: %w", err)
	}
	if st.Built {
		draws := st.Draws
		if st.TablesDraws != nil {
			draws = *st.TablesDraws
		}
		if err := x.restoreTables(x.ix, draws, st.Tables); err != nil {
			return err
		}
		x.ixDraws = draws
		x.sampler.Use(x.ix)
	}
	if st.Pending != nil {
		if x.spare == nil {
			// A run of the virtual clock resuming one of the real clock's:
			// the build comes into use at once, as the virtual clock's own.
			if err := x.restoreTables(x.ix, st.PendingDraws, st.Pending); err != nil {
				return err
			}
			x.ixDraws = st.PendingDraws
		} else {
			if err := x.restoreTables(x.spare, st.PendingDraws, st.Pending); err != nil {
				return err
			}
			x.spareDraws, x.swapAt = st.PendingDraws, st.SwapAt
			x.done = make(chan struct{})
			close(x.done) // joined: comes into use at SwapAt
		}
	}
	x.trained, x.nextHash, x.nextDraw, x.hashGap, x.drawGap = st.Trained, st.NextHash, st.NextDraw, st.HashGap, st.DrawGap
	x.draws, x.built = st.Draws, st.Built
	x.smp.SetLastRows(st.LastFeatures, st.LastLabels)
	return nil
}

// restoreTables fills ix with tables a checkpoint kept, their functions
// drawn again from the worker's seed and draws.
func (x *sampledWorker) restoreTables(ix *lsh.Index, draws uint64, tables []byte) error {
	fam, err := x.cfg.family(x.layer.In, x.seed+draws)
	if err != nil {
		return err
	}
	ix.SetFamily(fam)
	if err := ix.UnmarshalBinary(tables); err != nil {
		return fmt.Errorf("workload: the sampled layer's %w", err)
	}
	return nil
}

// LastWork implements Accountant: the last batch's logits, the hash
// values of its points' retrieval (K·L a point) and of a table build in
// line — the first, which the training waits for, in Hashes, and those
// that stand for background builds in Overlapped — and the parameters a
// lazy update touched.
func (x *sampledWorker) LastWork() Work {
	n := int64(x.batch.Len())
	return Work{Logits: int64(x.smp.Logits()), Hashes: x.hashes + n*int64(x.cfg.K*x.cfg.L), Overlapped: x.beside, Touched: int64(x.smp.Touched())}
}

func (x *sampledWorker) Gradient(p, g []float32) float64 {
	x.hashes, x.beside = 0, 0
	x.tables(p)
	x.trained += x.batch.Len()
	return x.smp.Gradient(p, g, &x.batch.X, &x.batch.Y)
}

// KeepZeros implements ZeroKeeper.
func (x *sampledWorker) KeepZeros() { x.smp.KeepZeros() }

// Lazy implements LazyApplier: the sampled layer's lazy rule, unless it
// updates every weight as SLIDE's code does.
func (x *sampledWorker) Lazy() bool { return x.cfg.Update == "lazy" }

// MaskLen implements LazyApplier.
func (x *sampledWorker) MaskLen() int { return x.smp.MaskLen() }

// AppendLast implements LazyApplier.
func (x *sampledWorker) AppendLast(rows []int32) []int32 { return x.smp.AppendLast(rows) }

// ApplyRows implements LazyApplier.
func (x *sampledWorker) ApplyRows(p, g []float32, rows []int32, u *kernel.Update) {
	x.smp.ApplyRows(p, g, rows, u)
}

func (x *sampledWorker) Step(p, g []float32, u *kernel.Update) float64 {
	x.hashes, x.beside = 0, 0
	x.tables(p)
	x.trained += x.batch.Len()
	return x.smp.Step(p, g, &x.batch.X, &x.batch.Y, u)
}

// inclusion returns each label's probability of being among a point's
// shared rows with the batch's labels shared: in the labels of the other
// batch−1 points, drawn at random from the training set whose labels are
// y, or among the fill random rows of the labels.
func inclusion(y *sparse.CSR, batch, fill, labels int) []float32 {
	count := make([]int, labels)
	for _, k := range y.Indices[:y.Indptr[y.Rows]] {
		count[k]++
	}
	miss := 1 - float64(min(fill, labels))/float64(labels) // not drawn at random
	out := make([]float32, labels)
	for k, c := range count {
		p := float64(c) / float64(max(y.Rows, 1)) // a point has label k
		out[k] = float32(1 - math.Pow(1-p, float64(batch-1))*miss)
	}
	return out
}
