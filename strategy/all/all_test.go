package all_test

import (
	"testing"

	"github.com/hetsgd/hetsgd/internal/race"
	"github.com/hetsgd/hetsgd/strategy"
	_ "github.com/hetsgd/hetsgd/strategy/all"
	"github.com/hetsgd/hetsgd/strategy/strategytest"
)

// variants are options that change a strategy's rules and are off by
// default: the suite runs them too.
var variants = map[string][]map[string]float64{
	"streaming-diloco": {{"tau": 0}, {"bits": 4}, {"fragments": 1, "tau": 0, "alpha": 0}},
	"adaptive":         {{"clamp": 1}, {"smooth": 0.5}, {"clamp": 1, "smooth": 0.9, "renorm": 0}, {"fit": 1}, {"fit": 1, "smooth": 0.5, "pert-norm": 2}, {"pert-norm": 1, "pert-thr": 0.5}},
}

// Every registered strategy keeps the contract of package strategy.
func TestConformance(t *testing.T) {
	if race.Enabled {
		// A strategy is a state machine that starts no goroutine, and the
		// suite drives it from one: the detector has nothing to find, and
		// slows the suite twentyfold.
		t.Skip("one goroutine only: the race detector finds nothing here (the ordinary test stage runs the suite)")
	}
	list := strategy.List()
	if len(list) == 0 {
		t.Fatal("no strategy registered")
	}
	for _, info := range list {
		t.Run(info.Name, func(t *testing.T) { strategytest.Conformance(t, info.Name, variants[info.Name]...) })
	}
}
