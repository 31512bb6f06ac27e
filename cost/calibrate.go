package cost

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"time"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/internal/bounded"
	"github.com/hetsgd/hetsgd/internal/timing"
	"github.com/hetsgd/hetsgd/lsh"
	"github.com/hetsgd/hetsgd/progress/stage"
	"github.com/hetsgd/hetsgd/workload"

	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/model"
	"github.com/hetsgd/hetsgd/optim"
)

// Calibrate measures gradient and update times on this machine over a grid
// of model shapes, batch sizes and densities, and fits a Model to them.
// quick measures fewer shapes (for tests). Progress goes to w (may be nil).
func Calibrate(quick bool, w io.Writer) (Model, error) {
	return CalibrateContext(context.Background(), quick, w, nil)
}

// CalibrateContext is Calibrate, stopped once ctx is done: between two
// timed runs (a fraction of a second at the largest shape), with an error
// wrapping ctx.Err(), so that an interrupted calibration ends at once
// rather than after the whole grid. rep, when not nil, is told its stages
// as they go — the gradient's shapes, the update, the sampled layer's
// table build and shapes — each shape as it is timed.
func CalibrateContext(ctx context.Context, quick bool, w io.Writer, rep stage.Reporter) (Model, error) {
	rep = stage.Or(rep)
	type point struct{ inputs, hidden, outputs, rows, nnz int }
	var grid []point
	r := rand.New(rand.NewPCG(1, 2))
	hidden := []int{64, 128, 256}
	outputs := []int{159, 983, 4096, 16384}
	rows := []int{16, 64, 256}
	nnz := []int{8, 64, 256}
	inputs := []int{2000, 50000}
	for _, h := range hidden {
		for _, l := range outputs {
			for _, b := range rows {
				grid = append(grid, point{inputs: inputs[r.IntN(len(inputs))], hidden: h, outputs: l, rows: b, nnz: nnz[r.IntN(len(nnz))]})
			}
		}
	}
	if quick {
		grid = grid[:0]
		for _, p := range []point{{2000, 64, 159, 16, 8}, {2000, 128, 983, 64, 64}, {2000, 64, 983, 128, 256}, {20000, 128, 159, 64, 8}, {2000, 256, 500, 32, 64}, {20000, 64, 2000, 16, 64}} {
			grid = append(grid, p)
		}
	}
	var xs [][nFeatures]float64
	var ys []float64
	rep.Stage("timing the gradient", float64(len(grid)), "shapes")
	for i, p := range grid {
		rep.Update(float64(i), fmt.Sprintf("%d inputs, %d hidden, %d labels, batch %d", p.inputs, p.hidden, p.outputs, p.rows))
		if err := ctx.Err(); err != nil {
			return Model{}, fmt.Errorf("cost: calibration stopped after %d of %d shapes: %w", i, len(grid), err)
		}
		m, err := model.New(model.Config{Inputs: p.inputs, Hidden: []int{p.hidden}, Outputs: p.outputs})
		if err != nil {
			return Model{}, err
		}
		par, g := make([]float32, m.NumParams()), make([]float32, m.NumParams())
		m.Init(par, 1)
		x, y := workload.RandomBatch(r, p.rows, p.inputs, p.outputs, p.nnz)
		ws := m.NewWorkspace(p.rows)
		sec, err := timeIt(ctx, func() { ws.Gradient(par, g, &x, &y) }, quick)
		if err != nil {
			return Model{}, fmt.Errorf("cost: calibration stopped after %d of %d shapes: %w", i, len(grid), err)
		}
		xs = append(xs, features(workload.MLPShape(m), p.rows, x.NNZ()))
		ys = append(ys, sec)
	}
	rep.Update(float64(len(grid)), "")
	coef, err := fitCost(xs, ys)
	if err != nil {
		return Model{}, err
	}
	// The optimizer's pass over the parameters: plain SGD on a vector large
	// enough to leave the caches, as the papers' models do.
	n := 1 << 23
	if quick {
		n = 1 << 20
	}
	rep.Stage("timing the update", 0, "")
	p, g := make([]float32, n), make([]float32, n)
	opt, _ := optim.New(optim.Config{Name: "sgd"}, n)
	sec, err := timeIt(ctx, func() { opt.Step(p, g, 1e-3) }, quick)
	if err != nil {
		return Model{}, fmt.Errorf("cost: calibration stopped timing the update: %w", err)
	}
	perParam := sec / float64(n)
	c := Model{PerBatch: coef[0], PerSparse: coef[1], PerDense: coef[2], PerLogit: coef[3], PerWeight: coef[4], PerParam: perParam,
		Source: fmt.Sprintf("hetsgd calibrate, %d shapes, %s, kernel %s, %d threads, %s",
			len(grid), cpuName(), kernel.Impl(), kernel.Default().Workers(), time.Now().UTC().Format("2006-01-02"))}
	if err := c.calibrateSampled(ctx, quick, w, rep); err != nil {
		return Model{}, err
	}
	if w != nil {
		var worst float64
		fmt.Fprintf(w, "%6s %6s %6s %5s %7s  %9s %9s\n", "inputs", "hidden", "labels", "batch", "nnz/row", "measured", "model")
		for i, x := range xs {
			var pred float64
			for j := range x {
				pred += coef[j] * x[j]
			}
			worst = max(worst, math.Abs(pred-ys[i])/ys[i])
			p := grid[i]
			fmt.Fprintf(w, "%6d %6d %6d %5d %7d  %7.3fms %7.3fms\n", p.inputs, p.hidden, p.outputs, p.rows, p.nnz, ys[i]*1e3, pred*1e3)
		}
		fmt.Fprintf(w, "gradient fit: worst relative error %.0f%% over %d shapes; update: %.3g s per parameter\n", 100*worst, len(xs), perParam)
	}
	return c, c.Validate()
}

// calibrateSampled measures the sampled output layer's terms: PerHash from
// a table build (its hash values: every row, K·L each), then PerGather
// fitted, by least squares through 0, to what c's other terms leave of the
// times of sampled steps (SLIDE's layer with the tool's defaults, its
// tables built once before the timed steps, plain SGD) over a few label
// counts, widths and batch sizes.
func (c *Model) calibrateSampled(ctx context.Context, quick bool, w io.Writer, rep stage.Reporter) error {
	r := rand.New(rand.NewPCG(3, 4))
	s := workload.DefaultSampling()
	s.Background, s.Rehash, s.Rebuild = false, 1<<30, 1<<30
	type shape struct{ inputs, hidden, labels, rows, nnz int }
	grid := []shape{{20000, 64, 16384, 64, 64}, {20000, 128, 16384, 256, 64}, {50000, 128, 65536, 128, 256}, {50000, 64, 65536, 256, 64}}
	if quick {
		grid = []shape{{2000, 64, 4096, 64, 64}, {2000, 128, 4096, 128, 64}}
	}
	// PerHash: a build of the largest layer's tables.
	rep.Stage("timing the sampled layer", float64(1+len(grid)), "shapes")
	rep.Update(0, "a table build")
	last := grid[len(grid)-1]
	fam, err := lsh.NewDWTA(last.hidden, s.K, s.L, 1)
	if err != nil {
		return err
	}
	ix, err := lsh.NewIndex(fam, last.labels, s.Capacity)
	if err != nil {
		return err
	}
	wt := make([]float32, last.labels*last.hidden)
	for i := range wt {
		wt[i] = float32(r.NormFloat64())
	}
	sec, err := timeIt(ctx, func() { ix.Build(wt, last.hidden, 1) }, quick)
	if err != nil {
		return fmt.Errorf("cost: calibration stopped timing a table build: %w", err)
	}
	c.PerHash = sec / float64(last.labels*s.K*s.L)
	c.BuildShare = 1 / float64(kernel.Default().Workers())
	// PerGather: sampled steps.
	var num, den float64
	type row struct {
		p         shape
		work      workload.Work
		sec, pred float64
	}
	var rows []row
	for i, p := range grid {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("cost: calibration stopped after %d of %d sampled shapes: %w", i, len(grid), err)
		}
		rep.Update(float64(1+i), fmt.Sprintf("%d inputs, %d hidden, %d labels, batch %d", p.inputs, p.hidden, p.labels, p.rows))
		x, y := workload.RandomBatch(r, 4*p.rows, p.inputs, p.labels, p.nnz)
		set := &data.Dataset{Name: "calibration", X: x, Y: y}
		xw, err := workload.NewXML(set, set, []int{p.hidden}, 0, 0, p.rows)
		if err != nil {
			return err
		}
		if err := xw.SetSampling(s); err != nil {
			return err
		}
		wk, err := xw.NewWorker(p.rows, 1, true)
		if err != nil {
			return err
		}
		par, g := make([]float32, xw.NumParams()), make([]float32, xw.NumParams())
		xw.Init(par, 1)
		wk.Load(data.NewSampler(set.Len(), 1), p.rows)
		opt, _ := optim.New(optim.Config{Name: "sgd"}, len(par))
		step := wk.(workload.Stepper)
		sec, err := timeIt(ctx, func() { u := opt.Fused(1e-3); step.Step(par, g, &u) }, quick)
		if err != nil {
			return fmt.Errorf("cost: calibration stopped after %d of %d sampled shapes: %w", i, len(grid), err)
		}
		work := wk.(workload.Accountant).LastWork()
		sh := xw.Shape()
		n, nnz := wk.Loaded()
		z := float64(work.Logits) * sh.Out
		rest := c.BatchWork(sh, n, nnz, work) + c.UpdateWork(sh, work) // every term but the gather's, still 0
		num += (sec - rest) * z / (sec * sec)                          // relative residuals, as the dense fit's
		den += z * z / (sec * sec)
		rows = append(rows, row{p: p, work: work, sec: sec, pred: rest})
	}
	rep.Update(float64(1+len(grid)), "")
	c.PerGather = max(num/den, 1e-15)
	if w != nil {
		fmt.Fprintf(w, "%6s %6s %6s %5s %9s  %9s %9s\n", "inputs", "hidden", "labels", "batch", "logits", "measured", "model")
		var worst float64
		for _, r := range rows {
			pred := r.pred + c.PerGather*float64(r.work.Logits)*float64(r.p.hidden)
			worst = max(worst, math.Abs(pred-r.sec)/r.sec)
			fmt.Fprintf(w, "%6d %6d %6d %5d %9d  %7.3fms %7.3fms\n", r.p.inputs, r.p.hidden, r.p.labels, r.p.rows, r.work.Logits, r.sec*1e3, pred*1e3)
		}
		fmt.Fprintf(w, "sampled layer: worst relative error %.0f%% over %d shapes; %.3g s per gathered multiply-add, %.3g s per hash value\n", 100*worst, len(rows), c.PerGather, c.PerHash)
	}
	return nil
}

// timeIt returns the median time of f over a few runs, after a warm-up.
func timeIt(ctx context.Context, f func(), quick bool) (float64, error) {
	if quick {
		return timing.Median(ctx, f, 3)
	}
	return timing.Median(ctx, f, 7)
}

// cpuName returns the processor's model name where the system says it
// (Linux), else the architecture.
func cpuName() string {
	b, err := bounded.ReadFile("/proc/cpuinfo", 16<<20, "the processors' description")
	if err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				return fmt.Sprintf("%s ×%d", strings.TrimSpace(v), runtime.NumCPU())
			}
		}
	}
	return runtime.GOOS + "/" + runtime.GOARCH
}
