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
