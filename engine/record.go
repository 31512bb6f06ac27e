package engine

import (
	"encoding/json"
	"fmt"
	"runtime"

	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/runlog"
	"github.com/hetsgd/hetsgd/strategy"
	"github.com/hetsgd/hetsgd/workload"
)

// Record returns the run log's config record of a run of cfg (with its
// defaults filled in) on w: the settings the engine runs with, every
// strategy option as resolved for this run, the data's shape and the
// machine. The caller adds what only it knows: the data's name and files,
// the tool's version, the command and the settings as a config file holds
// them. Under the virtual clock it holds nothing that varies from run to
// run.
func Record(cfg Config, w Workload) (runlog.Config, error) {
	info, err := strategy.Lookup(cfg.Strategy)
	if err != nil {
		return runlog.Config{}, err
	}
	opts, err := info.Resolve(cfg.strategyConfig(w.Size()))
	if err != nil {
		return runlog.Config{}, err
	}
	speeds := cfg.Speeds
	if speeds == nil {
		speeds = make([]float64, cfg.Devices)
		for i := range speeds {
			speeds[i] = 1
		}
	}
	rec := runlog.Config{
		Event: "config", Schema: runlog.Schema,
		Batch: cfg.Batch, LR: cfg.LR, Optimizer: cfg.Optimizer.Name,
		Momentum: cfg.Optimizer.Momentum, WeightDecay: cfg.Optimizer.WeightDecay,
		Epochs: cfg.Epochs, TimeBudget: cfg.TimeBudget, EvalEvery: cfg.EvalEvery, Seed: cfg.Seed,
		Strategy: cfg.Strategy, Options: opts, Devices: cfg.Devices, Speeds: speeds,
		Clock: string(cfg.Clock), LineSearch: cfg.LineSearch, Prep: cfg.Prep, NoOverlap: cfg.NoOverlap,
		Threads: kernel.Default().Workers(), Kernel: kernel.Impl(), BLAS: kernel.BLAS(), CPUs: runtime.NumCPU(), GoVersion: runtime.Version(),
		Note: runlog.TrainSecondsNote,
	}
	if len(cfg.Faults) > 0 {
		if rec.Faults, err = json.Marshal(cfg.Faults); err != nil {
			return rec, fmt.Errorf("engine: %w", err)
		}
	}
	if cfg.World != nil && cfg.World.Size() > 1 {
		rec.Ranks, rec.PerRank = cfg.World.Size(), cfg.Devices/cfg.World.Size()
	}
	if d, ok := w.(workload.Describer); ok {
		d.Describe(&rec, cfg.LineSearch)
	}
	rec.UpdateNote = updateNote(cfg, info, w)
	if rec.Hidden == nil {
		rec.Hidden = []int{}
	}
	if cfg.Clock == Virtual {
		rec.Noise, rec.Network, rec.TimingOnly = cfg.Noise, &cfg.Net, cfg.TimingOnly
		if rec.Cost, err = json.Marshal(cfg.Cost); err != nil {
			return rec, fmt.Errorf("engine: %w", err)
		}
	}
	return rec, nil
}

// lazyNote is the config record's update_note for a run whose sampled
// layer updates lazily: where the rule holds (executor.allReduce,
// device.Step) and where it cannot.
const lazyNote = "the sampled layer's lazy rule holds for the devices' optimizer steps: a local step, an all-reduce of gradients (the rows any device's batch touched) and an op's step on a device's own gradient update only the rows their batches touched; a centre's own update — a merge, an outer optimizer's step, a parameter server's commit — covers the whole vector, and one with a momentum moves rows no batch touched"

// updateNote says where the workers' lazy rule (LazyApplier) holds in a run
// of cfg on w ("" when its output layer is dense or updates every weight):
// lazyNote, and for a strategy whose commits are its whole update that
// none of its updates is a device's optimizer step. (No sampled workload
// has a line search.)
func updateNote(cfg Config, info strategy.Info, w Workload) string {
	ws, ok := w.(workload.SampledOutput)
	if !ok || ws.Sampling() == nil || ws.Sampling().Update != "lazy" {
		return ""
	}
	if info.OwnUpdate {
		return lazyNote + "; " + cfg.Strategy + "'s commits are its whole update, so the rule does not hold for it"
	}
	return lazyNote
}

// DoneRecord returns the run log's done record of res: its length, its best
// evaluation, whether it diverged, and Layered SGD's account of its
// all-reduces across ranks. The caller adds what only it knows (an
// interruption, the wall time and memory of the process).
func (res *Result) DoneRecord() runlog.Done {
	d := runlog.Done{Event: "done", Samples: res.Samples, TrainSeconds: res.TrainSeconds, Merges: len(res.Merges), Diverged: res.Diverged, Diverging: res.Diverging, Stalled: res.Stalled, StoppedEarly: res.StoppedEarly}
	if b, ok := runlog.Best(res.Evals); ok {
		d.BestP1, d.BestP1TrainSeconds, d.BestP1Epoch = b.P1, b.TrainSeconds, b.Epoch
	}
	if l := res.Layered; l != nil && l.Steps > 0 {
		n := float64(l.Steps)
		d.Layered = &runlog.Layered{Steps: l.Steps, ReduceMS: 1e3 * l.Reduce / n, OverlapMS: 1e3 * l.Overlap / n,
			WaitMS: 1e3 * l.Wait / n, BroadcastMS: 1e3 * l.Broadcast / n}
	}
	return d
}
