package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/train"
	"github.com/hetsgd/hetsgd/workload"
)

func runStep(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("step", "step [--like SHAPE] [--batch N] [--hidden N] [--optimizer NAME] [--steps N] [--output dense|lsh|both] [--precision fp32|bf16|both]", stderr)
	like := fs.String("like", "amazon-670k", "shape: the statistics of a set the generator imitates: "+strings.Join(data.ProfileNames(), ", "))
	batch := fs.Int("batch", 256, "batch size")
	hidden := fs.Int("hidden", 128, "hidden units")
	optName := fs.String("optimizer", "sgd", "sgd, momentum or adam")
	steps := fs.Int("steps", 5, "timed steps of each kind (the median is reported)")
	output := fs.String("output", "dense", "output layer: dense (the fused and the split step), lsh (the sampled layer's first table build and step, at train --output lsh's defaults) or both")
	precision := fs.String("precision", "fp32", "dense layer's products: fp32, bf16 (where the CPU has AVX512-BF16) or both, side by side")
	train.DocumentRanges(fs, engine.Ranges)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := train.CheckRanges(fs, engine.Ranges); err != nil {
		return err
	}
	prof, err := data.LookupProfile(*like)
	if err != nil {
		return fmt.Errorf("--like: %w", err)
	}
	if *batch < 1 || *hidden < 1 || *steps < 1 {
		return fmt.Errorf("--batch, --hidden and --steps must be at least 1")
	}
	if *output != "dense" && *output != "lsh" && *output != "both" {
		return fmt.Errorf("--output %q: want dense, lsh or both", *output)
	}
	res, err := workload.TimeStep(ctx, workload.StepShape{Profile: prof, Batch: *batch, Hidden: *hidden, Optimizer: *optName, Steps: *steps, Output: *output, Precision: *precision}, stdout)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(res)
	fmt.Fprintf(stdout, "%s\n", b)
	return nil
}
