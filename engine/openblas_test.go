//go:build openblas

package engine

// With the openblas tag the engine's tests and benchmarks (BenchmarkStep)
// run on OpenBLAS's SGEMM.

import (
	"os"
	"testing"

	"github.com/hetsgd/hetsgd/internal/reexec"
	"github.com/hetsgd/hetsgd/kernel"
	_ "github.com/hetsgd/hetsgd/kernel/openblas"
)

func TestMain(m *testing.M) {
	reexec.With(kernel.BLASEnv())
	os.Exit(m.Run())
}
