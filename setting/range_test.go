package setting

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
