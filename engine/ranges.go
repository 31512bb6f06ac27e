package engine

import (
	"fmt"

	"github.com/hetsgd/hetsgd/strategy"
)

// MaxDevices bounds the number of devices: each is a goroutine and a model
// replica (or, under the virtual clock, a simulated one), and counts of
// devices multiply batch sizes in int arithmetic.
const MaxDevices = 1 << 16

// Ranges are the accepted values of a run's numeric settings, by the name of
// their flag: the one place they are stated. Config.Validate checks the
// engine's settings against them; hetsgd train checks every numeric flag
// against them before any work, and prints them in its help. Strategy
// options have theirs in their registration (strategy.Option.Range).
var Ranges = map[string]strategy.Range{
	"devices":          strategy.Count(1, MaxDevices),
	"devices-per-rank": strategy.Count(1, MaxDevices),
	"batch":            strategy.Count(1, strategy.MaxCount),
	"lr":               {Min: 0, MinOpen: true, Max: 1e6},
	"momentum":         {Min: 0, Max: 1, MinOpen: true, MaxOpen: true},
	"weight-decay":     strategy.Between(0, 1),
	// Epochs × training points must stay an exact count of samples (2^53).
	"epochs":           strategy.Between(0, 1e6),
	"time-budget":      strategy.Between(0, 1e9),
	"eval-every":       {Min: 0, MinOpen: true, Max: 1e9}, // 1e9: in effect, only at the end
	"checkpoint-every": strategy.Between(0, 1e9),          // 0: only at the end
	"checkpoint-keep":  strategy.Count(1, 1<<20),
	"eval-points":      strategy.Count(0, strategy.MaxCount),
	"speeds":           {Min: 0, MinOpen: true, Max: 1e6},
	"noise":            {Min: 0, Max: 2, MaxOpen: true},
	"prep":             strategy.Between(0, 1),
	"net-latency":      strategy.Between(0, 1e3),
	"inter-latency":    strategy.Between(0, 1e3),
	"net-bandwidth":    {Min: 0, MinOpen: true, Max: 1e15},
	"inter-bandwidth":  {Min: 0, MinOpen: true, Max: 1e15},
	"groups":           strategy.Count(0, MaxDevices),
	"dim":              strategy.Count(1, 1<<24),
	"hidden":           strategy.Count(1, 1<<20),
	"dropout":          {Min: 0, Max: 1, MaxOpen: true},
	"threads":          strategy.Count(0, 4096),
}

// checkRange checks one setting against Ranges.
func checkRange(name string, v float64) error {
	r, ok := Ranges[name]
	if !ok {
		panic("engine: no range for " + name)
	}
	if err := r.Check("--"+name, v); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	return nil
}

// setting is one numeric setting of a Config, by its flag name.
type setting struct {
	name string
	v    float64
}

// checkRanges checks the numeric settings of c, in the order of the flags'
// help.
func (c *Config) checkRanges() error {
	checks := []setting{
		{"devices", float64(c.Devices)}, {"batch", float64(c.Batch)}, {"lr", c.LR},
		{"weight-decay", c.Optimizer.WeightDecay},
		{"epochs", c.Epochs}, {"time-budget", c.TimeBudget}, {"eval-every", c.EvalEvery},
		{"checkpoint-every", c.Checkpoint.Every},
		{"prep", c.Prep}, {"noise", c.Noise},
	}
	if c.Optimizer.Name == "momentum" {
		checks = append(checks, setting{"momentum", c.Optimizer.Momentum})
	}
	if c.Clock == Virtual {
		checks = append(checks,
			setting{"net-latency", c.Net.Intra.Latency}, setting{"net-bandwidth", c.Net.Intra.Bandwidth},
			setting{"inter-latency", c.Net.Inter.Latency}, setting{"inter-bandwidth", c.Net.Inter.Bandwidth})
	}
	for _, k := range checks {
		if err := checkRange(k.name, k.v); err != nil {
			return err
		}
	}
	if c.Checkpoint.Keep != 0 {
		if err := checkRange("checkpoint-keep", float64(c.Checkpoint.Keep)); err != nil {
			return err
		}
	}
	for i, s := range c.Speeds {
		if err := checkRange("speeds", s); err != nil {
			return fmt.Errorf("%w (device %d)", err, i)
		}
	}
	return nil
}
