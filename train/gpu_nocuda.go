//go:build !cuda

package train

import (
	"github.com/hetsgd/hetsgd/cuda"
	"github.com/hetsgd/hetsgd/workload"
)

// openGPU says this binary has no GPU backend.
func openGPU() (workload.Backend, error) { return nil, cuda.ErrNotBuilt }
