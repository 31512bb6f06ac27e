// Package elastic is Elastic SGD, K-step model averaging: each device takes K
// local SGD steps on its own batches, then the replicas are averaged and
// every device restarts from the average. Devices wait for the slowest at
// every merge: the straggler cost that Adaptive SGD removes.
package elastic

import (
	"math"

	"github.com/hetsgd/hetsgd/strategy"
)

func init() {
	strategy.Register(strategy.Info{
		Name:      "elastic",
		Summary:   "K-step model averaging: K local steps per device, then average the replicas (Elastic SGD)",
		Evaluates: strategy.Center,
		Options: []strategy.Option{
			{Name: "k", Derive: func(c strategy.Config, _ map[string]float64) float64 {
				return math.Ceil(strategy.MegaBatch(c.DatasetSize, c.Batch) / float64(c.Devices))
			}, Formula: "⌈min(100, ⌈N/(2·b)⌉)/devices⌉, N training points",
				Paper: "the Adaptive SGD paper's mega-batch is 100 batches: --k ⌈100/devices⌉", Range: strategy.Count(1, strategy.MaxCount),
				Usage: "local steps per device between merges (by default a mega-batch shared by the devices)"},
		},
		Defaults: strategy.Settings{Optimizer: "adam", LR: 0.01, Batch: 128}, // BENCHMARKS.md §8
		New:      New,
	})
}

type elasticSGD struct {
	n, b, k int
	lr      float64
	steps   []int
	done    int
	weights []float64
	updates []int
}

// New returns the elastic strategy.
func New(cfg strategy.Config) (strategy.Strategy, error) {
	e := &elasticSGD{n: cfg.Devices, b: cfg.Batch, k: int(cfg.Opt("k")), lr: cfg.LR,
		steps: make([]int, cfg.Devices), weights: strategy.Uniform(cfg.Devices), updates: make([]int, cfg.Devices)}
	return e, nil
}

func (e *elasticSGD) Step(ev strategy.Event, out []strategy.Action) []strategy.Action {
	switch ev.Kind {
	case strategy.Start, strategy.CollectiveDone:
		clear(e.steps)
		e.done = 0
		return strategy.DispatchAll(out, e.n, e.b, e.lr, strategy.LocalStep)
	case strategy.BatchDone:
		d := ev.Device
		if e.steps[d]++; e.steps[d] < e.k {
			return append(out, strategy.Action{Kind: strategy.Dispatch, Device: d, Batch: e.b, LR: e.lr})
		}
		if e.done++; e.done == e.n {
			bs, lrs := make([]int, e.n), make([]float64, e.n)
			for i := range bs {
				bs[i], lrs[i], e.updates[i] = e.b, e.lr, e.k
			}
			out = append(out, strategy.Action{Kind: strategy.Merge, Weights: e.weights,
				Record: &strategy.MergeRecord{BatchSizes: bs, LRs: lrs, Updates: append([]int(nil), e.updates...), Weights: e.weights}})
		}
	}
	return out
}
