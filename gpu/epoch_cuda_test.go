//go:build cuda

package gpu_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/hetsgd/hetsgd/cuda/cudatest"
	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/gpu"
	"github.com/hetsgd/hetsgd/metric"
	"github.com/hetsgd/hetsgd/model"
	"github.com/hetsgd/hetsgd/optim"
)

// SetEnv names a folder of train.txt and test.txt for TestEpochOnASet: the
// GPU check's set (the Amazon-670K-like stand-in), which it trains one
// epoch on as the PyTorch peer does (hidden 128, batch 256, Adam 1e-3),
// printing samples a second and P@1 as a JSON line.
const SetEnv = "HETSGD_GPU_SET"

// One epoch learns: P@1 after it beats P@1 before it. On a set named by
// SetEnv, the figures are printed for the GPU check.
func TestEpochOnASet(t *testing.T) {
	g := cudatest.GPU(t)
	hidden, batch, evalPoints := 128, 256, 0
	var train, test *data.Dataset
	var err error
	if dir := os.Getenv(SetEnv); dir != "" {
		train, test, err = data.LoadPair(filepath.Join(dir, "train.txt"), filepath.Join(dir, "test.txt"), data.Auto)
	} else {
		if cudatest.Real() {
			t.Skip("no set named by " + SetEnv)
		}
		// The emulator is slow: a small set, a small network.
		hidden, batch, evalPoints = 16, 32, 200
		prof, _ := data.LookupProfile("bibtex")
		prof.Train, prof.Test = 600, 200
		train, test, err = data.GenerateSets(prof, 1)
	}
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.New(model.Config{Inputs: train.Features(), Hidden: []int{hidden}, Outputs: train.Labels()})
	if err != nil {
		t.Fatal(err)
	}
	p := make([]float32, m.NumParams())
	m.Init(p, 1)
	eval := metric.NewEvaluator(m, test, 256, evalPoints)
	before := eval.Evaluate(p)
	n, err := gpu.NewNet(g, m, batch, train.X.MaxNNZ(batch), train.Y.MaxNNZ(batch))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if err := n.SetParams(p); err != nil {
		t.Fatal(err)
	}
	o, _ := optim.New(optim.Config{Name: "adam"}, len(p))
	res, err := gpu.Epoch(context.Background(), n, train, batch, o, 1e-3, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Params(p); err != nil {
		t.Fatal(err)
	}
	after := eval.Evaluate(p)
	line, _ := json.Marshal(map[string]any{"set": train.Name, "device": g.Device().Name, "hidden": hidden, "batch": batch,
		"samples": res.Samples, "seconds": res.Seconds, "samples_per_s": res.PerSec, "p_at_1_before": before.P1, "p_at_1": after.P1})
	t.Logf("epoch: %s", line)
	if !(after.P1 > before.P1) {
		t.Errorf("P@1 %v after an epoch, %v before", after.P1, before.P1)
	}
}
