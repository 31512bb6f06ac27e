//go:build cuda

package cudatest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/hetsgd/hetsgd/cuda"
)

// Env chooses the device of the tests: "real" for the machine's GPU.
const Env = "HETSGD_GPU_TEST"

// Real reports whether the tests run on a real GPU.
func Real() bool { return os.Getenv(Env) == "real" }

var (
	libs    string // the stand-ins' folder, made by Main
	libsErr error
	once    sync.Once
	gpu     *cuda.GPU
	gpuErr  error
)

// Main runs a package's tests, with the stand-in libraries built into a
// folder that goes when they end.
func Main(m *testing.M) {
	code := func() int {
		if !Real() {
			dir, err := os.MkdirTemp("", "hetsgd-cudatest-")
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			defer os.RemoveAll(dir)
			libs, libsErr = Build(dir)
		}
		return m.Run()
	}()
	os.Exit(code)
}

// Build compiles the stand-ins of the driver, NVRTC and cuBLAS into dir
// and returns the folder to name them by; an error when there is no C
// compiler.
func Build(dir string) (string, error) {
	_, file, _, _ := runtime.Caller(0)
	testdata := filepath.Join(filepath.Dir(file), "..", "testdata")
	cc, err := exec.LookPath("gcc")
	if err != nil {
		return "", fmt.Errorf("no gcc to build the stand-ins of CUDA's libraries")
	}
	if _, err := exec.LookPath("g++"); err != nil {
		return "", fmt.Errorf("no g++ for the stand-in NVRTC")
	}
	for _, l := range []struct{ name, part, driver string }{
		{"libcuda.so.1", "-DFAKE_DRIVER", ""},
		{"libnvrtc.so", "-DFAKE_NVRTC", ""},
		{"libcublas.so", "-DFAKE_CUBLAS", `-DFAKE_DRIVER_PATH="` + filepath.Join(dir, "libcuda.so.1") + `"`},
	} {
		args := []string{"-shared", "-fPIC", "-O1", "-o", filepath.Join(dir, l.name), filepath.Join(testdata, "fake.c"), l.part,
			`-DEMU_H="` + filepath.Join(testdata, "emu.h") + `"`}
		if l.driver != "" {
			args = append(args, l.driver)
		}
		if b, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
			return "", fmt.Errorf("gcc: %v: %s", err, b)
		}
	}
	return dir, nil
}

// Options names the stand-ins built by Main (tb skipped without them), or
// the environment's libraries on a real GPU.
func Options(tb testing.TB) cuda.Options {
	tb.Helper()
	if Real() {
		return cuda.FromEnv()
	}
	if libs == "" && libsErr == nil {
		tb.Fatal("cudatest: the package's TestMain does not call cudatest.Main")
	}
	if libsErr != nil {
		tb.Skip(libsErr)
	}
	return cuda.Options{Driver: filepath.Join(libs, "libcuda.so.1"), Libs: libs}
}

// GPU returns the tests' device, opened once for the package: GPU 0 of
// Options.
func GPU(tb testing.TB) *cuda.GPU {
	tb.Helper()
	o := Options(tb)
	once.Do(func() { gpu, gpuErr = cuda.Open(o, 0) })
	if gpuErr != nil {
		tb.Fatal(gpuErr)
	}
	return gpu
}
