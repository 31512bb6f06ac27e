package engine

import (
	"math/rand/v2"
	"testing"

	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/model"
	"github.com/hetsgd/hetsgd/optim"
)

// stepShapes are the training-step shapes of the benchmark ladder: the two
// bundled-size sets and the papers' Amazon-670k (batch 256, 135,909 sparse
// inputs at 76 non-zeros, hidden 128, 670,091 outputs).
var stepShapes = []struct {
	name                     string
	inputs, outputs, nnz, bs int
}{
	{"bibtex", 1836, 159, 68, 128},
	{"delicious", 500, 983, 18, 128},
	{"amazon-670k", 135909, 670091, 76, 256},
}

// BenchmarkStep times one training step — forward, loss, backward and the
// optimizer update — and reports samples/s and milliseconds per step, both
// as the engine runs a local step (fused: the output layer is updated inside
// its backward pass) and as gradient-aggregation strategies need it (split:
// the whole gradient, then the update). The amazon-670k case needs about
// 2 GiB and half a second per iteration:
//
//	go test ./engine -run NONE -bench 'Step/amazon' -benchtime 5x
func BenchmarkStep(b *testing.B) {
	for _, s := range stepShapes {
		for _, opt := range []string{"sgd", "adam"} {
			for _, mode := range []string{"fused", "split"} {
				b.Run(s.name+"/"+opt+"/"+mode, func(b *testing.B) {
					m, err := model.New(model.Config{Inputs: s.inputs, Hidden: []int{128}, Outputs: s.outputs})
					if err != nil {
						b.Fatal(err)
					}
					p, g := make([]float32, m.NumParams()), make([]float32, m.NumParams())
					m.Init(p, 1)
					o, _ := optim.New(optim.Config{Name: opt}, len(p))
					x, y := RandomBatch(rand.New(rand.NewPCG(1, 2)), s.bs, s.inputs, s.outputs, s.nnz)
					ws := m.NewWorkspace(s.bs)
					var u kernel.Update
					step := func() {
						if mode == "fused" {
							u = o.Fused(1e-3)
							ws.Step(p, g, &x, &y, &u)
							return
						}
						ws.Gradient(p, g, &x, &y)
						o.Step(p, g, 1e-3)
					}
					step() // warm up page faults and scratch
					b.ResetTimer()
					for b.Loop() {
						step()
					}
					sec := b.Elapsed().Seconds() / float64(b.N)
					b.ReportMetric(float64(s.bs)/sec, "samples/s")
					b.ReportMetric(sec*1e3, "ms/step")
				})
			}
		}
	}
}
