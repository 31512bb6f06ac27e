//go:build openblas

package kernel_test

// With the openblas tag the package's tests run with OpenBLAS registered:
// forEachImpl then covers it like the built-in implementations.

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
