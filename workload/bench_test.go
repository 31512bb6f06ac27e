package workload

import (
	"math/rand/v2"
	"testing"

	"github.com/hetsgd/hetsgd/internal/hugepage"
	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/lsh"
	"github.com/hetsgd/hetsgd/model"
	"github.com/hetsgd/hetsgd/optim"
	"github.com/hetsgd/hetsgd/sparse"
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
// the whole gradient, then the update), and for amazon-670k with SLIDE's
// sampled output layer (sampled: a label-major network, DWTA tables of K 6
// and L 50 built from the initial weights, each point's labels and up to
// 0.5% of the labels retrieved, 0.5% more shared by the batch, lazy updates
// of the rows touched; labels: the defaults, the same with the batch's
// labels among the shared rows and the correction; slide: SLIDE's code's mode, each point padded with
// its own random rows to 0.5% and Adam over every weight). The amazon-670k
// case needs about 2 GiB and half a second per iteration:
//
//	go test ./workload -run NONE -bench 'Step/amazon' -benchtime 5x
func BenchmarkStep(b *testing.B) {
	for _, s := range stepShapes {
		for _, opt := range []string{"sgd", "adam"} {
			for _, mode := range []string{"fused", "split", "sampled", "labels", "slide"} {
				sampled := mode == "sampled" || mode == "labels" || mode == "slide"
				if sampled && s.outputs < 100_000 {
					continue // sampling is for output layers that dominate
				}
				b.Run(s.name+"/"+opt+"/"+mode, func(b *testing.B) {
					m, err := model.New(model.Config{Inputs: s.inputs, Hidden: []int{128}, Outputs: s.outputs, LabelMajor: sampled})
					if err != nil {
						b.Fatal(err)
					}
					p, g := hugepage.Floats(m.NumParams()), hugepage.Floats(m.NumParams())
					m.Init(p, 1)
					o, _ := optim.New(optim.Config{Name: opt}, len(p))
					if sampled && mode != "slide" {
						// Fault in the gradient's and the moments' pages, as
						// a run's first epoch does: the lazy update's random
						// rows would otherwise pay a first touch at every
						// step.
						clear(g)
						if u := o.Fused(1e-3); u.Rule == kernel.AdamRule {
							clear(u.M)
							clear(u.V)
						}
					}
					x, y := RandomBatch(rand.New(rand.NewPCG(1, 2)), s.bs, s.inputs, s.outputs, s.nnz)
					ws := m.NewWorkspace(s.bs)
					var smp *model.Sampled
					if sampled {
						smp = sampledFor(b, m, p, &y, s.bs, mode)
					}
					step := denseStep(ws, o, p, g, &x, &y, mode == "fused") // as TimeStep times it
					if smp != nil {
						var u kernel.Update
						step = func() {
							u = o.Fused(stepLR)
							smp.Step(p, g, &x, &y, &u)
						}
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

// sampledFor returns a sampled pass over m's output layer at SLIDE's
// Amazon-670k settings, its tables built from p: a batch's shared random
// rows, or with slide SLIDE's code's per-point padding and dense update.
func sampledFor(b *testing.B, m *model.MLP, p []float32, y *sparse.CSR, batch int, mode string) *model.Sampled {
	l := m.Layers()[len(m.Layers())-1]
	fam, err := lsh.NewDWTA(l.In, 6, 50, 1)
	if err != nil {
		b.Fatal(err)
	}
	ix, err := lsh.NewIndex(fam, l.Out, 128)
	if err != nil {
		b.Fatal(err)
	}
	ix.Build(p[l.W:l.B], l.In, 1)
	active := (l.Out + 199) / 200
	smp, err := lsh.NewSampler(ix, active, 1)
	if err != nil {
		b.Fatal(err)
	}
	o := model.SampledOptions{Fill: active}
	if mode == "labels" {
		// The defaults: the batch's labels shared, and the correction, its
		// chances from the batch's labels as if they were the training set's.
		o.Labels, o.Correct, o.Inclusion = true, true, inclusion(y, batch, active, l.Out)
	}
	if mode == "slide" {
		o = model.SampledOptions{Pad: active, Dense: true}
	}
	s, err := m.NewSampled(batch, smp, o)
	if err != nil {
		b.Fatal(err)
	}
	return s
}
