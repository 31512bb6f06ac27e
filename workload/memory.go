package workload

import (
	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/internal/memory"
	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/model"
)

// Sizer is implemented by workloads that can say what they allocate, so
// that a run is refused before it allocates more than the machine has.
type Sizer interface {
	// WorkersBytes is the memory of n workers made by
	// NewWorker(maxBatch, …, shared).
	WorkersBytes(maxBatch, n int, shared bool) int64
	// FixedBytes is what the workload holds whatever the run: its data and
	// its evaluation buffers.
	FixedBytes() int64
}

// datasetBytes is the memory of a loaded data set.
func datasetBytes(d *data.Dataset) int64 {
	if d == nil {
		return 0
	}
	return d.Bytes()
}

// WorkersBytes implements Sizer: each worker's model workspace (one for
// them all when they share it), or each one's sampled output layer, which
// no worker shares (built in line when they share the rest, as under the
// virtual clock), and, for lazy updates, the engine's record of the rows
// the batches touched (LazyRecordBytes a row, once for the workers).
func (w *XML) WorkersBytes(maxBatch, n int, shared bool) int64 {
	if w.sampling != nil {
		s := *w.sampling
		s.Background = s.Background && !shared
		fam, err := s.family(w.m.Layers()[len(w.m.Layers())-1].In, 0)
		if err != nil {
			return 0 // the workers' own check refuses the settings
		}
		b := memory.Mul(int64(n), w.sampledSize(s, fam, maxBatch).bytes)
		if s.Update == "lazy" {
			b = memory.Add(b, memory.Mul(LazyRecordBytes, int64(model.MaskLen(w.m))))
		}
		return b
	}
	if shared {
		n = min(n, 1)
	}
	return memory.Mul(int64(n), w.m.WorkspaceBytes(maxBatch, kernel.Default().Workers()))
}

// FixedBytes implements Sizer: both data sets and the evaluator.
func (w *XML) FixedBytes() int64 {
	return datasetBytes(w.Train) + datasetBytes(w.Test) + w.evalBytes
}

// WorkersBytes implements Sizer: each worker's batch of noise vectors.
func (r *Regression) WorkersBytes(maxBatch, n int, _ bool) int64 {
	return memory.Mul(int64(n), memory.Mul(4, memory.Mul(int64(maxBatch), int64(r.D))))
}

// FixedBytes implements Sizer: the evaluation's and line search's vectors.
func (r *Regression) FixedBytes() int64 { return memory.Mul(8, int64(r.D)) }
