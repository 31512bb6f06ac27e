package workload

import (
	"fmt"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/model"
	"github.com/hetsgd/hetsgd/sparse"
)

// A Backend computes the devices' gradients of an XML workload somewhere
// other than on the host's cores: on a GPU (package gpu). Each device
// gets a Gradienter of its own. The parameters, the optimizer's state and
// the strategies' arithmetic stay the host's, so every strategy, clock,
// checkpoint and fault works as it does on the CPU; the price is that a
// step carries the parameters to the backend and the gradient back.
type Backend interface {
	// Name says what computes, for the run log ("gpu: NVIDIA H200").
	Name() string
	// NewGradienter returns a device's compute for m, for batches of up
	// to maxRows rows, maxNNZ input non-zeros and maxLabels labels, its
	// dropout masks drawn from d (nil: none).
	NewGradienter(m *model.MLP, maxRows, maxNNZ, maxLabels int, d *model.Dropout) (Gradienter, error)
}

// A Gradienter is a device's compute on a Backend: Gradient is
// model.Workspace.Gradient's.
type Gradienter interface {
	Gradient(p, g []float32, x, y *sparse.CSR) (float64, error)
	Close()
}

// SetBackend makes the devices compute on b. The sampled output layer
// runs on the host's cores only.
func (w *XML) SetBackend(b Backend) error {
	if w.sampling != nil {
		return errSampledOnBackend(b)
	}
	w.backend = b
	return nil
}

// errSampledOnBackend refuses a sampled output layer on backend b, in
// whichever order the two are set.
func errSampledOnBackend(b Backend) error {
	return fmt.Errorf("workload: the sampled output layer (--output lsh) runs on the host's cores only, not on the %s backend", b.Name())
}

// Backend returns the backend set, nil for the host's cores.
func (w *XML) Backend() Backend { return w.backend }

// newBackendWorker is NewWorker on the backend.
func (w *XML) newBackendWorker(maxBatch int, seed uint64) (Worker, error) {
	d, err := model.NewDropout(w.dropout, seed)
	if err != nil {
		return nil, err
	}
	gr, err := w.backend.NewGradienter(w.m, maxBatch, max(1, w.Train.X.MaxNNZ(maxBatch)), max(1, w.Train.Y.MaxNNZ(maxBatch)), d)
	if err != nil {
		return nil, err
	}
	return &backendWorker{draw: &xmlWorker{set: w.Train, batch: data.NewBatch(w.Train, maxBatch)}, gr: gr, dropout: d, name: w.backend.Name()}, nil
}

// backendWorker is a device's Worker on a backend. It is no Stepper: the
// host applies the update, with the optimizer's state it keeps. Its
// batches are drawn as the host's workers draw theirs (draw: no workspace).
type backendWorker struct {
	draw    *xmlWorker
	gr      Gradienter
	dropout *model.Dropout
	name    string
}

func (x *backendWorker) Load(s *data.Sampler, n int) { x.draw.Load(s, n) }
func (x *backendWorker) LoadPolled(s *data.Sampler, n int, poll func()) {
	x.draw.LoadPolled(s, n, poll)
}

// Gradient panics when the backend fails mid-run (a GPU lost, say): its
// memory was allocated when the worker was made, so a failure here is the
// device's, not the run's settings'.
func (x *backendWorker) Gradient(p, g []float32) float64 {
	loss, err := x.gr.Gradient(p, g, &x.draw.batch.X, &x.draw.batch.Y)
	if err != nil {
		panic(fmt.Errorf("workload: the %s backend failed: %w", x.name, err))
	}
	return loss
}

func (x *backendWorker) Loaded() (int, int) { return x.draw.Loaded() }
func (x *backendWorker) Close()             { x.gr.Close() }

func (x *backendWorker) RandomState() ([]byte, error)  { return x.dropout.State() }
func (x *backendWorker) SetRandomState(b []byte) error { return x.dropout.SetState(b) }
