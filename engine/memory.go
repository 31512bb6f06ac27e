package engine

import (
	"fmt"

	"github.com/hetsgd/hetsgd/internal/memory"
	"github.com/hetsgd/hetsgd/optim"
	"github.com/hetsgd/hetsgd/setting"
	"github.com/hetsgd/hetsgd/strategy"
)

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
		// Devices computing one at a time (the virtual clock) share what
		// they can.
		work = s.WorkersBytes(maxBatch, local, cfg.Clock == Virtual)
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
