package strategy

import (
	"math"
	"strings"
	"testing"
)

func TestRange(t *testing.T) {
	for _, c := range []struct {
		r    Range
		in   []float64
		out  []float64
		text string
	}{
		{Count(1, MaxCount), []float64{1, 2, MaxCount}, []float64{0, 1.5, MaxCount + 1, 1e30, math.Inf(1), math.NaN()}, "a whole number in [1, 1073741824]"},
		{Unit, []float64{0, 0.5, 0.999}, []float64{-1e-9, 1, math.NaN()}, "a number in [0, 1)"},
		{Fraction, []float64{1e-9, 1}, []float64{0, 1.0000001}, "a number in (0, 1]"},
		{Positive, []float64{1e-300, 1e300}, []float64{0, -1, math.Inf(1)}, "a number > 0"},
		{NonNegative, []float64{0, 1e300}, []float64{-1e-300, math.Inf(1)}, "a number ≥ 0"},
		{Between(0, 1e6), []float64{0, 1e6}, []float64{1e6 + 1, 1e18}, "a number in [0, 1e+06]"},
	} {
		for _, v := range c.in {
			if !c.r.Contains(v) || c.r.Check("x", v) != nil {
				t.Errorf("%s: %v rejected", c.r, v)
			}
		}
		for _, v := range c.out {
			err := c.r.Check("x", v)
			if c.r.Contains(v) || err == nil || !strings.Contains(err.Error(), "x ") || !strings.Contains(err.Error(), c.text) {
				t.Errorf("%s: %v accepted or badly reported: %v", c.r, v, err)
			}
		}
		if got := c.r.String(); got != c.text {
			t.Errorf("String() = %q, want %q", got, c.text)
		}
	}
}

func TestResolveChecksRanges(t *testing.T) {
	info := Info{Name: "test", Options: []Option{
		{Name: "n", Default: 4, Range: Count(1, 100)},
		{Name: "half", Derive: func(_ Config, o map[string]float64) float64 { return math.Floor(o["n"] / 8) }, Formula: "n/8", Range: Count(1, 100)},
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
