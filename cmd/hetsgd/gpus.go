package main

import (
	"context"
	"fmt"
	"io"

	"github.com/hetsgd/hetsgd/cuda"
)

// runGPUs is "hetsgd gpus": the GPUs and CUDA libraries this binary finds
// (package cuda), or what is missing.
func runGPUs(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("gpus", "gpus\n\nLists the GPUs the NVIDIA driver sees and the CUDA libraries found (NVRTC, cuBLAS), or says what is missing and where it looked. "+cuda.DriverEnv+" names the driver's file, "+cuda.LibsEnv+" the folder of the toolkit's libraries. The GPU backend needs a binary built with -tags cuda.", stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	s, err := cuda.Probe(cuda.FromEnv())
	if s != nil {
		if s.Driver != "" {
			fmt.Fprintf(stdout, "driver: %s (CUDA %d.%d)\n", s.Driver, s.DriverVersion/1000, s.DriverVersion%1000/10)
		}
		for _, d := range s.Devices {
			fmt.Fprintln(stdout, d)
		}
		if s.NVRTC != "" {
			fmt.Fprintf(stdout, "NVRTC %d.%d: %s\n", s.NVRTCVersion[0], s.NVRTCVersion[1], s.NVRTC)
		}
		if s.CUBLAS != "" {
			fmt.Fprintf(stdout, "cuBLAS: %s\n", s.CUBLAS)
		}
	}
	return err
}
