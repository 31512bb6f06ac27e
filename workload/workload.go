package workload

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/internal/memory"
	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/metric"
	"github.com/hetsgd/hetsgd/model"
	"github.com/hetsgd/hetsgd/runlog"
	"github.com/hetsgd/hetsgd/setting"
)

// Workload is what the devices train: a model over a flat parameter vector,
// where its batches come from, and how it is scored. XML (the sparse MLP on
// a dataset) is the main one; Regression is a stochastic linear
// regression with a closed-form objective.
type Workload interface {
	Name() string
	// Size is the number of training points, which defines an epoch.
	Size() int
	NumParams() int
	Init(p []float32, seed uint64)
	// NewWorker returns the compute of one device, for batches up to
	// maxBatch; seed seeds its private random stream (dropout, sampling of
	// data-free workloads). With shared set, workers may share scratch
	// space: the caller runs them one at a time (the virtual clock), and a
	// worker does all its work in line (no table build in the background,
	// whose timing is the machine's), so that the run is deterministic.
	NewWorker(maxBatch int, seed uint64, shared bool) (Worker, error)
	Evaluate(p []float32) metric.Scores
	// Shape describes the model for the cost model.
	Shape() Shape
}

// ContextEvaluator is implemented by workloads whose evaluation can be
// stopped part-way: EvaluateContext returns an error wrapping ctx.Err()
// once ctx is done.
type ContextEvaluator interface {
	EvaluateContext(ctx context.Context, p []float32) (metric.Scores, error)
}

// Worker is one device's compute.
type Worker interface {
	// Load prepares the next n points, taking rows from the shared stream
	// (workloads without a dataset draw their own).
	Load(stream *data.Sampler, n int)
	// Gradient writes the gradient of the mean loss of the loaded batch at
	// p into g and returns that loss.
	Gradient(p, g []float32) float64
	// Loaded returns the rows and non-zeros of the loaded batch.
	Loaded() (rows, nnz int)
}

// RandomStater is implemented by workers with a random stream of their own
// (dropout masks; a data-free workload's samples): a checkpoint keeps its
// state, so that a resumed run draws what the run would have drawn.
type RandomStater interface {
	RandomState() ([]byte, error)
	SetRandomState([]byte) error
}

// PolledLoader is implemented by workers whose batch preparation comes in
// steps: LoadPolled is Load calling poll between them (a non-blocking
// collective progresses only when polled).
type PolledLoader interface {
	LoadPolled(stream *data.Sampler, n int, poll func())
}

// Stepper is implemented by workers that can apply an optimizer step inside
// their backward pass: Step computes the batch's gradient, updates p by u as
// applying u to that gradient would, and returns the loss. g is scratch.
type Stepper interface {
	Step(p, g []float32, u *kernel.Update) float64
}

// LineSearcher is implemented by workloads whose objective is known in
// closed form: Step returns the step size η minimising f(p − η·dir).
type LineSearcher interface {
	Step(p, dir []float32) float64
}

// Shape holds what the cost model needs of a network: the first layer's
// width, the multiply-adds per sample of the dense layers, the number of
// outputs and of parameters.
type Shape struct {
	H1, Dense, Labels, Params float64
	// Out is the width of the output layer's input (the last hidden
	// layer's, or the features' for a linear model): a sampled output
	// layer's logit is a dot product of that length.
	Out float64
}

// Work is what a worker's last batch did beyond what its shape says, for
// a virtual clock to price (cost.Model.BatchWork): a sampled output
// layer's logits (rows dotted with a point's hidden vector, over the
// batch), the hash values it computed (retrieval, and a table build in
// line), those of a table build that stands for one in the background
// (Overlapped: the training pays only for the core it takes), and the
// parameters its update touched (0: every one). The zero Work is a dense
// batch's.
type Work struct {
	Logits, Hashes, Overlapped, Touched int64
}

// Accountant is implemented by workers whose batches differ from their
// shape's dense cost (a sampled output layer): LastWork is the last
// batch's Work.
type Accountant interface {
	LastWork() Work
}

// XML is the sparse MLP on an XML dataset, scored by P@k on a test set.
type XML struct {
	Train, Test *data.Dataset
	m           *model.MLP
	dropout     float64
	eval        *metric.Evaluator
	propensity  []float64 // the labels' inverse propensities, for PSP@k (SetPropensity)
	evalBytes   int64     // the evaluator's workspace
	evalBatch   int
	evalPoints  int
	shared      *model.Workspace
	sampling    *Sampling // the sampled output layer's settings; nil: dense
	mostLabels  int       // with sampling: the most labels a training point has
	backend     Backend   // nil: the host's cores
}

// DefaultDropout and DefaultHidden are the network hetsgd trains when none
// is named (hetsgd train's defaults, chosen on Bibtex and Delicious; see
// BENCHMARKS.md §1): one hidden layer of 128 ReLU units, dropout 0.2.
const DefaultDropout = 0.2

// Ranges are the accepted values of the workloads' numeric settings, by
// the name of the setting (its flag): engine.Ranges holds them with the
// run's, for the tool's checks and help.
var Ranges = map[string]setting.Range{
	"dim":     setting.Count(1, 1<<24),
	"hidden":  setting.Count(1, 1<<20),
	"dropout": {Min: 0, Max: 1, MaxOpen: true},
	// The sampled output layer (Sampling).
	"lsh-k":        setting.Count(1, 30),
	"lsh-l":        setting.Count(1, 1000),
	"lsh-capacity": setting.Count(1, setting.MaxCount),
	"lsh-active":   {Min: 0, MinOpen: true, Max: 1},
	"lsh-rehash":   setting.Count(1, setting.MaxCount),
	"lsh-rebuild":  setting.Count(1, setting.MaxCount),
	"lsh-growth":   setting.Between(0, 10),
}

// DefaultHidden returns the default hidden layer widths.
func DefaultHidden() []int { return []int{128} }

// NewXML builds the workload: hidden layer widths, training dropout, and
// evalPoints test points per evaluation (0: all), scored in batches of
// evalBatch rows.
func NewXML(train, test *data.Dataset, hidden []int, dropout float64, evalPoints, evalBatch int) (*XML, error) {
	if err := data.CheckPair(train, test); err != nil {
		return nil, err
	}
	m, err := model.New(model.Config{Inputs: train.Features(), Hidden: hidden, Outputs: train.Labels()})
	if err != nil {
		return nil, err
	}
	if !(dropout >= 0 && dropout < 1) {
		return nil, setting.Errorf("workload", "workload: {NewXML.dropout} %v: need a probability in [0, 1)", dropout)
	}
	// The evaluator's workspace is the first large allocation: the model's
	// size comes from the data's header, which may claim anything.
	rows := metric.EvalRows(test, evalBatch, evalPoints)
	evalBytes := m.WorkspaceBytes(rows, kernel.Default().Workers())
	params := memory.Mul(4, int64(m.NumParams()))
	if err := memory.Check(memory.Add(evalBytes, params), fmt.Sprintf("the model of %d features, hidden layers %v and %d labels (%d parameters, %s; evaluation workspace %s)",
		train.Features(), hidden, train.Labels(), m.NumParams(), memory.Format(params), memory.Format(evalBytes))); err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	w := &XML{Train: train, Test: test, m: m, dropout: dropout, evalBytes: evalBytes, evalBatch: evalBatch, evalPoints: evalPoints}
	w.newEvaluator()
	if err := w.SetPropensity(metric.DefaultPropensity); err != nil {
		return nil, err
	}
	return w, nil
}

// newEvaluator makes the workload's evaluator for its network, scoring
// PSP@k with its propensities (when set).
func (w *XML) newEvaluator() {
	w.eval = metric.NewEvaluator(w.m, w.Test, w.evalBatch, w.evalPoints)
	w.eval.SetPropensity(w.propensity) // sized by the test set's labels, as the training set's (CheckPair)
}

// SetPropensity sets the propensity model of the PSP@k and PSnDCG@k its
// evaluations score, fitted to the training set's label counts
// (NewXML's: metric.DefaultPropensity).
func (w *XML) SetPropensity(p metric.Propensity) error {
	w.propensity = p.Inverse(&w.Train.Y)
	return w.eval.SetPropensity(w.propensity)
}

func (w *XML) Name() string                       { return w.Train.Name }
func (w *XML) Size() int                          { return w.Train.Len() }
func (w *XML) NumParams() int                     { return w.m.NumParams() }
func (w *XML) Init(p []float32, seed uint64)      { w.m.Init(p, seed) }
func (w *XML) Evaluate(p []float32) metric.Scores { return w.eval.Evaluate(p) }

// EvaluateContext implements ContextEvaluator.
func (w *XML) EvaluateContext(ctx context.Context, p []float32) (metric.Scores, error) {
	return w.eval.EvaluateContext(ctx, p)
}

func (w *XML) Shape() Shape { return MLPShape(w.m) }

// MLP returns the network the workload trains.
func (w *XML) MLP() *model.MLP { return w.m }

func MLPShape(m *model.MLP) Shape {
	ls := m.Layers()
	s := Shape{H1: float64(ls[0].Out), Labels: float64(m.Config().Outputs), Params: float64(m.NumParams()), Out: float64(ls[len(ls)-1].In)}
	for _, l := range ls[1:] {
		s.Dense += float64(l.In * l.Out)
	}
	return s
}

func (w *XML) NewWorker(maxBatch int, seed uint64, shared bool) (Worker, error) {
	if w.backend != nil {
		return w.newBackendWorker(maxBatch, seed)
	}
	if w.sampling != nil {
		// Every device keeps its own tables and sampled buffers.
		return w.newSampledWorker(maxBatch, seed, &xmlWorker{set: w.Train, batch: data.NewBatch(w.Train, maxBatch)}, !shared)
	}
	ws := w.shared
	if !shared || ws == nil || ws.Cap() < maxBatch {
		ws = w.m.NewWorkspace(maxBatch)
		if shared {
			w.shared = ws
		}
	}
	// Each device draws its own dropout masks; a shared workspace draws them
	// for whichever device computes, in the deterministic order of the
	// virtual clock.
	if err := ws.SetDropout(w.dropout, seed); err != nil {
		return nil, err
	}
	return &xmlWorker{set: w.Train, ws: ws, batch: data.NewBatch(w.Train, maxBatch)}, nil
}

type xmlWorker struct {
	set   *data.Dataset
	ws    *model.Workspace
	batch *data.Batch
}

func (x *xmlWorker) Load(s *data.Sampler, n int) { x.LoadPolled(s, n, nil) }

func (x *xmlWorker) LoadPolled(s *data.Sampler, n int, poll func()) {
	if n > x.batch.Cap() {
		panic(fmt.Sprintf("engine: a batch of %d for a device sized for %d", n, x.batch.Cap()))
	}
	x.batch.DrawPolled(x.set, s, n, poll)
}

func (x *xmlWorker) Gradient(p, g []float32) float64 {
	return x.ws.Gradient(p, g, &x.batch.X, &x.batch.Y)
}

func (x *xmlWorker) Step(p, g []float32, u *kernel.Update) float64 {
	return x.ws.Step(p, g, &x.batch.X, &x.batch.Y, u)
}

func (x *xmlWorker) Loaded() (int, int) { return x.batch.Len(), x.batch.X.NNZ() }

func (x *xmlWorker) RandomState() ([]byte, error)  { return x.ws.DropoutState() }
func (x *xmlWorker) SetRandomState(b []byte) error { return x.ws.SetDropoutState(b) }

// Describer is implemented by workloads that say what they are, for a
// run's identity and its log's config record.
type Describer interface {
	// Kind names the workload for a run's identity: the same for runs
	// that train the same model on the same data, wherever it was loaded
	// from.
	Kind() string
	// Describe fills in the workload's part of a run log's config record;
	// lineSearch says whether the run takes the workload's line search.
	Describe(rec *runlog.Config, lineSearch bool)
}

// Closer is implemented by workers with work of their own under way (a
// sampled layer's table build in the background): Close waits for it to
// end. A run closes its workers when it ends.
type Closer interface {
	Close()
}

// LazyApplier is implemented by workers whose Step updates only the rows a
// batch touches (Lazy). A strategy that all-reduces gradients keeps that
// rule: each device's last Gradient touched the rows AppendLast lists
// (numbered 0 to MaskLen − 1), the engine marks them in a mask of MaskLen
// entries that it sums as the gradients are and lists the rows whose
// entries are nonzero — the union of the rows the devices touched — and
// ApplyRows applies the summed gradient to that list. On one device
// Gradient, AppendLast and ApplyRows are its Step, bit for bit.
type LazyApplier interface {
	Lazy() bool
	MaskLen() int
	AppendLast(rows []int32) []int32
	ApplyRows(p, g []float32, rows []int32, u *kernel.Update)
}

// ZeroKeeper is implemented by workers whose Gradient need not clear what
// is zero already (the sampled layer's output gradient outside the rows
// of its last batch): KeepZeros, called before a batch, vouches that the
// gradient buffer is the one the worker's last batch wrote and that
// nothing has written into it since.
type ZeroKeeper interface {
	KeepZeros()
}

// LazyRecordBytes is what one of the MaskLen rows of the engine's record
// of a lazy step takes (a float32 in its mask and an int32 in its list),
// for a Sizer's estimate; the engine fails to compile if its record
// differs.
const LazyRecordBytes = 8

// SampledOutput is implemented by workloads whose output layer may be
// sampled: Sampling returns its settings, nil for a dense layer.
type SampledOutput interface {
	Sampling() *Sampling
}

// LossScored marks workloads without P@k, whose evaluations are compared
// by their loss.
type LossScored interface {
	ScoredByLoss()
}

// Kind implements Describer: "xml", whatever the path its data came from
// (the data is the same by its counts in the run's identity and by its
// content in the tool's checks).
func (w *XML) Kind() string { return "xml" }

// Describe implements Describer.
func (w *XML) Describe(rec *runlog.Config, _ bool) {
	rec.Workload = "xml"
	rec.TrainPoints, rec.TestPoints, rec.Features, rec.Labels = w.Train.Len(), w.Test.Len(), w.Train.Features(), w.Train.Labels()
	rec.Hidden, rec.Dropout = append([]int{}, w.m.Config().Hidden...), w.dropout
	rec.EvalPoints = w.evalPoints
	if w.sampling != nil {
		// A struct of numbers, strings and booleans: it always marshals.
		rec.Sampled, _ = json.Marshal(w.sampling)
	}
}
