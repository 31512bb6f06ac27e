package cost

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/hetsgd/hetsgd/internal/bounded"
	"github.com/hetsgd/hetsgd/workload"
)

// Model gives the virtual-time cost, in seconds, of a device's work as a
// linear function of what the kernels do (SPEC §2):
//
//	batch  = PerBatch + PerSparse·nnz·h₁ + PerDense·rows·Σ in·out + PerLogit·rows·L + PerWeight·|w|
//	update = PerParam·|w|
//
// where nnz is the batch's non-zeros, h₁ the first layer's width, the sum
// runs over the dense layers, L is the number of labels and |w| the number of
// parameters. The terms are the sparse first layer (forward and backward),
// the dense matrix products, the softmax over the logits, the passes over the
// weights that every gradient makes whatever the batch (clearing the first
// layer's gradient, packing the weights for the products, writing their
// gradient), and the optimizer's pass over the parameters.
//
// A sampled output layer (SLIDE's) computes logits for a batch's active
// rows only, and its batch is priced by what it did (workload.Work):
//
//	batch  = PerBatch + PerSparse·nnz·h₁ + PerDense·rows·(Σ in·out − o·L) + PerLogit·logits
//	         + PerGather·logits·o + PerHash·(hashes + BuildShare·overlapped) + PerWeight·(|w| − (o+1)·L)
//	update = PerParam·touched   (every parameter when the update was not lazy)
//
// where o is the width of the output layer's input: each logit is a dot
// product of that length over a row gathered from the layer (forward, and
// the gradient's two products backward), and each hash value reads a bin of
// the vector it hashes (a point's retrieval, a table build; of a build in
// the background, only the share of the cores it takes from the training).
// `hetsgd calibrate` measures them on the machine at hand.
type Model struct {
	PerBatch  float64 `json:"per_batch"`
	PerSparse float64 `json:"per_sparse"`
	PerDense  float64 `json:"per_dense"`
	PerLogit  float64 `json:"per_logit"`
	PerWeight float64 `json:"per_weight"`
	PerParam  float64 `json:"per_param"`
	// The sampled output layer's terms (0 in a model calibrated before
	// there were any: such a model cannot price a sampled layer).
	PerGather float64 `json:"per_gather,omitempty"`
	PerHash   float64 `json:"per_hash,omitempty"`
	// BuildShare is the share of a background table build the training
	// pays: the build takes one of the cores its kernels would use, 1/cores
	// of the machine calibrated.
	BuildShare float64 `json:"build_share,omitempty"`
	Source     string  `json:"source"` // where the figures come from
	// SampledSource is where the sampled layer's terms come from, when not
	// from Source's calibration.
	SampledSource string `json:"sampled_source,omitempty"`
}

//go:embed default_cost.json
var defaultCostJSON []byte

// DefaultCost returns the cost model shipped with hetsgd (see its Source).
func Default() Model {
	var c Model
	if err := json.Unmarshal(defaultCostJSON, &c); err != nil {
		panic("cost: bad embedded default_cost.json: " + err.Error())
	}
	return c
}

// LoadCost reads a cost model written by `hetsgd calibrate`. Its errors
// name the file, and the coefficient that is out of bounds (Validate).
func Load(path string) (Model, error) {
	b, err := bounded.ReadFile(path, 1<<20, "a cost model (hetsgd calibrate writes one)")
	if err != nil {
		return Model{}, fmt.Errorf("cost: %w", err)
	}
	var c Model
	if err := json.Unmarshal(b, &c); err != nil {
		return Model{}, fmt.Errorf("cost: cost model %s: %w", path, err)
	}
	if err := c.check(); err != nil {
		return Model{}, fmt.Errorf("cost: cost model %s: %w (measure one with hetsgd calibrate)", path, err)
	}
	return c, nil
}

// Bounds of a model's coefficients. Each is seconds of a batch or of a
// unit of work (a multiply-add, a logit, a parameter): a machine of today
// takes 1e-11 to 1e-8 s a unit, so a millisecond a unit is a machine a
// hundred thousand times slower than any, and a minute of fixed cost a
// batch is no kernel's. Within them a run's virtual clock stays far from
// the float limit (a batch of a model the memory holds costs less than
// 1e13 s), where larger ones overflow it and leave the run log without
// its times.
const (
	maxPerBatch = 60
	maxPerUnit  = 1e-3
)

// Validate reports a model that cannot be used, naming the coefficient as
// the file writes it and its bounds.
func (c Model) Validate() error {
	if err := c.check(); err != nil {
		return fmt.Errorf("cost: cost model: %w", err)
	}
	return nil
}

// check is Validate without the package's words.
func (c Model) check() error {
	for _, f := range []struct {
		name  string
		v, hi float64
		what  string
	}{
		{"per_batch", c.PerBatch, maxPerBatch, "seconds a batch"},
		{"per_sparse", c.PerSparse, maxPerUnit, "seconds a multiply-add"},
		{"per_dense", c.PerDense, maxPerUnit, "seconds a multiply-add"},
		{"per_logit", c.PerLogit, maxPerUnit, "seconds a logit"},
		{"per_weight", c.PerWeight, maxPerUnit, "seconds a weight"},
		{"per_param", c.PerParam, maxPerUnit, "seconds a parameter"},
		{"per_gather", c.PerGather, maxPerUnit, "seconds a multiply-add"},
		{"per_hash", c.PerHash, maxPerUnit, "seconds a hash value"},
		{"build_share", c.BuildShare, 1, "a share of a table build"},
	} {
		if !(f.v >= 0 && f.v <= f.hi) {
			return fmt.Errorf("%s %v: want %s in [0, %v]", f.name, f.v, f.what, f.hi)
		}
	}
	if c.PerBatch+c.PerSparse+c.PerDense+c.PerLogit == 0 {
		return errors.New("per_batch, per_sparse, per_dense and per_logit are all 0: the model charges nothing for a batch")
	}
	return nil
}

// Batch returns the cost of computing a gradient on rows points with nnz
// non-zeros.
func (c Model) Batch(s workload.Shape, rows, nnz int) float64 {
	f := features(s, rows, nnz)
	return c.PerBatch*f[0] + c.PerSparse*f[1] + c.PerDense*f[2] + c.PerLogit*f[3] + c.PerWeight*f[4]
}

// Update returns the cost of one optimizer pass over the parameters.
func (c Model) Update(s workload.Shape) float64 { return c.PerParam * s.Params }

// Sampled reports whether the model can price a sampled output layer.
func (c Model) Sampled() bool { return c.PerGather > 0 && c.PerHash > 0 }

// BatchWork returns the cost of a batch that did w beyond its shape: a
// dense batch's (Batch) for the zero Work, else a sampled output layer's.
func (c Model) BatchWork(s workload.Shape, rows, nnz int, w workload.Work) float64 {
	if w.Logits == 0 && w.Hashes == 0 && w.Overlapped == 0 {
		return c.Batch(s, rows, nnz)
	}
	out := s.Out * s.Labels // the output layer's weights
	return c.PerBatch + c.PerSparse*float64(nnz)*s.H1 + c.PerDense*float64(rows)*max(0, s.Dense-out) +
		c.PerLogit*float64(w.Logits) + c.PerGather*float64(w.Logits)*s.Out + c.PerHash*(float64(w.Hashes)+c.BuildShare*float64(w.Overlapped)) +
		c.PerWeight*max(0, s.Params-out-s.Labels)
}

// UpdateWork returns the cost of the update after a batch that did w: the
// parameters it touched, or every one.
func (c Model) UpdateWork(s workload.Shape, w workload.Work) float64 {
	if w.Touched > 0 {
		return c.PerParam * float64(w.Touched)
	}
	return c.Update(s)
}

// nFeatures is the number of regressors of a batch's cost.
const nFeatures = 5

// features are the regressors of a batch's cost, in Model field order.
func features(s workload.Shape, rows, nnz int) [nFeatures]float64 {
	return [nFeatures]float64{1, float64(nnz) * s.H1, float64(rows) * s.Dense, float64(rows) * s.Labels, s.Params}
}

// fitCost fits the batch coefficients to measured batch times by least
// squares with non-negative coefficients: a coefficient the fit makes
// negative is set to zero and the others refitted. Residuals are relative
// (each row divided by its time), so small and large batches count alike.
func fitCost(x [][nFeatures]float64, y []float64) ([nFeatures]float64, error) {
	rx := make([][nFeatures]float64, len(x))
	ry := make([]float64, len(y))
	for i := range x {
		for j := range x[i] {
			rx[i][j] = x[i][j] / y[i]
		}
		ry[i] = 1
	}
	x, y = rx, ry
	var active [nFeatures]bool
	for j := range active {
		active[j] = true
	}
	for range nFeatures {
		coef, err := leastSquares(x, y, active)
		if err != nil {
			return coef, err
		}
		worst := -1
		for j := range coef {
			if active[j] && coef[j] < 0 && (worst < 0 || coef[j] < coef[worst]) {
				worst = j
			}
		}
		if worst < 0 {
			return coef, nil
		}
		active[worst] = false
	}
	return [nFeatures]float64{}, fmt.Errorf("cost: calibration fit found no non-negative solution")
}

// leastSquares solves the normal equations over the active columns with
// Gaussian elimination (the system is nFeatures × nFeatures at most), scaling columns first.
func leastSquares(x [][nFeatures]float64, y []float64, active [nFeatures]bool) ([nFeatures]float64, error) {
	var idx []int
	for j, a := range active {
		if a {
			idx = append(idx, j)
		}
	}
	k := len(idx)
	scale := make([]float64, k)
	for a, j := range idx {
		for _, row := range x {
			scale[a] = math.Max(scale[a], math.Abs(row[j]))
		}
		if scale[a] == 0 {
			scale[a] = 1
		}
	}
	m := make([][]float64, k)
	for a := range m {
		m[a] = make([]float64, k+1)
		for b := 0; b < k; b++ {
			for _, row := range x {
				m[a][b] += row[idx[a]] / scale[a] * row[idx[b]] / scale[b]
			}
		}
		for r, row := range x {
			m[a][k] += row[idx[a]] / scale[a] * y[r]
		}
	}
	for col := 0; col < k; col++ {
		piv := col
		for r := col + 1; r < k; r++ {
			if math.Abs(m[r][col]) > math.Abs(m[piv][col]) {
				piv = r
			}
		}
		if math.Abs(m[piv][col]) < 1e-12 {
			return [nFeatures]float64{}, fmt.Errorf("cost: calibration measurements do not determine the cost model (singular system)")
		}
		m[col], m[piv] = m[piv], m[col]
		for r := 0; r < k; r++ {
			if r == col {
				continue
			}
			f := m[r][col] / m[col][col]
			for c := col; c <= k; c++ {
				m[r][c] -= f * m[col][c]
			}
		}
	}
	var coef [nFeatures]float64
	for a, j := range idx {
		coef[j] = m[a][k] / m[a][a] / scale[a]
	}
	return coef, nil
}
