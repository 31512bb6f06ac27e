//go:build !cuda

package main

import (
	"strings"
	"testing"
)

// The default binary has no GPU backend: gpus says so, and how to build
// one that has it, and fails.
func TestGPUsWithoutTheBackend(t *testing.T) {
	code, _, stderr := runCLI(t, "gpus")
	if code == 0 || !strings.Contains(stderr, "built without the GPU backend") || !strings.Contains(stderr, "-tags cuda") {
		t.Errorf("gpus: exit %d, %s", code, stderr)
	}
}

// train --backend gpu in the default binary fails before it loads data
// (an empty folder is not the error), saying what is missing.
func TestTrainOnAGPUWithoutTheBackend(t *testing.T) {
	code, _, stderr := runCLI(t, "train", "--backend", "gpu", "--data", t.TempDir())
	if code == 0 || !strings.Contains(stderr, "--backend gpu") || !strings.Contains(stderr, "built without the GPU backend") {
		t.Errorf("train --backend gpu: exit %d, %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, "train", "--backend", "tpu"); code == 0 || !strings.Contains(stderr, `--backend "tpu": want cpu or gpu`) {
		t.Errorf("train --backend tpu: exit %d, %s", code, stderr)
	}
}
