package workload_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/workload"
)

// TimeStep says what it measures, line by line, and its figures hang
// together: the dense work of the shape, the roofline at the peak rate.
func TestTimeStep(t *testing.T) {
	p, err := data.LookupProfile("bibtex")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	res, err := workload.TimeStep(context.Background(), workload.StepShape{Profile: p, Batch: 16, Hidden: 8, Optimizer: "adam", Steps: 2}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if !(res.StepMS["fused"] > 0 && res.StepMS["split"] > 0 && res.PeakGFLOPS > 0) || res.Shape != "bibtex" ||
		math.Abs(res.DenseGFLOP-6*16*8*159/1e9) > 1e-12 || math.Abs(res.RooflineMS-res.DenseGFLOP/res.PeakGFLOPS*1e3) > 1e-9 ||
		res.ParamsBytes != 4*int64((1836+1)*8+(8+1)*159) {
		t.Errorf("timing %+v", res)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{"shape bibtex: batch 16, 1836 inputs at 69 non-zeros, hidden 8, 159 labels", "kernel ", "step (fused)", "step (split)", "sgemm 256×8192×128: NN ", "roofline: "}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), out.String())
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d: %q, want it to begin with %q", i+1, lines[i], w)
		}
	}
}

// --precision both times the dense step at both precisions, side by side,
// where the CPU has bf16 products, and leaves the kernels as it found them.
func TestTimeStepBF16(t *testing.T) {
	p, err := data.LookupProfile("bibtex")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	res, err := workload.TimeStep(context.Background(), workload.StepShape{Profile: p, Batch: 16, Hidden: 8, Optimizer: "adam", Steps: 2, Precision: "both"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if kernel.Precision() != kernel.FP32 || res.StepMS["fused"] <= 0 {
		t.Fatalf("precision %s after, timing %+v", kernel.Precision(), res)
	}
	if bf := kernel.BF16Impl(); bf != "" {
		if res.StepMS["fused-bf16"] <= 0 || res.StepMS["split-bf16"] <= 0 || !strings.Contains(out.String(), "step (fused, bf16 on "+bf+")") {
			t.Errorf("no bf16 step timed: %+v\n%s", res, out.String())
		}
	} else if !strings.Contains(out.String(), "not timed") {
		t.Errorf("no word that bf16 was not timed:\n%s", out.String())
	}
	if _, err := workload.TimeStep(context.Background(), workload.StepShape{Profile: p, Batch: 16, Hidden: 8, Steps: 1, Precision: "fp16"}, &out); err == nil {
		t.Error("precision fp16 accepted")
	}
}

// The sampled layer's step (--output lsh) times its first table build and
// its step, and no dense step: no roofline line either.
func TestTimeStepSampled(t *testing.T) {
	p, err := data.LookupProfile("bibtex")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	res, err := workload.TimeStep(context.Background(), workload.StepShape{Profile: p, Batch: 16, Hidden: 8, Optimizer: "adam", Steps: 2, Output: "lsh"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if _, dense := res.StepMS["fused"]; dense || !(res.StepMS["sampled"] > 0 && res.TablesMS > 0) {
		t.Errorf("timing %+v", res)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{"shape bibtex: ", "kernel ", "tables (DWTA K 6, L 50 over 159 labels): ", "step (sampled, up to 1 labels retrieved a point): ", "sgemm 256×8192×128: NN "}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), out.String())
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d: %q, want it to begin with %q", i+1, lines[i], w)
		}
	}
	bad := workload.StepShape{Profile: p, Batch: 16, Hidden: 8, Optimizer: "adam", Steps: 1, Output: "sparse"}
	if _, err := workload.TimeStep(context.Background(), bad, io.Discard); err == nil || !strings.Contains(err.Error(), "sparse") {
		t.Errorf("output layer %q: error %v, want one naming it", bad.Output, err)
	}
}

// A shape without a batch, hidden units or a step is refused; an unknown
// optimizer is an error; a done context stops the timing with its error.
func TestTimeStepRefusals(t *testing.T) {
	p, _ := data.LookupProfile("delicious")
	good := workload.StepShape{Profile: p, Batch: 4, Hidden: 4, Optimizer: "sgd", Steps: 1}
	for _, bad := range []func(*workload.StepShape){
		func(s *workload.StepShape) { s.Batch = 0 },
		func(s *workload.StepShape) { s.Hidden = 0 },
		func(s *workload.StepShape) { s.Steps = 0 },
	} {
		s := good
		bad(&s)
		if _, err := workload.TimeStep(context.Background(), s, io.Discard); err == nil {
			t.Errorf("%+v was timed", s)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := workload.TimeStep(ctx, good, io.Discard); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled timing: %v", err)
	}
	s := good
	s.Optimizer = "lion"
	if _, err := workload.TimeStep(context.Background(), s, io.Discard); err == nil || !strings.Contains(err.Error(), "lion") {
		t.Errorf("an unknown optimizer: %v", err)
	}
}

// One training step at Delicious's shape, timed: the figures depend on the
// machine, the model's size does not.
func ExampleTimeStep() {
	p, err := data.LookupProfile("delicious")
	if err != nil {
		panic(err)
	}
	res, err := workload.TimeStep(context.Background(), workload.StepShape{Profile: p, Batch: 32, Hidden: 16, Optimizer: "sgd", Steps: 3}, io.Discard)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Shape, res.ParamsBytes, res.StepMS["fused"] > 0, res.RooflineMS > 0)
	// Output: delicious 98908 true true
}
