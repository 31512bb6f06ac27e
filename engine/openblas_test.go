//go:build openblas

package engine

// With the openblas tag the engine's tests and benchmarks (BenchmarkStep)
// run on OpenBLAS's SGEMM.

import (
	"os"
	"testing"

	"github.com/hetsgd/hetsgd/kernel"
	_ "github.com/hetsgd/hetsgd/kernel/openblas"
)

func TestMain(m *testing.M) {
	kernel.ReexecForBLAS()
	os.Exit(m.Run())
}
