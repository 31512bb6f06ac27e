//go:build cuda

package train

import (
	"sync"

	"github.com/hetsgd/hetsgd/cuda"
	"github.com/hetsgd/hetsgd/gpu"
	"github.com/hetsgd/hetsgd/workload"
)

// The GPU is opened once a process and kept: its context lives as long as
// the program (a test binary may run many runs), and the driver frees it
// at exit.
var (
	gpuOnce sync.Once
	gpuDev  *cuda.GPU
	gpuErr  error
)

// openGPU returns GPU 0 of the driver the environment names (cuda.FromEnv)
// as a workload backend.
func openGPU() (workload.Backend, error) {
	gpuOnce.Do(func() { gpuDev, gpuErr = cuda.Open(cuda.FromEnv(), 0) })
	if gpuErr != nil {
		return nil, gpuErr
	}
	return gpu.Backend{GPU: gpuDev}, nil
}
