package engine_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/engine"
	_ "github.com/hetsgd/hetsgd/strategy/all"
)

// The effective settings of synchronous SGD on 4 devices, as help texts
// list them: the common settings, with the formula of the default rate
// and where each value comes from, then the strategy's options.
func ExampleConfig_Describe() {
	d, err := engine.Config{Strategy: "sync", Devices: 4, Batch: 64}.Describe(4880, map[string]bool{"batch": true})
	if err != nil {
		panic(err)
	}
	for _, s := range d.Common {
		fmt.Printf("%s: %s (%s)\n", s.Name, s.Value, s.Note)
	}
	for _, s := range d.Options {
		fmt.Printf("%s: %s\n", s.Name, s.Value)
	}
	// Output:
	// optimizer: adam (default)
	// lr: 0.001 × devices × batch/128 = 0.002 (default)
	// batch: 64 (given)
	// sync.warmup: 0
	// sync.warmup-start: 0.1
	// sync.decay-every: 0
	// sync.decay-factor: 0.1
}

// A run on its paper's preset says so of its settings and has no preset
// to offer; a run on the defaults offers the preset, and says where a
// default departs from the paper unless the value was given; a default
// derived from the training points waits for the data when they are not
// known.
func TestDescribe(t *testing.T) {
	d, err := engine.Config{Strategy: "adaptive", Devices: 2, Paper: true}.Describe(4880, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Common[0] != (engine.Setting{Name: "optimizer", Value: "sgd", Note: "paper"}) || d.Preset != nil {
		t.Errorf("on the paper's preset: %+v, preset %+v", d.Common, d.Preset)
	}
	d, err = engine.Config{Strategy: "adaptive", Devices: 2, Options: map[string]float64{"gamma": 0.5}}.Describe(0, nil)
	if err != nil {
		t.Fatal(err)
	}
	var preset []string
	for _, s := range d.Preset {
		preset = append(preset, s.Name+" "+s.Value)
	}
	if got := strings.Join(preset, ", "); got != "optimizer sgd, lr 1, batch 128, adaptive.gamma 0.9, adaptive.mega-batch 100, adaptive.renorm 0" || !strings.Contains(d.PresetSource, "Ma et al.") {
		t.Errorf("the preset offered: %s (%s)", got, d.PresetSource)
	}
	for _, s := range d.Options {
		switch s.Name {
		case "adaptive.gamma":
			if s.Value != "0.5" || s.Paper != "" {
				t.Errorf("a given option: %+v", s)
			}
		case "adaptive.renorm":
			if s.Paper == "" {
				t.Errorf("a default that departs from the paper: %+v", s)
			}
		case "adaptive.mega-batch":
			if !strings.HasSuffix(s.Value, "once the data is loaded") || !strings.Contains(s.Note, "; a number in") {
				t.Errorf("a default derived from the unknown training points: %+v", s)
			}
		}
	}
	if _, err := (engine.Config{Strategy: "nope"}).Describe(0, nil); err == nil {
		t.Error("an unknown strategy was described")
	}
}
