package workload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/internal/hugepage"
	"github.com/hetsgd/hetsgd/internal/timing"
	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/lsh"
	"github.com/hetsgd/hetsgd/model"
	"github.com/hetsgd/hetsgd/optim"
	"github.com/hetsgd/hetsgd/sparse"
)

// StepShape is the training step TimeStep times: a random batch of
// Profile's shape — its features, its labels and its mean non-zeros per
// point, rounded — through an MLP of one hidden layer.
type StepShape struct {
	Profile   data.Profile
	Batch     int
	Hidden    int
	Optimizer string // optim.Names
	Steps     int    // timed steps of each kind; the median is reported
	// Output is the output layer timed: "dense" (fused and split steps),
	// "lsh" (the sampled layer's step at its defaults, DefaultSampling)
	// or "both".
	Output string
	// Precision is the dense layer's GEMM precision timed: kernel.FP32,
	// kernel.BF16 (where the CPU has bf16 products; else the step says so
	// and times float32), or "both", the two side by side. The sampled
	// layer's row products are float32 in every case.
	Precision string
}

// StepTiming is what TimeStep measured (the last line `hetsgd step`
// prints, for scripts).
type StepTiming struct {
	Shape       string             `json:"shape"`
	Batch       int                `json:"batch"`
	Hidden      int                `json:"hidden"`
	Optimizer   string             `json:"optimizer"`
	Kernel      string             `json:"kernel"`
	BLAS        string             `json:"blas,omitempty"`
	Threads     int                `json:"threads"`
	StepMS      map[string]float64 `json:"step_ms"`             // fused, split (+"-bf16" for bf16 products), sampled: median per step
	TablesMS    float64            `json:"tables_ms,omitempty"` // the sampled layer's first table build
	GemmGFLOPS  map[string]float64 `json:"sgemm_gflops"`
	PeakGFLOPS  float64            `json:"sgemm_peak_gflops"`
	DenseGFLOP  float64            `json:"dense_gflop"`
	RooflineMS  float64            `json:"roofline_ms"`
	ParamsBytes int64              `json:"parameter_bytes"`
}

// stepLR is the learning rate of timed steps: any rate costs the same.
const stepLR = 1e-3

// TimeStep times one training step — forward, loss, backward and update —
// at s's shape, both fused (the output layer updated inside its backward
// pass, as the engine runs a local step) and split (the whole gradient,
// then the update, as gradient-aggregation strategies need it), and sets
// it against the step's roofline: its dense work at this run's SGEMM peak.
// It says what it measures, line by line, on w as it goes, and stops once
// ctx is done with ctx's error.
func TimeStep(ctx context.Context, s StepShape, w io.Writer) (StepTiming, error) {
	if s.Batch < 1 || s.Hidden < 1 || s.Steps < 1 {
		return StepTiming{}, errors.New("workload: a timed step needs a batch, hidden units and steps of at least 1")
	}
	switch s.Output {
	case "":
		s.Output = "dense"
	case "dense", "lsh", "both":
	default:
		return StepTiming{}, fmt.Errorf("workload: a timed step's output layer %q: want dense, lsh or both", s.Output)
	}
	precisions := []string{kernel.FP32}
	switch s.Precision {
	case "", kernel.FP32:
	case kernel.BF16:
		precisions = []string{kernel.BF16}
	case "both":
		precisions = []string{kernel.FP32, kernel.BF16}
	default:
		return StepTiming{}, fmt.Errorf("workload: a timed step's precision %q: want %s, %s or both", s.Precision, kernel.FP32, kernel.BF16)
	}
	// The kernels run at float32 outside the timed dense steps (the SGEMM
	// peak is float32's), and at the caller's precision afterwards.
	defer kernel.UsePrecision(kernel.Precision())
	kernel.UsePrecision(kernel.FP32)
	inputs, labels, nnz := s.Profile.Features, s.Profile.Labels, int(math.Round(s.Profile.AvgNNZ))
	m, err := model.New(model.Config{Inputs: inputs, Hidden: []int{s.Hidden}, Outputs: labels})
	if err != nil {
		return StepTiming{}, err
	}
	n := m.NumParams()
	res := StepTiming{Shape: s.Profile.Name, Batch: s.Batch, Hidden: s.Hidden, Optimizer: s.Optimizer, Kernel: kernel.Impl(), BLAS: kernel.BLAS(),
		Threads: kernel.Default().Workers(), StepMS: map[string]float64{}, GemmGFLOPS: map[string]float64{}, ParamsBytes: 4 * int64(n)}
	fmt.Fprintf(w, "shape %s: batch %d, %d inputs at %d non-zeros, hidden %d, %d labels: %.1f M parameters (%.0f MB)\n",
		res.Shape, s.Batch, inputs, nnz, s.Hidden, labels, float64(n)/1e6, float64(4*n)/1e6)
	fmt.Fprintf(w, "kernel %s on %d threads", res.Kernel, res.Threads)
	if res.BLAS != "" {
		fmt.Fprintf(w, " (%s)", res.BLAS)
	}
	fmt.Fprintln(w)

	// The peak is measured before and after the steps: the machine's load
	// may change while they run, and the better of the two is its rate.
	if err := gemmRates(ctx, &res); err != nil {
		return StepTiming{}, err
	}
	p, g := hugepage.Floats(n), hugepage.Floats(n) // as a run allocates them
	m.Init(p, 1)
	x, y := RandomBatch(rand.New(rand.NewPCG(3, 4)), s.Batch, inputs, labels, nnz)
	if s.Output != "lsh" {
		ws := m.NewWorkspace(s.Batch)
		for _, mode := range []string{"fused", "split"} {
			for _, prec := range precisions {
				if bf, _ := kernel.UsePrecision(prec); prec == kernel.BF16 && !bf {
					fmt.Fprintf(w, "bf16: the %s kernels have no bf16 products (they need AVX512-BF16); not timed\n", kernel.Impl())
					continue
				}
				opt, err := optim.New(optim.Config{Name: s.Optimizer}, n)
				if err != nil {
					return StepTiming{}, err
				}
				sec, err := timing.Median(ctx, denseStep(ws, opt, p, g, &x, &y, mode == "fused"), s.Steps)
				if err != nil {
					return StepTiming{}, err
				}
				key, what := mode, mode
				if prec == kernel.BF16 {
					key += "-bf16"
					what += ", bf16 on " + kernel.Impl()
				}
				res.StepMS[key] = sec * 1e3
				fmt.Fprintf(w, "step (%s): %.1f ms, %.0f samples/s\n", what, sec*1e3, float64(s.Batch)/sec)
			}
		}
		kernel.UsePrecision(kernel.FP32)
	}
	if s.Output != "dense" {
		if err := timeSampled(ctx, s, m, p, g, &x, &y, &res, w); err != nil {
			return StepTiming{}, err
		}
	}
	if err := gemmRates(ctx, &res); err != nil {
		return StepTiming{}, err
	}
	fmt.Fprintf(w, "sgemm 256×8192×128: NN %.0f, TN %.0f, NT %.0f GFLOP/s (peak %.0f)\n",
		res.GemmGFLOPS["NN"], res.GemmGFLOPS["TN"], res.GemmGFLOPS["NT"], res.PeakGFLOPS)
	// The dense work: forward, input gradient and weight gradient of every
	// dense layer (3 × 2·batch·hidden·labels for the papers' model).
	res.DenseGFLOP = 3 * 2 * float64(s.Batch) * float64(s.Hidden) * float64(labels) / 1e9
	res.RooflineMS = res.DenseGFLOP / res.PeakGFLOPS * 1e3
	if _, ok := res.StepMS["fused"]; ok {
		fmt.Fprintf(w, "roofline: %.1f GFLOP at %.0f GFLOP/s = %.1f ms; the fused step takes %.2f× that\n",
			res.DenseGFLOP, res.PeakGFLOPS, res.RooflineMS, res.StepMS["fused"]/res.RooflineMS)
	}
	return res, nil
}

// timeSampled times the sampled layer's step at its defaults (the
// network made label-major, the same parameters): its first table build,
// from p, then a step with the batch's labels among the shared rows, the
// correction and the lazy update, as `--output lsh` trains; the
// background rebuilds of a run are not in it.
func timeSampled(ctx context.Context, s StepShape, dense *model.MLP, p, g []float32, x, y *sparse.CSR, res *StepTiming, w io.Writer) error {
	cfg := dense.Config()
	cfg.LabelMajor = true
	m, err := model.New(cfg)
	if err != nil {
		return err
	}
	m.Init(p, 1)
	sm := DefaultSampling()
	l := m.Layers()[len(m.Layers())-1]
	fam, err := sm.family(l.In, 1)
	if err != nil {
		return err
	}
	ix, err := lsh.NewIndex(fam, l.Out, sm.Capacity)
	if err != nil {
		return err
	}
	res.TablesMS = timing.Best(func() { ix.Build(p[l.W:l.B], l.In, 1) }, 1) * 1e3
	if err := ctx.Err(); err != nil {
		return err
	}
	active := sm.active(l.Out)
	smp, err := lsh.NewSampler(ix, active, 1)
	if err != nil {
		return err
	}
	// The labels' chances of being shared, from the batch's labels as if
	// they were the training set's.
	pass, err := m.NewSampled(s.Batch, smp, sm.passOptions(y, s.Batch, active, active, y.NNZ(), l.Out))
	if err != nil {
		return err
	}
	opt, err := optim.New(optim.Config{Name: s.Optimizer}, len(p))
	if err != nil {
		return err
	}
	// Fault in the gradient's and the moments' pages, as a run's first
	// epoch does: the lazy update's rows would otherwise pay a first touch
	// in the timed steps.
	clear(g)
	if u := opt.Fused(stepLR); u.Rule == kernel.AdamRule || u.Rule == kernel.MomentumRule {
		clear(u.M)
		clear(u.V)
	}
	var u kernel.Update
	step := func() {
		u = opt.Fused(stepLR)
		pass.Step(p, g, x, y, &u)
	}
	step()
	sec, err := timing.Median(ctx, step, s.Steps)
	if err != nil {
		return err
	}
	res.StepMS["sampled"] = sec * 1e3
	fmt.Fprintf(w, "tables (DWTA K %d, L %d over %d labels): %.1f ms\n", sm.K, sm.L, l.Out, res.TablesMS)
	fmt.Fprintf(w, "step (sampled, up to %d labels retrieved a point): %.1f ms, %.0f samples/s\n", active, sec*1e3, float64(s.Batch)/sec)
	return nil
}

// denseStep returns one training step of ws on the batch x, y: fused (the
// optimizer's update inside the backward pass) or split (the gradient into
// g, then the update).
func denseStep(ws *model.Workspace, opt optim.Optimizer, p, g []float32, x, y *sparse.CSR, fused bool) func() {
	if fused {
		var u kernel.Update
		return func() {
			u = opt.Fused(stepLR)
			ws.Step(p, g, x, y, &u)
		}
	}
	return func() {
		ws.Gradient(p, g, x, y)
		opt.Step(p, g, stepLR)
	}
}

// gemmRates raises res's SGEMM rates to the best rate of 256×128 times
// 128×8192 products in each layout — the shapes of the model's products,
// with the output cut to 8192 labels so that it stays in cache — over 20
// products each.
func gemmRates(ctx context.Context, res *StepTiming) error {
	r := rand.New(rand.NewPCG(1, 2))
	a, b, c := randFloats(r, 256*128), randFloats(r, 128*8192), make([]float32, 256*8192)
	for _, layout := range []string{"NN", "TN", "NT"} {
		if err := ctx.Err(); err != nil {
			return err
		}
		ta, tb := layout[0] == 'T', layout[1] == 'T'
		lda, ldb := 128, 8192
		if ta {
			lda = 256
		}
		if tb {
			ldb = 128
		}
		sec := timing.Best(func() { kernel.Gemm(ta, tb, 256, 8192, 128, 1, a, lda, b, ldb, 0, c, 8192) }, 20)
		rate := 2 * 256 * 8192 * 128 / sec / 1e9
		res.GemmGFLOPS[layout] = max(res.GemmGFLOPS[layout], rate)
		res.PeakGFLOPS = max(res.PeakGFLOPS, rate)
	}
	return ctx.Err()
}

func randFloats(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}
