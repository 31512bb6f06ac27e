//go:build cuda

package main

import (
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/cuda"
	"github.com/hetsgd/hetsgd/cuda/cudatest"
)

// lastP1 is the P@1 of a report's last evaluation.
func lastP1(t *testing.T, report string) float64 {
	t.Helper()
	p := math.NaN()
	for _, line := range strings.Split(report, "\n") {
		if f := strings.Fields(line); len(f) > 5 && f[0] == "epoch" && f[4] == "P@1" {
			p, _ = strconv.ParseFloat(f[5], 64)
		}
	}
	if math.IsNaN(p) {
		t.Fatalf("no evaluation in\n%s", report)
	}
	return p
}

// A run checkpointed on the GPU resumes on the host, and the reverse, to
// the uninterrupted run's P@1 (within 0.01: the products' rounding
// differs). On the emulator of package cuda's stand-ins, or on the
// machine's GPU with HETSGD_GPU_TEST=real.
func TestResumeAcrossBackends(t *testing.T) {
	if !cudatest.Real() {
		libs, err := cudatest.Build(t.TempDir())
		if err != nil {
			t.Skip(err)
		}
		t.Setenv(cuda.DriverEnv, filepath.Join(libs, "libcuda.so.1"))
		t.Setenv(cuda.LibsEnv, libs)
	}
	args := []string{"train", "--time", "virtual", "--eval-every", "0.25", "--eval-points", "1000", "--progress", "off"}
	_, whole, _ := runCLI(t, append(args, "--epochs", "0.5")...)
	want := lastP1(t, whole)
	for _, b := range [][2]string{{"gpu", "cpu"}, {"cpu", "gpu"}} {
		ck := filepath.Join(t.TempDir(), "ck")
		if code, out, stderr := runCLI(t, append(args, "--epochs", "0.25", "--backend", b[0], "--checkpoint", ck)...); code != 0 {
			t.Fatalf("on %s: exit %d\n%s%s", b[0], code, out, stderr)
		}
		code, out, stderr := runCLI(t, "train", "--resume", ck, "--backend", b[1], "--epochs", "0.5", "--progress", "off")
		if code != 0 {
			t.Fatalf("resumed on %s: exit %d\n%s%s", b[1], code, out, stderr)
		}
		if got := lastP1(t, out); math.Abs(got-want) > 0.01 {
			t.Errorf("half on %s, half on %s: P@1 %v; uninterrupted on the host: %v", b[0], b[1], got, want)
		}
	}
}
