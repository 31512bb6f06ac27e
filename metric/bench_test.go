package metric

import (
	"testing"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/model"
)

// BenchmarkEvaluate scores Bibtex's test set with the default network,
// without and with the propensity-scored metrics: what they add to an
// evaluation (ratios from one run: go test -bench Evaluate ./metric).
func BenchmarkEvaluate(b *testing.B) {
	train, test, err := data.Bundled("bibtex")
	if err != nil {
		b.Fatal(err)
	}
	m, err := model.New(model.Config{Inputs: train.Features(), Hidden: []int{128}, Outputs: train.Labels()})
	if err != nil {
		b.Fatal(err)
	}
	p := make([]float32, m.NumParams())
	m.Init(p, 1)
	for _, ps := range []bool{false, true} {
		name := "plain"
		if ps {
			name = "propensity"
		}
		b.Run(name, func(b *testing.B) {
			e := NewEvaluator(m, test, 256, 0)
			if ps {
				if err := e.ScorePropensity(train, DefaultPropensity); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				e.Evaluate(p)
			}
		})
	}
}
