//go:build cuda

package gpu

import (
	"fmt"

	"github.com/hetsgd/hetsgd/cuda"
	"github.com/hetsgd/hetsgd/model"
	"github.com/hetsgd/hetsgd/sparse"
	"github.com/hetsgd/hetsgd/workload"
)

// Backend is a GPU as a workload's backend: each device a replica (Net)
// on it, computing the gradient at the host's parameters, which cross to
// the GPU each step (and the gradient back).
type Backend struct{ GPU *cuda.GPU }

// Name implements workload.Backend.
func (b Backend) Name() string { return "gpu (" + b.GPU.Device().String() + ")" }

// NewGradienter implements workload.Backend: a replica of m on the GPU,
// refused before it allocates when it would not fit the GPU's free
// memory (the devices' replicas share the GPU).
func (b Backend) NewGradienter(m *model.MLP, maxRows, maxNNZ, maxLabels int, d *model.Dropout) (workload.Gradienter, error) {
	have, err := b.GPU.FreeMemory()
	if err != nil {
		return nil, err
	}
	if need := Bytes(m, maxRows, maxNNZ, maxLabels); uint64(need) > have {
		return nil, fmt.Errorf("gpu: a replica of %d parameters for batches of %d rows needs %.1f GiB, more than the %.1f GiB free on %s",
			m.NumParams(), maxRows, float64(need)/(1<<30), float64(have)/(1<<30), b.GPU.Device().Name)
	}
	n, err := NewNet(b.GPU, m, maxRows, maxNNZ, maxLabels)
	if err != nil {
		return nil, err
	}
	if err := n.SetDropout(d); err != nil {
		n.Close()
		return nil, err
	}
	return gradienter{n}, nil
}

type gradienter struct{ n *Net }

func (g gradienter) Gradient(p, grad []float32, x, y *sparse.CSR) (float64, error) {
	if err := g.n.SetParams(p); err != nil {
		return 0, err
	}
	if err := g.n.Load(x, y); err != nil {
		return 0, err
	}
	loss, err := g.n.Gradient()
	if err != nil {
		return 0, err
	}
	return loss, g.n.GradientOut(grad)
}

func (g gradienter) Close() { g.n.Close() }
