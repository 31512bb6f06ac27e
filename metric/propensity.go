package metric

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/hetsgd/hetsgd/sparse"
)

// Propensity is the model of a label's propensity, the chance that a true
// label is observed, of Jain, Prabhu and Varma (KDD 2016): for a label on
// N_l of N training points, p_l = 1/(1 + C·(N_l + B)^−A), C = (ln N −
// 1)·(B + 1)^A. Rare labels have low propensities, so the
// propensity-scored metrics (PSP@k, PSnDCG@k) weigh each hit by 1/p_l and
// reward predicting the tail. It is a flag.Value: "A,B" or a preset name
// (Presets).
type Propensity struct {
	A, B float64
}

// Presets are the Extreme Classification Repository's values of A and B:
// Amazon's sets, Wikipedia's, and every other set's (the default).
var Presets = []struct {
	Name string
	Propensity
}{
	{"xc", Propensity{A: 0.55, B: 1.5}},
	{"amazon", Propensity{A: 0.6, B: 2.6}},
	{"wikipedia", Propensity{A: 0.5, B: 0.4}},
}

// DefaultPropensity is the repository's for sets other than Amazon's and
// Wikipedia's.
var DefaultPropensity = Presets[0].Propensity

// String writes the propensity as Set reads it: a preset's name, or "A,B".
func (p *Propensity) String() string {
	for _, q := range Presets {
		if q.Propensity == *p {
			return q.Name
		}
	}
	return strconv.FormatFloat(p.A, 'g', -1, 64) + "," + strconv.FormatFloat(p.B, 'g', -1, 64)
}

// Set reads a preset's name or "A,B", A in (0, 10] and B in (0, 1000]: B
// = 0 would weigh a label no training point carries infinitely.
func (p *Propensity) Set(v string) error {
	for _, q := range Presets {
		if strings.EqualFold(strings.TrimSpace(v), q.Name) {
			*p = q.Propensity
			return nil
		}
	}
	a, b, ok := strings.Cut(v, ",")
	if !ok {
		return fmt.Errorf("want A,B (e.g. 0.55,1.5) or one of %s", presetNames())
	}
	A, errA := strconv.ParseFloat(strings.TrimSpace(a), 64)
	B, errB := strconv.ParseFloat(strings.TrimSpace(b), 64)
	switch {
	case errA != nil || errB != nil:
		return fmt.Errorf("A and B are numbers (e.g. 0.55,1.5), or name one of %s", presetNames())
	case !(A > 0 && A <= 10):
		return fmt.Errorf("A %v outside (0, 10]", A)
	case !(B > 0 && B <= 1000):
		return fmt.Errorf("B %v outside (0, 1000]", B)
	}
	*p = Propensity{A: A, B: B}
	return nil
}

func presetNames() string {
	var s []string
	for _, q := range Presets {
		s = append(s, fmt.Sprintf("%s (%g,%g)", q.Name, q.A, q.B))
	}
	return strings.Join(s, ", ")
}

// Inverse returns each label's inverse propensity 1/p_l, from the label
// matrix y of the training set (a row per training point): what a hit on
// the label weighs in PSP@k and PSnDCG@k. A set of one point (ln N − 1 <
// 0) gives weights below 1, as the formula does.
func (p Propensity) Inverse(y *sparse.CSR) []float64 {
	counts := make([]float64, y.Cols)
	for _, l := range y.Indices {
		counts[l]++
	}
	C := (math.Log(float64(y.Rows)) - 1) * math.Pow(p.B+1, p.A)
	w := make([]float64, y.Cols)
	for l, n := range counts {
		w[l] = 1 + C*math.Pow(n+p.B, -p.A)
	}
	return w
}
