// Package syncsgd is synchronous gradient aggregation: every step each
// device computes a gradient on its own batch from the same model, the
// gradients are averaged (all-reduce) and every replica applies the same
// update. It is equal to single-device SGD on the union batch. Four
// strategies share it:
//
//   - "sync": TensorFlow's mirrored strategy, PyTorch DDP, the papers'
//     conventional distributed SGD (CSGD), with a flat all-reduce;
//   - "lsgd": Layered SGD (Yu et al.): the same maths, with a hierarchical
//     all-reduce — reduce to each group's communicator, all-reduce among the
//     communicators while the workers prepare their next batch, broadcast
//     back — so its parameters equal sync's;
//   - "sum": gradient averaging, the AdaCons paper's "Sum" baseline;
//   - "slide": SLIDE's training loop (Chen et al., MLSys 2020), whose
//     threads sum a batch's gradients on a sampled output layer and take
//     one Adam step; the tool gives it the sampled layer in SLIDE's code's
//     mode (Info.Output): each point's labels and every row its buckets
//     hold, padded with random rows to 1,000 (all the labels, when fewer)
//     as SLIDE/Layer.cpp does, and SLIDE's hashing for the data set when
//     none is given (workload.Sampling.SLIDE and SLIDEFor say where in
//     SLIDE's code each rule is).
//
// The learning rate may ramp up linearly over the first epochs (--warmup,
// from --warmup-start·lr), the gradual warm-up of Goyal et al. that Layered
// SGD uses with the linear scaling rule, and then fall tenfold every
// --decay-every epochs, the step decay of Layered SGD's paper.
//
// When a device leaves the run (strategy.Leave) the step goes on with the
// others: the all-reduce waits only for the devices still in the run and
// averages their gradients, 1/live each and 0 for the one gone (the mean
// gradient of the union of their batches, as before); a step that waited
// only for the device that left all-reduces at once. Steps then deal
// live × batch samples.
package syncsgd

import (
	"fmt"
	"math"

	"github.com/hetsgd/hetsgd/setting"
	"github.com/hetsgd/hetsgd/strategy"
)

var options = []strategy.Option{
	{Name: "warmup", Default: 0, Range: setting.Between(0, 1e6), Usage: "epochs of linear learning-rate warm-up"},
	{Name: "warmup-start", Default: 0.1, Range: setting.Fraction, Usage: "fraction of lr the warm-up starts from"},
	{Name: "decay-every", Default: 0, Range: setting.Between(0, 1e6), Usage: "epochs between step decays of the learning rate (0: no decay; Layered SGD's paper: 30)"},
	{Name: "decay-factor", Default: 0.1, Range: setting.Fraction, Usage: "factor of each step decay"},
}

// defaults are the settings every synchronous strategy is best run with
// (BENCHMARKS.md §8): Adam at 1e-3 for a batch of 128 on one device, the
// rate growing with the union batch of the devices (4e-3 on 4).
var defaults = strategy.Settings{Optimizer: "adam", LR: 1e-3, Batch: 128, Union: true, MaxLR: 0.01}

// slideDefaults are SLIDE's code's settings for Amazon-670k: Adam at 1e-4,
// batches of 128. SLIDE's threads share one model and sum a batch's
// gradients without locks (HOGWILD), then take one Adam step; one device,
// whose kernels run on every thread, computes the same step without losing
// updates. On D devices each takes --batch points and the step averages
// them (a batch of D·128 at the same rate): SLIDE's step only for D = 1.
var slideDefaults = strategy.Settings{Optimizer: "adam", LR: 1e-4, Batch: 128}

// paper is Layered SGD's ImageNet recipe (Yu et al. §5.3): momentum 0.9,
// weight decay 1e-4, 64 samples per worker at rate 0.1 for four workers
// (scale --lr by devices/4 for the paper's linear scaling), a 5-epoch
// warm-up and a tenfold decay every 30 epochs.
var paper = &strategy.Preset{
	Source:   "Layered SGD, Yu et al., §5.3",
	Settings: strategy.Settings{Optimizer: "momentum", LR: 0.1, Batch: 64, Momentum: 0.9, WeightDecay: 1e-4},
	Options:  map[string]float64{"warmup": 5, "decay-every": 30, "decay-factor": 0.1},
}

func init() {
	strategy.Register(strategy.Info{
		Name:      "sync",
		Summary:   "synchronous gradient aggregation every step (TensorFlow mirrored, PyTorch DDP, CSGD)",
		Evaluates: strategy.Replica0, Options: options, Defaults: defaults,
		New:   func(cfg strategy.Config) (strategy.Strategy, error) { return New(cfg, false) },
		Check: check,
	})
	strategy.Register(strategy.Info{
		Name:      "lsgd",
		Summary:   "Layered SGD: sync's maths, reduce to group communicators, all-reduce among them overlapped with data preparation",
		Evaluates: strategy.Replica0, Options: options, Defaults: defaults, Paper: paper, Groups: true,
		New:   func(cfg strategy.Config) (strategy.Strategy, error) { return New(cfg, true) },
		Check: check,
	})
	strategy.Register(strategy.Info{
		Name: "slide",
		Summary: "SLIDE (Chen et al.): sync's maths on a sampled output layer as SLIDE's code trains it (labels, hash-table retrieval, " +
			"each point padded with random labels, Adam over every weight each batch)",
		Evaluates: strategy.Replica0, Options: options, Defaults: slideDefaults, Output: "slide",
		New:   func(cfg strategy.Config) (strategy.Strategy, error) { return New(cfg, false) },
		Check: check,
	})
	strategy.Register(strategy.Info{
		Name:      "sum",
		Summary:   "gradient averaging, the AdaCons paper's Sum baseline (the same as sync)",
		Evaluates: strategy.Replica0, Options: options, Defaults: defaults,
		New:   func(cfg strategy.Config) (strategy.Strategy, error) { return New(cfg, false) },
		Check: check,
	})
}

// Sync is the strategy's state.
type Sync struct {
	n, b          int
	lr            float64
	layered       bool
	warmup, start float64 // epochs, fraction
	every, factor float64 // step decay: epochs, factor
	size          int
	samples       int64   // dealt so far
	current       float64 // rate of the step under way
	members       strategy.Members
	barrier       strategy.Barrier // the devices whose gradient the step waits for
	weights       []float64
}

// New returns synchronous aggregation; layered selects Layered SGD's
// all-reduce. --batch is the batch of each device, so a step consumes
// devices × batch samples.
func New(cfg strategy.Config, layered bool) (*Sync, error) {
	s := &Sync{n: cfg.Devices, b: cfg.Batch, lr: cfg.LR, layered: layered, size: cfg.DatasetSize,
		warmup: cfg.Opt("warmup"), start: cfg.Opt("warmup-start"),
		every: cfg.Opt("decay-every"), factor: cfg.Opt("decay-factor"), weights: strategy.Uniform(cfg.Devices),
		members: strategy.NewMembers(cfg.Devices), barrier: strategy.NewBarrier(cfg.Devices)}
	if err := check(cfg); err != nil {
		return nil, err
	}
	return s, nil
}

// check reports the schedules that need the training set's size without it.
func check(cfg strategy.Config) error {
	if (cfg.Opt("warmup") > 0 || cfg.Opt("decay-every") > 0) && cfg.DatasetSize < 1 {
		return fmt.Errorf("sync: warmup and decay-every need the training set size")
	}
	return nil
}

// rate is the learning rate of the step about to be dispatched: the warm-up
// ramp, then a step decay by whole periods of --decay-every epochs counted
// from the start of the run (Goyal et al.'s schedule, which Layered SGD's
// paper follows: ×0.1 every 30 epochs).
func (s *Sync) rate() float64 {
	if s.warmup == 0 && s.every == 0 {
		return s.lr
	}
	epoch := float64(s.samples) / float64(s.size)
	lr := s.lr
	if s.warmup > 0 {
		f := min(1, epoch/s.warmup)
		lr *= s.start + (1-s.start)*f
	}
	if s.every > 0 {
		lr *= math.Pow(s.factor, math.Floor(epoch/s.every))
	}
	return lr
}

func (s *Sync) Step(ev strategy.Event, out []strategy.Action) []strategy.Action {
	switch ev.Kind {
	case strategy.Start, strategy.CollectiveDone:
		live := s.barrier.Open(&s.members)
		s.current = s.rate()
		out = s.members.Dispatch(out, s.b, s.current, strategy.Gradient)
		s.samples += int64(live * s.b)
	case strategy.BatchDone:
		d := ev.Device
		if !s.barrier.Waits(d) {
			panic(fmt.Sprintf("sync: BatchDone from device %d, which has no batch", d))
		}
		out = s.arrived(out, d)
	case strategy.Leave:
		if !s.members.Leave(ev.Device) {
			return out // already gone, or no device
		}
		// Equal batches over the devices left: their plain mean is still the
		// mean gradient of the union of their batches.
		s.members.Uniform(s.weights)
		if s.barrier.Waits(ev.Device) {
			// Its batch is lost: the step goes on without it.
			out = s.arrived(out, ev.Device)
		}
	}
	return out
}

// arrived takes device d off the step's wait list and all-reduces once no
// device is left on it.
func (s *Sync) arrived(out []strategy.Action, d int) []strategy.Action {
	if s.barrier.Arrive(d) {
		// Equal batches: the plain mean of the devices' mean gradients
		// is the mean gradient of the union batch.
		out = append(out, strategy.Action{Kind: strategy.AllReduce, LR: s.current, Weights: s.weights, Layered: s.layered})
	}
	return out
}

type syncState struct {
	Samples int64
	Current float64
	Members strategy.Members
	Barrier strategy.Barrier
	Weights []float64
}

// MarshalBinary implements strategy.Strategy.
func (s *Sync) MarshalBinary() ([]byte, error) {
	return strategy.EncodeState(syncState{Samples: s.samples, Current: s.current, Members: s.members, Barrier: s.barrier, Weights: s.weights})
}

// UnmarshalBinary implements strategy.Strategy.
func (s *Sync) UnmarshalBinary(b []byte) error {
	var st syncState
	if err := strategy.DecodeState(b, &st); err != nil {
		return err
	}
	if err := strategy.CheckLens(s.n,
		strategy.Len{What: "weights", N: len(st.Weights)},
		strategy.Len{What: "members", N: st.Members.Devices()},
		strategy.Len{What: "a barrier", N: st.Barrier.Devices()},
	); err != nil {
		return err
	}
	s.samples, s.current, s.members, s.barrier, s.weights = st.Samples, st.Current, st.Members, st.Barrier, st.Weights
	return nil
}
