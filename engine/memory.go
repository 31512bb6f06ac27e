package engine

import (
	"fmt"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/internal/memory"
	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/optim"
	"github.com/hetsgd/hetsgd/setting"
	"github.com/hetsgd/hetsgd/strategy"
)

// Sizer is implemented by workloads that can say what they allocate, so
// that a run is refused before it allocates more than the machine has.
type Sizer interface {
	// WorkerBytes is the memory of one NewWorker(maxBatch, …).
	WorkerBytes(maxBatch int) int64
	// FixedBytes is what the workload holds whatever the run: its data and
	// its evaluation buffers.
	FixedBytes() int64
}

// CheckMemory refuses a run of cfg on w that would allocate more than this
// process may use, before anything is allocated. Run checks it too;
// commands call it first so that a refused run leaves no output behind.
func CheckMemory(cfg Config, w Workload) error {
	cfg, err := cfg.WithDefaults()
	if err != nil {
		return err
	}
	info, err := strategy.Lookup(cfg.Strategy)
	if err != nil {
		return err
	}
	ranks := 1
	if cfg.World != nil {
		ranks = max(1, cfg.World.Size())
	}
	scfg := cfg.strategyConfig(w.Size())
	return checkMemory(cfg, info, w, cfg.Devices/ranks, info.MaxBatchOf(scfg))
}

// sharedVectors counts the parameter-sized vectors the executor keeps
// besides the devices' own: the initial model, the centre, the previous
// centre, a scratch vector and the ops' vector beside the centre.
const sharedVectors = 5

// checkMemory estimates what a run of cfg on w allocates on this process —
// the devices' replicas, gradients and optimizer state, the strategy's
// centre models, the workspaces for batches of maxBatch, the data — and
// refuses it, with the figures, when it exceeds what the process may use
// (package memory).
func checkMemory(cfg Config, info strategy.Info, w Workload, local, maxBatch int) error {
	n := int64(w.NumParams())
	perDevice := int64(0)
	if !cfg.TimingOnly {
		perDevice = 2 + int64(optim.StateVectors(cfg.Optimizer.Name)) // replica, gradient, state
		if info.DeviceState {
			perDevice++ // its ops' vector per device (Replica.State)
		}
	}
	vectors := memory.Add(memory.Mul(int64(local), perDevice), sharedVectors)
	model := memory.Mul(memory.Mul(4, n), vectors)
	var work, fixed int64
	if s, ok := w.(Sizer); ok {
		workers := int64(local)
		if cfg.Clock == Virtual {
			workers = 1 // devices computing one at a time share one workspace
		}
		work = memory.Mul(workers, s.WorkerBytes(maxBatch))
		fixed = s.FixedBytes()
	}
	total := memory.Add(memory.Add(model, work), fixed)
	what := fmt.Sprintf("this run (%d devices: %d copies of the model's %d parameters, %s; workspaces for batches of %d, %s; data and evaluation, %s)",
		local, vectors, n, memory.Format(model), maxBatch, memory.Format(work), memory.Format(fixed))
	if err := memory.Check(total, what); err != nil {
		return setting.Errorf("engine", "engine: %w: use fewer {Config.Devices}, a smaller {Config.Batch} or {model.Config.Hidden}, or {Config.Optimizer.Name} sgd", err)
	}
	return nil
}

// datasetBytes is the memory of a loaded data set.
func datasetBytes(d *data.Dataset) int64 {
	if d == nil {
		return 0
	}
	b := int64(0)
	for _, m := range []*struct {
		ip, ix, v int
	}{{len(d.X.Indptr), len(d.X.Indices), len(d.X.Values)}, {len(d.Y.Indptr), len(d.Y.Indices), len(d.Y.Values)}} {
		b += 8*int64(m.ip) + 4*int64(m.ix) + 4*int64(m.v)
	}
	return b
}

// WorkerBytes implements Sizer: the model's workspace and the batch buffer.
func (w *XML) WorkerBytes(maxBatch int) int64 {
	return w.m.WorkspaceBytes(maxBatch, kernel.Default().Workers())
}

// FixedBytes implements Sizer: both data sets and the evaluator.
func (w *XML) FixedBytes() int64 {
	return datasetBytes(w.Train) + datasetBytes(w.Test) + w.evalBytes
}

// WorkerBytes implements Sizer: each worker's batch of noise vectors.
func (r *Regression) WorkerBytes(maxBatch int) int64 {
	return memory.Mul(4, memory.Mul(int64(maxBatch), int64(r.D)))
}

// FixedBytes implements Sizer: the evaluation's and line search's vectors.
func (r *Regression) FixedBytes() int64 { return memory.Mul(8, int64(r.D)) }
