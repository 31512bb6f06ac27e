//go:build cuda

package cuda

import (
	"fmt"
	"unsafe"

	"github.com/ebitengine/purego"
)

// CUDA driver results and attributes (cuda.h).
const (
	cudaSuccess        = 0
	cudaErrorNoDevice  = 100
	attrSMs            = 16 // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
	attrComputeMajor   = 75
	attrComputeMinor   = 76
	deviceNameCapacity = 256
)

// driver is the driver's entry points Probe calls.
type driver struct {
	init         func(flags uint32) int32
	version      func(v *int32) int32
	deviceCount  func(n *int32) int32
	device       func(dev *int32, ordinal int32) int32
	deviceName   func(name *byte, n int32, dev int32) int32
	deviceMemory func(bytes *uint64, dev int32) int32
	deviceAttr   func(v *int32, attr int32, dev int32) int32
	errorString  func(code int32, s **byte) int32
	handle       uintptr
	path         string
}

// open loads the first of paths that loads, registers into each of fns
// (pointers to funcs) the symbol of the same index, and returns the path;
// a library that lacks one is not the library wanted. A library stays
// loaded: the functions registered call into it.
func open(what string, paths []string, fix string, symbols []string, fns ...any) (string, error) {
	var why string
	for _, p := range paths {
		h, err := purego.Dlopen(p, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			why = err.Error()
			continue
		}
		for i, s := range symbols {
			sym, err := purego.Dlsym(h, s)
			if err != nil {
				purego.Dlclose(h)
				return "", fmt.Errorf("cuda: %s is no %s: it lacks %s", p, what, s)
			}
			purego.RegisterFunc(fns[i], sym)
		}
		return p, nil
	}
	return "", &MissingError{What: what, Tried: paths, Why: why, Fix: fix}
}

// Probe finds the driver, the GPUs it sees and the toolkit's libraries,
// where o says or else searching (see the package's documentation). It
// returns what it found, and the first piece missing as a *MissingError.
func Probe(o Options) (*System, error) {
	var d driver
	var err error
	d.path, err = open("NVIDIA driver (libcuda.so.1)", driverCandidates(o),
		"install the NVIDIA driver, or name its libcuda.so.1 with "+DriverEnv,
		[]string{"cuInit", "cuDriverGetVersion", "cuDeviceGetCount", "cuDeviceGet", "cuDeviceGetName", "cuDeviceTotalMem_v2", "cuDeviceGetAttribute", "cuGetErrorString"},
		&d.init, &d.version, &d.deviceCount, &d.device, &d.deviceName, &d.deviceMemory, &d.deviceAttr, &d.errorString)
	if err != nil {
		return nil, err
	}
	s := &System{Driver: d.path}
	switch r := d.init(0); r {
	case cudaSuccess:
	case cudaErrorNoDevice:
		return s, &MissingError{What: "GPU", Why: "the driver " + d.path + " sees none", Fix: "nvidia-smi lists the GPUs the driver sees; CUDA_VISIBLE_DEVICES may hide them"}
	default:
		return s, d.fail("cuInit", r)
	}
	var v, n int32
	if r := d.version(&v); r != cudaSuccess {
		return s, d.fail("cuDriverGetVersion", r)
	}
	s.DriverVersion = int(v)
	if r := d.deviceCount(&n); r != cudaSuccess {
		return s, d.fail("cuDeviceGetCount", r)
	}
	if n == 0 {
		return s, &MissingError{What: "GPU", Why: "the driver " + d.path + " sees none", Fix: "nvidia-smi lists the GPUs the driver sees; CUDA_VISIBLE_DEVICES may hide them"}
	}
	for i := range n {
		var dev int32
		if r := d.device(&dev, i); r != cudaSuccess {
			return s, d.fail("cuDeviceGet", r)
		}
		name := make([]byte, deviceNameCapacity)
		var mem uint64
		var sms, major, minor int32
		for _, c := range []struct {
			call string
			r    int32
		}{
			{"cuDeviceGetName", d.deviceName(&name[0], deviceNameCapacity, dev)},
			{"cuDeviceTotalMem", d.deviceMemory(&mem, dev)},
			{"cuDeviceGetAttribute", d.deviceAttr(&sms, attrSMs, dev)},
			{"cuDeviceGetAttribute", d.deviceAttr(&major, attrComputeMajor, dev)},
			{"cuDeviceGetAttribute", d.deviceAttr(&minor, attrComputeMinor, dev)},
		} {
			if c.r != cudaSuccess {
				return s, d.fail(c.call, c.r)
			}
		}
		s.Devices = append(s.Devices, Device{Index: int(i), Name: cString(name), Memory: mem, SMs: int(sms), Major: int(major), Minor: int(minor)})
	}

	fix := "install the CUDA toolkit's libraries (Debian: nvidia-cuda-toolkit), or name their folder with " + LibsEnv
	var nvrtcVersion func(major, minor *int32) int32
	if s.NVRTC, err = open("NVRTC library", candidates(o.Libs, nvrtcNames, "/"), fix, []string{"nvrtcVersion"}, &nvrtcVersion); err != nil {
		return s, err
	}
	var major, minor int32
	nvrtcVersion(&major, &minor)
	s.NVRTCVersion = [2]int{int(major), int(minor)}
	var create func(h *uintptr) int32 // not called: a handle needs a context
	if s.CUBLAS, err = open("cuBLAS library", candidates(o.Libs, cublasNames, "/"), fix, []string{"cublasCreate_v2"}, &create); err != nil {
		return s, err
	}
	return s, nil
}

// fail is the error of driver call that returned r.
func (d *driver) fail(call string, r int32) error {
	var msg *byte
	text := "unknown error"
	if d.errorString(r, &msg) == cudaSuccess && msg != nil {
		text = goString(msg)
	}
	return fmt.Errorf("cuda: %s (driver %s): error %d: %s", call, d.path, r, text)
}

// cString is a C string in b, up to its NUL.
func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// goString copies the C string at p.
func goString(p *byte) string {
	var b []byte
	for q := unsafe.Pointer(p); *(*byte)(q) != 0 && len(b) < 4096; q = unsafe.Add(q, 1) {
		b = append(b, *(*byte)(q))
	}
	return string(b)
}
