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
	"fmt"
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
				Paper: "the Adaptive SGD paper's mega-batch is 100 batches: k = ⌈100/devices⌉", Range: strategy.Count(1, strategy.MaxCount),
				Usage: "local steps per device between merges (by default a mega-batch shared by the devices)"},
		},
		Defaults: strategy.Settings{Optimizer: "adam", LR: 0.01, Batch: 128}, // BENCHMARKS.md §8
		New:      New,
	})
}

type elasticSGD struct {
	n, b, k int
	lr      float64
	members strategy.Members
	steps   []int
	done    int  // devices in the run that took their K steps
	round   bool // a round is under way: its merge is not yet asked for
	weights []float64
}

// New returns the elastic strategy.
func New(cfg strategy.Config) (strategy.Strategy, error) {
	e := &elasticSGD{n: cfg.Devices, b: cfg.Batch, k: int(cfg.Opt("k")), lr: cfg.LR,
		members: strategy.NewMembers(cfg.Devices), steps: make([]int, cfg.Devices), weights: strategy.Uniform(cfg.Devices)}
	return e, nil
}

func (e *elasticSGD) Step(ev strategy.Event, out []strategy.Action) []strategy.Action {
	switch ev.Kind {
	case strategy.Start, strategy.CollectiveDone:
		clear(e.steps)
		e.done, e.round = 0, true
		return e.members.Dispatch(out, e.b, e.lr, strategy.LocalStep)
	case strategy.BatchDone:
		d := ev.Device
		if !e.members.In(d) {
			panic(fmt.Sprintf("elastic: BatchDone from device %d, which is not in the run", d))
		}
		if e.steps[d]++; e.steps[d] < e.k {
			return append(out, strategy.Action{Kind: strategy.Dispatch, Device: d, Batch: e.b, LR: e.lr})
		}
		e.done++
		return e.merge(out)
	case strategy.Leave:
		d := ev.Device
		if !e.members.Leave(d) {
			return out // already gone, or no device
		}
		// A new slice: the records already written keep their weights.
		e.weights = e.members.Uniform(make([]float64, e.n))
		if e.steps[d] >= e.k {
			e.done-- // its replica, done or not, is not merged
		}
		return e.merge(out)
	}
	return out
}

// merge asks for the round's merge once every device in the run took its
// K steps.
func (e *elasticSGD) merge(out []strategy.Action) []strategy.Action {
	if !e.round || e.done < e.members.Live() {
		return out
	}
	e.round = false
	bs, lrs, updates := make([]int, e.n), make([]float64, e.n), make([]int, e.n)
	for i := range bs {
		if e.members.In(i) {
			bs[i], lrs[i], updates[i] = e.b, e.lr, e.k
		}
	}
	m := strategy.Merge(e.weights, 0)
	m.Record = &strategy.MergeRecord{BatchSizes: bs, LRs: lrs, Updates: updates, Weights: e.weights}
	return append(out, m)
}

type elasticState struct {
	Steps   []int
	Done    int
	Round   bool
	Weights []float64
	Members strategy.Members
}

// MarshalBinary implements strategy.Strategy.
func (e *elasticSGD) MarshalBinary() ([]byte, error) {
	return strategy.EncodeState(elasticState{Steps: e.steps, Done: e.done, Round: e.round, Weights: e.weights, Members: e.members})
}

// UnmarshalBinary implements strategy.Strategy.
func (e *elasticSGD) UnmarshalBinary(b []byte) error {
	var st elasticState
	if err := strategy.DecodeState(b, &st); err != nil {
		return err
	}
	if err := strategy.CheckLens(e.n,
		strategy.Len{What: "steps", N: len(st.Steps)},
		strategy.Len{What: "weights", N: len(st.Weights)},
		strategy.Len{What: "members", N: st.Members.Devices()},
	); err != nil {
		return err
	}
	e.steps, e.done, e.round, e.weights, e.members = st.Steps, st.Done, st.Round, st.Weights, st.Members
	return nil
}
