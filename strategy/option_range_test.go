package strategy

import (
	"math"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/setting"
)

func TestResolveChecksRanges(t *testing.T) {
	info := Info{Name: "test", Options: []Option{
		{Name: "n", Default: 4, Range: setting.Count(1, 100)},
		{Name: "half", Derive: func(_ Config, o map[string]float64) float64 { return math.Floor(o["n"] / 8) }, Formula: "n/8", Range: setting.Count(1, 100)},
	}}
	if _, err := info.Resolve(Config{Options: map[string]float64{"half": 2}}); err != nil {
		t.Fatal(err)
	}
	_, err := info.Resolve(Config{Options: map[string]float64{"n": 1e30}})
	if err == nil || !strings.Contains(err.Error(), "test.n 1e+30") {
		t.Errorf("a given value out of range: %v", err)
	}
	// The derived default n/8 is 0 for n = 4: the message says where it came from.
	_, err = info.Resolve(Config{})
	if err == nil || !strings.Contains(err.Error(), "n/8") || !strings.Contains(err.Error(), "give test.half") {
		t.Errorf("a derived value out of range: %v", err)
	}
}

func TestRegisterNeedsRange(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("an option without a range was registered")
		}
	}()
	Register(Info{Name: "no-range", New: func(Config) (Strategy, error) { return nil, nil },
		Defaults: Settings{Optimizer: "sgd", LR: 1, Batch: 1}, Options: []Option{{Name: "x", Default: 1}}})
}
