package cuda

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// DriverEnv and LibsEnv are the environment variables that say where the
// driver's file and the folder of the toolkit's libraries are.
const (
	DriverEnv = "HETSGD_CUDA_DRIVER"
	LibsEnv   = "HETSGD_CUDA_LIBS"
)

// ErrNotBuilt is Probe in a binary built without the GPU backend.
var ErrNotBuilt = errors.New("cuda: this hetsgd was built without the GPU backend: build one with go build -tags cuda ./cmd/hetsgd")

// Options say where the libraries are: the driver's file and the folder of
// NVRTC and cuBLAS ("": searched for).
type Options struct {
	Driver string
	Libs   string
}

// FromEnv returns the Options the environment gives (DriverEnv, LibsEnv).
func FromEnv() Options {
	return Options{Driver: os.Getenv(DriverEnv), Libs: os.Getenv(LibsEnv)}
}

// Device is a GPU the driver sees.
type Device struct {
	Index        int
	Name         string
	Memory       uint64 // bytes
	SMs          int    // streaming multiprocessors
	Major, Minor int    // compute capability
}

func (d Device) String() string {
	return fmt.Sprintf("GPU %d: %s, %.1f GiB, %d SMs, compute capability %d.%d", d.Index, d.Name, float64(d.Memory)/(1<<30), d.SMs, d.Major, d.Minor)
}

// System is what Probe found: the driver and the GPUs it sees, and the
// toolkit's libraries.
type System struct {
	Driver        string // the driver's file as loaded
	DriverVersion int    // CUDA's version the driver supports, 1000·major + 10·minor
	Devices       []Device
	NVRTC         string // the NVRTC library as loaded
	NVRTCVersion  [2]int // its major and minor version
	CUBLAS        string // the cuBLAS library as loaded
}

// A MissingError is a piece of the GPU backend that is not there: the
// driver, a library or a GPU; the places tried, and what to do.
type MissingError struct {
	What  string   // what is missing
	Tried []string // where it was looked for
	Why   string   // the last failure's words, when they say more
	Fix   string   // what to do
}

func (e *MissingError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cuda: no %s", e.What)
	if len(e.Tried) > 0 {
		fmt.Fprintf(&b, " (tried %s)", strings.Join(e.Tried, ", "))
	}
	if e.Why != "" {
		fmt.Fprintf(&b, ": %s", e.Why)
	}
	if e.Fix != "" {
		fmt.Fprintf(&b, "; %s", e.Fix)
	}
	return b.String()
}

// candidates returns where to look for a library of the given file names
// (the first its preferred name): in dir alone when the user named one;
// otherwise each name as the dynamic loader finds it, then in the
// toolkit's usual folders (found by glob, under root), newest first.
func candidates(dir string, names []string, root string) []string {
	if dir != "" {
		var out []string
		for _, n := range names {
			out = append(out, filepath.Join(dir, n))
		}
		return out
	}
	out := slices.Clone(names)
	folders := []string{filepath.Join(root, "usr/local/cuda/lib64")}
	toolkits, _ := filepath.Glob(filepath.Join(root, "usr/local/cuda-*/targets/x86_64-linux/lib"))
	slices.SortFunc(toolkits, func(a, b string) int { return compareVersions(b, a) })
	for _, f := range append(folders, toolkits...) {
		for _, n := range names {
			out = append(out, filepath.Join(f, n))
		}
	}
	return out
}

// compareVersions orders paths holding cuda-MAJOR.MINOR by that version.
func compareVersions(a, b string) int {
	va, vb := toolkitVersion(a), toolkitVersion(b)
	if c := va[0] - vb[0]; c != 0 {
		return c
	}
	return va[1] - vb[1]
}

func toolkitVersion(path string) [2]int {
	var v [2]int
	i := strings.Index(path, "cuda-")
	if i >= 0 {
		fmt.Sscanf(path[i+len("cuda-"):], "%d.%d", &v[0], &v[1])
	}
	return v
}

// The libraries' file names, the unversioned link first (a toolkit's), then
// the versions the backend knows.
var (
	driverNames = []string{"libcuda.so.1", "libcuda.so"}
	nvrtcNames  = []string{"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"}
	cublasNames = []string{"libcublas.so", "libcublas.so.13", "libcublas.so.12"}
)

// driverCandidates returns where to look for the driver: o.Driver alone
// when given; otherwise the dynamic loader's search, then the usual
// folders.
func driverCandidates(o Options) []string {
	if o.Driver != "" {
		return []string{o.Driver}
	}
	return append(slices.Clone(driverNames), "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/lib64/libcuda.so.1", "/usr/lib/libcuda.so.1")
}
