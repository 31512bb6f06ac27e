package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/hetsgd/hetsgd/cost"
	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/model"
	"github.com/hetsgd/hetsgd/optim"
	"github.com/hetsgd/hetsgd/workload"
)

// stepResult is the last line `hetsgd step` prints, for scripts.
type stepResult struct {
	Shape       string             `json:"shape"`
	Batch       int                `json:"batch"`
	Hidden      int                `json:"hidden"`
	Optimizer   string             `json:"optimizer"`
	Kernel      string             `json:"kernel"`
	BLAS        string             `json:"blas,omitempty"`
	Threads     int                `json:"threads"`
	StepMS      map[string]float64 `json:"step_ms"` // fused, split: median per step
	GemmGFLOPS  map[string]float64 `json:"sgemm_gflops"`
	PeakGFLOPS  float64            `json:"sgemm_peak_gflops"`
	DenseGFLOP  float64            `json:"dense_gflop"`
	RooflineMS  float64            `json:"roofline_ms"`
	ParamsBytes int64              `json:"parameter_bytes"`
}

func runStep(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("step", "step [--like SHAPE] [--batch N] [--hidden N] [--optimizer NAME] [--steps N]", stderr)
	like := fs.String("like", "amazon-670k", "shape: the statistics of a set the generator imitates: "+profileNames())
	batch := fs.Int("batch", 256, "batch size")
	hidden := fs.Int("hidden", 128, "hidden units")
	optName := fs.String("optimizer", "sgd", "sgd, momentum or adam")
	steps := fs.Int("steps", 5, "timed steps of each kind (the median is reported)")
	documentRanges(fs, engine.Ranges)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := checkRanges(fs, engine.Ranges); err != nil {
		return err
	}
	prof, err := data.LookupProfile(*like)
	if err != nil {
		return fmt.Errorf("--like: %w", err)
	}
	// A batch of the set's shape: its features, its labels, and its mean
	// non-zeros per point, rounded.
	s := struct{ inputs, labels, nnz int }{prof.Features, prof.Labels, int(math.Round(prof.AvgNNZ))}
	if *batch < 1 || *hidden < 1 || *steps < 1 {
		return fmt.Errorf("--batch, --hidden and --steps must be at least 1")
	}
	m, err := model.New(model.Config{Inputs: s.inputs, Hidden: []int{*hidden}, Outputs: s.labels})
	if err != nil {
		return err
	}
	n := m.NumParams()
	res := stepResult{Shape: *like, Batch: *batch, Hidden: *hidden, Optimizer: *optName, Kernel: kernel.Impl(), BLAS: kernel.BLAS(),
		Threads: kernel.Default().Workers(), StepMS: map[string]float64{}, GemmGFLOPS: map[string]float64{}, ParamsBytes: 4 * int64(n)}
	fmt.Fprintf(stdout, "shape %s: batch %d, %d inputs at %d non-zeros, hidden %d, %d labels: %.1f M parameters (%.0f MB)\n",
		*like, *batch, s.inputs, s.nnz, *hidden, s.labels, float64(n)/1e6, float64(4*n)/1e6)
	fmt.Fprintf(stdout, "kernel %s on %d threads", res.Kernel, res.Threads)
	if res.BLAS != "" {
		fmt.Fprintf(stdout, " (%s)", res.BLAS)
	}
	fmt.Fprintln(stdout)

	// The SGEMM peak of this run: the best rate of 256×128 times 128×8192
	// products in each layout (the shapes of the model's products, with the
	// output cut to 8192 labels so that it stays in cache), measured before
	// and after the steps, 20 products each time.
	r := rand.New(rand.NewPCG(1, 2))
	ga, gb, gc := randFloats(r, 256*128), randFloats(r, 128*8192), make([]float32, 256*8192)
	sgemm := func() {
		for _, layout := range []string{"NN", "TN", "NT"} {
			if ctx.Err() != nil {
				return
			}
			ta, tb := layout[0] == 'T', layout[1] == 'T'
			lda, ldb := 128, 8192
			if ta {
				lda = 256
			}
			if tb {
				ldb = 128
			}
			sec := minTime(func() { kernel.Gemm(ta, tb, 256, 8192, 128, 1, ga, lda, gb, ldb, 0, gc, 8192) }, 20)
			rate := 2 * 256 * 8192 * 128 / sec / 1e9
			res.GemmGFLOPS[layout] = max(res.GemmGFLOPS[layout], rate)
			res.PeakGFLOPS = max(res.PeakGFLOPS, rate)
		}
	}
	sgemm()
	if err := ctx.Err(); err != nil {
		return err
	}

	p, g := make([]float32, n), make([]float32, n)
	m.Init(p, 1)
	x, y := workload.RandomBatch(rand.New(rand.NewPCG(3, 4)), *batch, s.inputs, s.labels, s.nnz)
	ws := m.NewWorkspace(*batch)
	for _, mode := range []string{"fused", "split"} {
		opt, err := optim.New(optim.Config{Name: *optName}, n)
		if err != nil {
			return err
		}
		var u kernel.Update
		step := func() {
			if ctx.Err() != nil {
				return // a step takes well under a second at every shape
			}
			if mode == "fused" {
				u = opt.Fused(1e-3)
				ws.Step(p, g, &x, &y, &u)
				return
			}
			ws.Gradient(p, g, &x, &y)
			opt.Step(p, g, 1e-3)
		}
		sec := cost.MedianSeconds(step, *steps)
		if err := ctx.Err(); err != nil {
			return err
		}
		res.StepMS[mode] = sec * 1e3
		fmt.Fprintf(stdout, "step (%s): %.1f ms, %.0f samples/s\n", mode, sec*1e3, float64(*batch)/sec)
	}
	sgemm()
	if err := ctx.Err(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "sgemm 256×8192×128: NN %.0f, TN %.0f, NT %.0f GFLOP/s (peak %.0f)\n",
		res.GemmGFLOPS["NN"], res.GemmGFLOPS["TN"], res.GemmGFLOPS["NT"], res.PeakGFLOPS)
	// The dense work: forward, input gradient and weight gradient of every
	// dense layer (3 × 2·batch·hidden·labels for the papers' model).
	res.DenseGFLOP = 3 * 2 * float64(*batch) * float64(*hidden) * float64(s.labels) / 1e9
	res.RooflineMS = res.DenseGFLOP / res.PeakGFLOPS * 1e3
	fmt.Fprintf(stdout, "roofline: %.1f GFLOP at %.0f GFLOP/s = %.1f ms; the fused step takes %.2f× that\n",
		res.DenseGFLOP, res.PeakGFLOPS, res.RooflineMS, res.StepMS["fused"]/res.RooflineMS)
	b, _ := json.Marshal(res)
	fmt.Fprintf(stdout, "%s\n", b)
	return nil
}

func randFloats(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// minTime runs f once to warm up, then reps times, and returns the shortest
// duration in seconds.
func minTime(f func(), reps int) float64 {
	f()
	best := 0.0
	for i := 0; i < reps; i++ {
		start := time.Now()
		f()
		if t := time.Since(start).Seconds(); i == 0 || t < best {
			best = t
		}
	}
	return best
}

// profileNames lists the generator's profiles, for help texts.
func profileNames() string {
	var names []string
	for _, p := range data.Profiles {
		names = append(names, p.Name)
	}
	return strings.Join(names, ", ")
}
