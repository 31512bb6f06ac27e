// Package syncsgd is synchronous gradient aggregation ("sync"): the strategy
// of TensorFlow's mirrored strategy and PyTorch DDP, the papers' baseline.
// Every step each device computes a gradient on its own batch from the same
// model; the gradients are averaged (all-reduce) and every replica applies
// the same update. It is equal to single-device SGD on the union batch.
package syncsgd

import "github.com/hetsgd/hetsgd/strategy"

func init() {
	strategy.Register(strategy.Info{
		Name:      "sync",
		Summary:   "synchronous gradient aggregation every step (TensorFlow mirrored, PyTorch DDP)",
		Evaluates: strategy.Replica0,
		New:       New,
	})
}

type syncSGD struct {
	n, b    int
	lr      float64
	pending int
	weights []float64
}

// New returns the sync strategy: --batch is the batch of each device, so a
// step consumes devices × batch samples.
func New(cfg strategy.Config) (strategy.Strategy, error) {
	return &syncSGD{n: cfg.Devices, b: cfg.Batch, lr: cfg.LR, weights: strategy.Uniform(cfg.Devices)}, nil
}

func (s *syncSGD) Step(ev strategy.Event, out []strategy.Action) []strategy.Action {
	switch ev.Kind {
	case strategy.Start, strategy.CollectiveDone:
		s.pending = s.n
		return strategy.DispatchAll(out, s.n, s.b, s.lr, strategy.Gradient)
	case strategy.BatchDone:
		if s.pending--; s.pending == 0 {
			// Equal batches: the plain mean of the devices' mean gradients
			// is the mean gradient of the union batch.
			out = append(out, strategy.Action{Kind: strategy.AllReduce, LR: s.lr, Weights: s.weights})
		}
	}
	return out
}
