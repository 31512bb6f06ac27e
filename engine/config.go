package engine

import (
	"github.com/hetsgd/hetsgd/checkpoint"
	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/cost"
	"github.com/hetsgd/hetsgd/optim"
	"github.com/hetsgd/hetsgd/setting"
	"github.com/hetsgd/hetsgd/strategy"
)

// Clock selects the engine.
type Clock string

const (
	Real    Clock = "real"
	Virtual Clock = "virtual"
)

// Config is a multi-device training run.
type Config struct {
	Strategy string             // registered strategy name
	Devices  int                // number of devices
	Batch    int                // batch size per device (b_max for adaptive); 0: the strategy's default
	LR       float64            // learning rate for Batch; 0: the strategy's default (see WithDefaults)
	Options  map[string]float64 // strategy options by name; absent ones take their defaults

	// Optimizer is the devices' local optimizer; an empty name is the
	// strategy's default optimizer with its momentum and weight decay.
	Optimizer optim.Config
	// Paper takes the strategy's paper settings (strategy.Info's Paper) in
	// place of its defaults, where it has them.
	Paper bool

	Speeds []float64 // relative speed per device (nil: all 1)
	Clock  Clock
	// Faults are injected into the run (in one process; either clock):
	// devices that crash, stall or slow down at given times.
	Faults []Fault
	// RankFaults strike whole processes of a job (real clock; rank 0 in
	// one process): a crash ends the rank's process at once, by SIGKILL,
	// as a machine that fails; a stall makes it stop answering and end
	// after its timeout, as a health check would end it; slow=F slows its
	// devices. They test and show a job's restarts (hetsgd launch), and
	// are not part of a run's identity: a job restarted after one goes on
	// without it.
	RankFaults []Fault `json:"-"`

	Epochs     float64 // stop after this many passes over the training set (0: no limit)
	TimeBudget float64 // stop after this many engine seconds (0: no limit)
	EvalEvery  float64 // epochs between evaluations (at the next barrier)
	Seed       uint64

	// LineSearch replaces the learning rate of every AllReduce by the
	// workload's exact line-search step along the aggregate (workloads
	// implementing LineSearcher, such as Regression).
	LineSearch bool

	// Prep is the data-preparation time per sample (loading, decoding),
	// spent before each batch unless a Layered all-reduce overlapped it:
	// charged to the virtual clock, and under the real clock done as busy
	// work (simulated decoding) by the device before its batch — or, for
	// Layered SGD across ranks, while the nodes' all-reduce is under way.
	Prep float64
	// NoOverlap makes Layered SGD across ranks prepare its next batches
	// after the inter-node all-reduce rather than during it, to measure what
	// the overlap saves.
	NoOverlap bool

	// Virtual clock only.
	Cost  cost.Model
	Net   comm.Model
	Noise float64 // σ of the log-normal noise on every batch's cost (DefaultNoise, the tool's)
	// TimingOnly charges time but computes nothing: no gradients, updates,
	// merges or evaluations. It studies throughput at scales where computing
	// every replica would not fit (Layered SGD's 256 workers).
	TimingOnly bool

	// Checkpoint saves the run's state into a folder as it goes, to be
	// continued by a run with Resume (Dir "": never).
	Checkpoint Checkpointing `json:"-"`
	// Patience stops the run early once this many evaluations in a row
	// have not raised the best P@1 (0: never; a workload without P@k
	// counts a lower test loss as better).
	Patience int `json:"-"`
	// Resume continues the run a checkpoint holds rather than starting one:
	// every setting must be the checkpoint run's (an error names the first
	// that is not), but for Epochs, TimeBudget, EvalEvery and Checkpoint,
	// which may change (and Patience). Under the virtual clock the continued run is the
	// run that was saved, evaluation for evaluation, byte for byte.
	Resume *checkpoint.Reader `json:"-"`

	// World is the group of processes the run spans (nil: this process
	// alone). Devices are shared out evenly: rank r holds devices
	// r·K … r·K+K−1 with K = Devices/World.Size(). Real clock only.
	World comm.Comm `json:"-"`

	// scaled says LR is the strategy's default rate scaled to this run by
	// its rule (WithDefaults), and how ("1e-3 × devices"): a run warns
	// when that takes it past the rates its defaults were validated at.
	scaled string
}

// DefaultNoise is the virtual clock's σ of the noise on each batch's cost
// that the tool and the studies run with: 5 %, about what one device's
// batches vary by on this machine.
const DefaultNoise = 0.05

// WithDefaults returns c with the strategy's defaults (strategy.Info's
// Defaults) in the common settings left at zero: the optimizer (an empty
// name), the batch and the learning rate. The default rate belongs to the
// default optimizer, scaled to another batch by its rule
// (strategy.Settings.RateFor); with another optimizer, give the rate too.
func (c Config) WithDefaults() (Config, error) {
	info, err := strategy.Lookup(c.Strategy)
	if err != nil {
		return c, err
	}
	d := info.SettingsFor(c.Paper)
	if c.Paper {
		p := info.Paper
		if p == nil {
			return c, setting.Errorf("engine", "engine: {Config.Paper}: %s's defaults are its paper's", c.Strategy)
		}
		opts := make(map[string]float64, len(c.Options)+len(p.Options))
		for k, v := range p.Options {
			opts[k] = v
		}
		for k, v := range c.Options {
			opts[k] = v
		}
		c.Options = opts
	}
	if info.OwnUpdate && c.Optimizer != (optim.Config{}) && c.Optimizer != (optim.Config{Name: "sgd"}) {
		return c, setting.Errorf("engine", "engine: {Config.Optimizer.Name} %s does not apply to %s: a parameter server commits Δ = −lr·g by its rule", c.Optimizer.Name, c.Strategy)
	}
	if c.Optimizer.Name == "" {
		c.Optimizer = optim.Config{Name: d.Optimizer, Momentum: d.Momentum, WeightDecay: d.WeightDecay}
	}
	if c.Optimizer.Name == "momentum" && c.Optimizer.Momentum == 0 {
		c.Optimizer.Momentum = optim.DefaultMomentum // said once, here, for the log and the help
	}
	if c.Batch == 0 {
		c.Batch = d.Batch
	}
	if _, err := optim.New(c.Optimizer, 0); err != nil {
		return c, err
	}
	if c.LR == 0 && c.LineSearch {
		c.LR = 1 // unused: every step's rate is the line search's
	}
	if c.LR == 0 {
		if c.Optimizer.Name != d.Optimizer {
			return c, setting.Errorf("engine", "engine: {Config.Optimizer.Name} %s: give {Config.LR} too (%s's default rate %g is for %s)", c.Optimizer.Name, c.Strategy, d.LR, d.Optimizer)
		}
		c.LR, c.scaled = d.RateFor(c.Batch, c.Devices)
	}
	return c, nil
}

// Validate reports the first setting that cannot work, naming its flag:
// each numeric one against Ranges, then the combinations.
func (c *Config) Validate() error {
	if c.Clock != Real && c.Clock != Virtual {
		return setting.Errorf("engine", "engine: {Config.Clock} %q: want real or virtual", c.Clock)
	}
	if err := c.checkRanges(); err != nil {
		return err
	}
	if err := c.checkRankFaults(); err != nil {
		return err
	}
	if err := c.checkFaults(); err != nil {
		return err
	}
	switch {
	case c.Speeds != nil && len(c.Speeds) != c.Devices:
		return setting.Errorf("engine", "engine: {Config.Speeds} has %d values for %d devices", len(c.Speeds), c.Devices)
	case c.Epochs == 0 && c.TimeBudget == 0:
		return setting.Errorf("engine", "engine: give {Config.Epochs} or {Config.TimeBudget} (or both)")
	case c.TimingOnly && c.Clock != Virtual:
		return setting.Errorf("engine", "engine: {Config.TimingOnly} needs {Config.Clock} virtual")
	case c.TimingOnly && (c.Checkpoint.Dir != "" || c.Resume != nil):
		return setting.Errorf("engine", "engine: {Config.Checkpoint} and {Config.Resume} need a run that computes: not with {Config.TimingOnly}")
	case c.LineSearch && (c.Optimizer.Name != "sgd" || c.Optimizer.WeightDecay != 0):
		// The step is optimal for the plain update w ← w − η·ψ only.
		return setting.Errorf("engine", "engine: {Config.LineSearch} needs {Config.Optimizer.Name} sgd without {Config.Optimizer.WeightDecay} (have %s, weight decay %g)", c.Optimizer.Name, c.Optimizer.WeightDecay)
	}
	if c.Clock == Virtual {
		if err := c.Net.Validate(); err != nil {
			return err
		}
		if err := c.Cost.Validate(); err != nil {
			return err
		}
	}
	// The strategy's options, before any data is loaded, each against its
	// range and against each other (--binit within [b_min, b_max]), without
	// building it: a run builds its strategy once, in Prepare. The
	// training set's size only changes derived defaults, never whether a
	// given value is accepted; epoch-based rules are checked for a set of
	// one point.
	_, _, err := strategy.Validate(c.Strategy, c.strategyConfig(1))
	return err
}

func (c *Config) speed(d int) float64 {
	if c.Speeds == nil {
		return 1
	}
	return c.Speeds[d]
}

// Seeds of the random streams, all derived from the run's seed.
func initSeed(seed uint64) uint64           { return seed }
func samplerSeed(seed uint64) uint64        { return seed ^ 0x9e3779b97f4a7c15 }
func dropoutSeed(seed uint64, d int) uint64 { return seed ^ 0xd1b54a32d192ed03 ^ uint64(d)<<32 }
func noiseSeed(seed uint64, d int) uint64   { return seed ^ 0x853c49e6748fea9b ^ uint64(d)<<32 }

// strategyConfig is what the run's strategy is built from, on a training
// set of size points.
func (c Config) strategyConfig(size int) strategy.Config {
	return strategy.Config{Devices: c.Devices, Batch: c.Batch, LR: c.LR, DatasetSize: size, Options: c.Options}
}
