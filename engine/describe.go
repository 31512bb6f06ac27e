package engine

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/hetsgd/hetsgd/strategy"
)

// Setting is one effective setting of a run, as a help text lists it.
type Setting struct {
	// Name is the setting's key, as a config file, the run log and
	// hetsgd's flags name it (see Ranges): "optimizer", "lr", "batch", or
	// STRATEGY.OPTION for a strategy's option.
	Name string
	// Value is the value the run takes, with the formula of a derived
	// default: "0.05 × devices = 0.2".
	Value string
	// Note says where a common setting's value comes from (given, default
	// or paper), and what an option is and the values it takes.
	Note string
	// Paper says where a default departs from the strategy's paper (""
	// where it does not, or the value was given).
	Paper string
}

// Description is the effective settings of a run's strategy.
type Description struct {
	// Common are the optimizer, the learning rate and the batch.
	Common []Setting
	// Options are the strategy's own, in the order it declares them.
	Options []Setting
	// Preset is what the strategy's paper preset (Config.Paper) sets, by
	// Name and Value, for a run that does not take it (nil otherwise);
	// PresetSource says where in the paper its values are.
	Preset       []Setting
	PresetSource string
}

// Describe returns the effective settings of c's strategy — the defaults
// filled in as WithDefaults fills them — each with its value for this
// run, the formula of a derived default, and where it departs from the
// paper. points is the number of training points (0: not known yet: a
// default derived from it is said to wait for the data); given names the
// settings the caller gave, by Name, which are said to be given rather
// than defaults.
func (c Config) Describe(points int, given map[string]bool) (Description, error) {
	info, err := strategy.Lookup(c.Strategy)
	if err != nil {
		return Description{}, err
	}
	asked := c
	if c, err = c.WithDefaults(); err != nil {
		return Description{}, err
	}
	src := func(name string) string {
		if given[name] {
			return "given"
		}
		if c.Paper {
			return "paper"
		}
		return "default"
	}
	opt, optNote := c.Optimizer.Name, src("optimizer")
	if info.OwnUpdate {
		optNote += "; the commits' own update Δ = −lr·g, no local optimizer runs"
	} else if opt == "momentum" {
		opt += fmt.Sprintf(" %g", c.Optimizer.Momentum)
	}
	if c.Optimizer.WeightDecay != 0 {
		opt += fmt.Sprintf(", weight decay %g", c.Optimizer.WeightDecay)
	}
	lr := strconv.FormatFloat(c.LR, 'g', 6, 64)
	if asked.LR == 0 {
		if _, formula := info.SettingsFor(c.Paper).RateFor(c.Batch, c.Devices); formula != "" {
			lr = formula + " = " + lr
		}
	}
	d := Description{Common: []Setting{
		{Name: "optimizer", Value: opt, Note: optNote},
		{Name: "lr", Value: lr, Note: src("lr")},
		{Name: "batch", Value: strconv.Itoa(c.Batch), Note: src("batch")},
	}}
	vals, err := info.Describe(strategy.Config{Devices: c.Devices, Batch: c.Batch, LR: c.LR, DatasetSize: points, Options: c.Options})
	if err != nil {
		return Description{}, err
	}
	for _, v := range vals {
		val := strconv.FormatFloat(v.Value, 'g', 6, 64)
		switch {
		case v.Formula != "" && points == 0 && strings.Contains(v.Formula, "N "):
			val = v.Formula + ", once the data is loaded"
		case v.Formula != "":
			val = v.Formula + " = " + val
		}
		s := Setting{Name: info.Name + "." + v.Name, Value: val, Note: v.Usage + "; " + v.Range.String()}
		if !v.Given {
			s.Paper = v.Paper
		}
		d.Options = append(d.Options, s)
	}
	if p := info.Paper; p != nil && !c.Paper {
		d.Preset, d.PresetSource = presetSettings(info.Name, p), p.Source
	}
	return d, nil
}

// presetSettings lists what a paper preset sets: the common settings it
// gives, then its options by name.
func presetSettings(name string, p *strategy.Preset) []Setting {
	out := []Setting{} // not nil: the run does not take the preset, however little it sets
	if s := p.Settings; s.Optimizer != "" {
		out = append(out, Setting{Name: "optimizer", Value: s.Optimizer}, Setting{Name: "lr", Value: fmt.Sprintf("%g", s.LR)},
			Setting{Name: "batch", Value: strconv.Itoa(s.Batch)})
		if s.Momentum != 0 {
			out = append(out, Setting{Name: "momentum", Value: fmt.Sprintf("%g", s.Momentum)})
		}
		if s.WeightDecay != 0 {
			out = append(out, Setting{Name: "weight-decay", Value: fmt.Sprintf("%g", s.WeightDecay)})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(p.Options)) {
		out = append(out, Setting{Name: name + "." + k, Value: fmt.Sprintf("%g", p.Options[k])})
	}
	return out
}
