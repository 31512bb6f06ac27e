package setting

import (
	"fmt"
	"math"
	"strconv"
)

// Range is the values a numeric setting accepts: the one statement of its
// bounds, from which both its check (Check) and its help text (String)
// come. A strategy's options declare one each (strategy.Option.Range); the
// engine's settings have theirs in engine.Ranges.
type Range struct {
	Min, Max         float64 // ±Inf for no bound
	MinOpen, MaxOpen bool    // the bound itself is excluded
	// Whole marks a count (samples, steps, devices): a whole number, and
	// small enough to convert to int without wrapping round.
	Whole bool
}

// MaxCount bounds the settings that count samples or steps (batch sizes,
// local steps), so that they convert to int without wrapping round.
const MaxCount = 1 << 30

// Between returns the closed range [lo, hi].
func Between(lo, hi float64) Range { return Range{Min: lo, Max: hi} }

// Count returns the whole numbers in [lo, hi].
func Count(lo, hi float64) Range { return Range{Min: lo, Max: hi, Whole: true} }

// Unit is [0, 1): momentum and decay coefficients.
var Unit = Range{Min: 0, Max: 1, MaxOpen: true}

// Fraction is (0, 1]: factors that shrink a quantity.
var Fraction = Range{Min: 0, Max: 1, MinOpen: true}

// Positive is (0, ∞): scales with no natural upper bound.
var Positive = Range{Min: 0, Max: math.Inf(1), MinOpen: true}

// NonNegative is [0, ∞).
var NonNegative = Range{Min: 0, Max: math.Inf(1)}

// Contains reports whether v lies in the range (a NaN never does, an
// infinity only where the bound is infinite and included, which no range
// here declares).
func (r Range) Contains(v float64) bool {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return false
	case v < r.Min || r.MinOpen && v == r.Min:
		return false
	case v > r.Max || r.MaxOpen && v == r.Max:
		return false
	case r.Whole && v != math.Trunc(v):
		return false
	}
	return true
}

// Check returns an error naming the setting and the accepted values when v
// is outside the range: "name v: need r".
func (r Range) Check(name string, v float64) error {
	if r.Contains(v) {
		return nil
	}
	return fmt.Errorf("%s %s", name, r.Need(v))
}

// Need is what Check writes after the setting's name: "v: need r".
func (r Range) Need(v float64) string { return num(v) + ": need " + r.String() }

// IsZero reports whether r was left undeclared.
func (r Range) IsZero() bool { return r == Range{} }

// String describes the range for messages and help texts: "a whole number
// in [1, 1073741824]", "a number in [0, 1)", "a number > 0".
func (r Range) String() string {
	what := "a number"
	if r.Whole {
		what = "a whole number"
	}
	lo, hi := !math.IsInf(r.Min, -1), !math.IsInf(r.Max, 1)
	switch {
	case lo && hi:
		open, close := "[", "]"
		if r.MinOpen {
			open = "("
		}
		if r.MaxOpen {
			close = ")"
		}
		return what + " in " + open + num(r.Min) + ", " + num(r.Max) + close
	case lo:
		if r.MinOpen {
			return what + " > " + num(r.Min)
		}
		return what + " ≥ " + num(r.Min)
	case hi:
		if r.MaxOpen {
			return what + " < " + num(r.Max)
		}
		return what + " ≤ " + num(r.Max)
	}
	return what
}

// num prints bounds as people write them: whole numbers in full up to 2^53,
// others in the shortest form that reads back exactly.
func num(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1<<53 && math.Abs(v) >= 1e-3 || v == 0 {
		if math.Abs(v) >= 1e6 && v == math.Pow(10, math.Round(math.Log10(math.Abs(v)))) {
			return strconv.FormatFloat(v, 'g', -1, 64) // 1e+06
		}
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
