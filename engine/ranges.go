package engine

import (
	"fmt"

	"github.com/hetsgd/hetsgd/setting"
	"github.com/hetsgd/hetsgd/workload"
)

// MaxDevices bounds the number of devices: each is a goroutine and a model
// replica (or, under the virtual clock, a simulated one), and counts of
// devices multiply batch sizes in int arithmetic.
const MaxDevices = 1 << 16

// Ranges are the accepted values of a run's numeric settings, by the name of
// the setting (its key in a config file and the run log, and its flag): the
// one place they are stated. Config.Validate checks the
// engine's settings against them; hetsgd train checks every numeric flag
// against them before any work, and prints them in its help. Strategy
// options have theirs in their registration (strategy.Option.Range).
var Ranges = map[string]setting.Range{
	"devices":          setting.Count(1, MaxDevices),
	"devices-per-rank": setting.Count(1, MaxDevices),
	"batch":            setting.Count(1, setting.MaxCount),
	"lr":               {Min: 0, MinOpen: true, Max: 1e6},
	"momentum":         {Min: 0, Max: 1, MinOpen: true, MaxOpen: true},
	"weight-decay":     setting.Between(0, 1),
	// Epochs × training points must stay an exact count of samples (2^53).
	"epochs":           setting.Between(0, 1e6),
	"time-budget":      setting.Between(0, 1e9),
	"eval-every":       {Min: 0, MinOpen: true, Max: 1e9}, // 1e9: in effect, only at the end
	"checkpoint-every": setting.Between(0, 1e9),           // 0: only at the end
	"checkpoint-keep":  setting.Count(1, 1<<20),
	"patience":         setting.Count(0, setting.MaxCount),
	"eval-points":      setting.Count(0, setting.MaxCount),
	"speeds":           {Min: 0, MinOpen: true, Max: 1e6},
	"noise":            {Min: 0, Max: 2, MaxOpen: true},
	"prep":             setting.Between(0, 1),
	"net-latency":      setting.Between(0, 1e3),
	"inter-latency":    setting.Between(0, 1e3),
	"net-bandwidth":    {Min: 0, MinOpen: true, Max: 1e15},
	"inter-bandwidth":  {Min: 0, MinOpen: true, Max: 1e15},
	"groups":           setting.Count(0, MaxDevices),
	"threads":          setting.Count(0, 4096),
}

func init() {
	// The workloads' settings, stated in their package: the one table
	// holds them too.
	for k, r := range workload.Ranges {
		Ranges[k] = r
	}
}

// checkRange checks the value v of field (a Config field in braces, as
// setting.Errorf names one) against the range of the setting key.
func checkRange(key, field string, v float64) error {
	r, ok := Ranges[key]
	if !ok {
		panic("engine: no range for " + key)
	}
	if !r.Contains(v) {
		return setting.Errorf("engine", "engine: "+field+" %s", r.Need(v))
	}
	return nil
}

// numeric is one numeric setting of a Config: its key in Ranges, its field
// and its value.
type numeric struct {
	key, field string
	v          float64
}

// checkRanges checks the numeric settings of c, in the order of the flags'
// help.
func (c *Config) checkRanges() error {
	checks := []numeric{
		{"devices", "{Config.Devices}", float64(c.Devices)}, {"batch", "{Config.Batch}", float64(c.Batch)},
		{"lr", "{Config.LR}", c.LR}, {"weight-decay", "{Config.Optimizer.WeightDecay}", c.Optimizer.WeightDecay},
		{"epochs", "{Config.Epochs}", c.Epochs}, {"time-budget", "{Config.TimeBudget}", c.TimeBudget},
		{"eval-every", "{Config.EvalEvery}", c.EvalEvery}, {"checkpoint-every", "{Config.Checkpoint.Every}", c.Checkpoint.Every},
		{"prep", "{Config.Prep}", c.Prep}, {"noise", "{Config.Noise}", c.Noise},
	}
	if c.Optimizer.Name == "momentum" {
		checks = append(checks, numeric{"momentum", "{Config.Optimizer.Momentum}", c.Optimizer.Momentum})
	}
	if c.Clock == Virtual {
		checks = append(checks,
			numeric{"net-latency", "{Config.Net.Intra.Latency}", c.Net.Intra.Latency},
			numeric{"net-bandwidth", "{Config.Net.Intra.Bandwidth}", c.Net.Intra.Bandwidth},
			numeric{"inter-latency", "{Config.Net.Inter.Latency}", c.Net.Inter.Latency},
			numeric{"inter-bandwidth", "{Config.Net.Inter.Bandwidth}", c.Net.Inter.Bandwidth})
	}
	if c.Patience != 0 {
		checks = append(checks, numeric{"patience", "{Config.Patience}", float64(c.Patience)})
	}
	if c.Checkpoint.Keep != 0 {
		checks = append(checks, numeric{"checkpoint-keep", "{Config.Checkpoint.Keep}", float64(c.Checkpoint.Keep)})
	}
	for _, k := range checks {
		if err := checkRange(k.key, k.field, k.v); err != nil {
			return err
		}
	}
	for i, s := range c.Speeds {
		if err := checkRange("speeds", "{Config.Speeds}", s); err != nil {
			return fmt.Errorf("%w (device %d)", err, i)
		}
	}
	return nil
}
