//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeLib compiles testdata/fake.c into dir/name with the macros given,
// skipping the test without a C compiler.
func fakeLib(t *testing.T, dir, name string, defs ...string) string {
	t.Helper()
	if os.Getenv("HETSGD_GPU_TEST") == "real" {
		t.Skip("the loader's tests against stand-ins: this run is on the machine's GPU")
	}
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc to build a stand-in of the CUDA libraries")
	}
	out := filepath.Join(dir, name)
	args := append([]string{"-shared", "-fPIC", "-o", out, filepath.Join("testdata", "fake.c")}, defs...)
	if b, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v: %s", err, b)
	}
	return out
}

// Probe lists the GPUs a driver sees, and finds the toolkit's libraries
// in the folder named.
func TestProbeFindsDevices(t *testing.T) {
	dir := t.TempDir()
	driver := fakeLib(t, dir, "libcuda.so.1", "-DFAKE_DRIVER")
	fakeLib(t, dir, "libnvrtc.so", "-DFAKE_NVRTC")
	fakeLib(t, dir, "libcublas.so.13", "-DFAKE_CUBLAS")
	s, err := Probe(Options{Driver: driver, Libs: dir})
	if err != nil {
		t.Fatal(err)
	}
	if s.Driver != driver || s.DriverVersion != 13000 || len(s.Devices) != 2 || s.NVRTCVersion != [2]int{13, 0} ||
		s.NVRTC != filepath.Join(dir, "libnvrtc.so") || s.CUBLAS != filepath.Join(dir, "libcublas.so.13") {
		t.Fatalf("%+v", s)
	}
	if got, want := s.Devices[1].String(), "GPU 1: Fake GPU 1, 32.0 GiB, 122 SMs, compute capability 9.0"; got != want {
		t.Errorf("device 1: %q, want %q", got, want)
	}
}

// What is missing is named, with where it was looked for and what to do.
func TestProbeSaysWhatIsMissing(t *testing.T) {
	dir := t.TempDir()
	var missing *MissingError
	_, err := Probe(Options{Driver: filepath.Join(dir, "libcuda.so.1")})
	if !errors.As(err, &missing) || !strings.Contains(err.Error(), "no NVIDIA driver") || !strings.Contains(err.Error(), filepath.Join(dir, "libcuda.so.1")) || !strings.Contains(err.Error(), DriverEnv) {
		t.Errorf("no driver: %v", err)
	}
	// Each in a folder of its own: the loader keeps a library loaded by
	// its path.
	for i, c := range []struct {
		defs []string
		says string
	}{
		{[]string{"-DFAKE_DEVICES=0"}, "no GPU"},
		{[]string{"-DFAKE_INIT=100"}, "no GPU"},
		{[]string{"-DFAKE_INIT=999"}, "cuInit (driver " + filepath.Join(dir, "2", "libcuda.so.1") + "): error 999: CUDA_ERROR_UNKNOWN"},
	} {
		sub := filepath.Join(dir, fmt.Sprint(i))
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		driver := fakeLib(t, sub, "libcuda.so.1", append(c.defs, "-DFAKE_DRIVER")...)
		if _, err := Probe(Options{Driver: driver, Libs: dir}); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%v: %v, want it to say %q", c.defs, err, c.says)
		}
	}
	driver := fakeLib(t, dir, "libcuda.so.1", "-DFAKE_DRIVER")
	empty := t.TempDir()
	s, err := Probe(Options{Driver: driver, Libs: empty})
	if !errors.As(err, &missing) || !strings.Contains(err.Error(), "no NVRTC library") || !strings.Contains(err.Error(), filepath.Join(empty, "libnvrtc.so")) || !strings.Contains(err.Error(), LibsEnv) {
		t.Errorf("no NVRTC: %v", err)
	}
	if s == nil || len(s.Devices) != 2 {
		t.Errorf("what was found before the missing library: %+v", s)
	}
	// A library without the entry points wanted is not taken for one.
	other := fakeLib(t, t.TempDir(), "libother.so", "-DFAKE_DRIVER", "-DcuInit=notCuInit")
	if _, err := Probe(Options{Driver: other}); err == nil || !strings.Contains(err.Error(), "lacks cuInit") {
		t.Errorf("a library that is not the driver: %v", err)
	}
}
