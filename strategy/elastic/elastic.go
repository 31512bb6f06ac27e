// Package elastic is Elastic SGD, K-step model averaging: each device takes K
// local SGD steps on its own batches, then the replicas are averaged and
// every device restarts from the average. Devices wait for the slowest at
// every merge: the straggler cost that Adaptive SGD removes.
//
// When a device leaves the run (strategy.Leave) its replica leaves with it:
// the round merges once every device still in the run has taken its K
// steps (at once, if only the device that left was still working), with
// weights 1/live for them and 0 for the one gone, which the merge record
// lists with batch, learning rate, updates and weight 0.
package elastic

import (
	"github.com/hetsgd/hetsgd/strategy"
)

func init() {
	strategy.Register(strategy.Info{
		Name:      "elastic",
		Summary:   "K-step model averaging: K local steps per device, then average the replicas (Elastic SGD)",
		Evaluates: strategy.Center,
		Options: []strategy.Option{
			strategy.RoundStepsOption("k", "the Adaptive SGD paper's mega-batch is 100 batches: k = ⌈100/devices⌉",
				"local steps per device between merges (by default a mega-batch shared by the devices)"),
		},
		Defaults: strategy.Settings{Optimizer: "adam", LR: 0.01, Batch: 128, MaxLR: 0.0316}, // BENCHMARKS.md §8
		New:      New,
	})
}

// New returns the elastic strategy: rounds of K local steps, each ended by
// a merge of the replicas into their mean.
func New(cfg strategy.Config) (strategy.Strategy, error) {
	return strategy.NewRounds("elastic", cfg.Devices, cfg.Batch, int(cfg.Opt("k")), cfg.LR,
		func(w []float64) strategy.Action { return strategy.Merge(w, 0) }), nil
}
