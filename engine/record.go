package engine

import (
	"encoding/json"
	"fmt"
	"runtime"

	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/runlog"
	"github.com/hetsgd/hetsgd/strategy"
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
	opts, err := info.Resolve(strategy.Config{Devices: cfg.Devices, Batch: cfg.Batch, LR: cfg.LR, DatasetSize: w.Size(), Options: cfg.Options})
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
	switch x := w.(type) {
	case *XML:
		rec.Workload = "xml"
		rec.TrainPoints, rec.TestPoints, rec.Features, rec.Labels = x.Train.Len(), x.Test.Len(), x.Train.Features(), x.Train.Labels()
		rec.Hidden, rec.Dropout = append([]int{}, x.m.Config().Hidden...), x.dropout
	case *Regression:
		rec.Workload = "regression"
		if cfg.LineSearch {
			rec.StepRule = x.Rule
			if rec.StepRule == "" {
				rec.StepRule = RuleDistance
			}
		}
	}
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
