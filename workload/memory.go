package workload

import (
	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/internal/memory"
	"github.com/hetsgd/hetsgd/kernel"
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
