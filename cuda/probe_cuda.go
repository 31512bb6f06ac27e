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

// lib is the entry points of the driver, NVRTC and cuBLAS the backend
// calls, registered once the libraries load.
type lib struct {
	driverPath string

	// the driver: devices
	init         func(flags uint32) int32
	version      func(v *int32) int32
	deviceCount  func(n *int32) int32
	device       func(dev *int32, ordinal int32) int32
	deviceName   func(name *byte, n int32, dev int32) int32
	deviceMemory func(bytes *uint64, dev int32) int32
	deviceAttr   func(v *int32, attr int32, dev int32) int32
	errorString  func(code int32, s **byte) int32
	// contexts, memory, modules and launches
	primaryRetain  func(ctx *uintptr, dev int32) int32
	primaryRelease func(dev int32) int32
	ctxSetCurrent  func(ctx uintptr) int32
	ctxSynchronize func() int32
	memAlloc       func(p *uint64, bytes uintptr) int32
	memFree        func(p uint64) int32
	copyHtoD       func(dst uint64, src unsafe.Pointer, bytes uintptr) int32
	copyDtoH       func(dst unsafe.Pointer, src uint64, bytes uintptr) int32
	copyDtoD       func(dst, src uint64, bytes uintptr) int32
	memsetD32      func(dst uint64, v uint32, n uintptr) int32
	memGetInfo     func(free, total *uint64) int32
	moduleLoadData func(m *uintptr, image *byte) int32
	moduleUnload   func(m uintptr) int32
	moduleFunction func(f *uintptr, m uintptr, name *byte) int32
	launchKernel   func(f uintptr, gx, gy, gz, bx, by, bz, shared uint32, stream uintptr, params *unsafe.Pointer, extra uintptr) int32

	// NVRTC
	nvrtcVersion     func(major, minor *int32) int32
	nvrtcCreate      func(prog *uintptr, src, name *byte, headers int32, h, names uintptr) int32
	nvrtcCompile     func(prog uintptr, n int32, options **byte) int32
	nvrtcPTXSize     func(prog uintptr, n *uintptr) int32
	nvrtcPTX         func(prog uintptr, ptx *byte) int32
	nvrtcLogSize     func(prog uintptr, n *uintptr) int32
	nvrtcLog         func(prog uintptr, log *byte) int32
	nvrtcDestroy     func(prog *uintptr) int32
	nvrtcErrorString func(r int32) *byte

	// cuBLAS
	blasCreate   func(h *uintptr) int32
	blasDestroy  func(h uintptr) int32
	blasMathMode func(h uintptr, mode int32) int32
	blasSgemm    func(h uintptr, ta, tb, m, n, k int32, alpha *float32, a uint64, lda int32, b uint64, ldb int32, beta *float32, c uint64, ldc int32) int32
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
	_, s, err := load(o)
	return s, err
}

// load is Probe, returning the libraries' entry points too.
func load(o Options) (*lib, *System, error) {
	var d lib
	var err error
	d.driverPath, err = open("NVIDIA driver (libcuda.so.1)", driverCandidates(o),
		"install the NVIDIA driver, or name its libcuda.so.1 with "+DriverEnv,
		[]string{"cuInit", "cuDriverGetVersion", "cuDeviceGetCount", "cuDeviceGet", "cuDeviceGetName", "cuDeviceTotalMem_v2", "cuDeviceGetAttribute", "cuGetErrorString",
			"cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease_v2", "cuCtxSetCurrent", "cuCtxSynchronize",
			"cuMemAlloc_v2", "cuMemFree_v2", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2", "cuMemcpyDtoD_v2", "cuMemsetD32_v2", "cuMemGetInfo_v2",
			"cuModuleLoadData", "cuModuleUnload", "cuModuleGetFunction", "cuLaunchKernel"},
		&d.init, &d.version, &d.deviceCount, &d.device, &d.deviceName, &d.deviceMemory, &d.deviceAttr, &d.errorString,
		&d.primaryRetain, &d.primaryRelease, &d.ctxSetCurrent, &d.ctxSynchronize,
		&d.memAlloc, &d.memFree, &d.copyHtoD, &d.copyDtoH, &d.copyDtoD, &d.memsetD32, &d.memGetInfo,
		&d.moduleLoadData, &d.moduleUnload, &d.moduleFunction, &d.launchKernel)
	if err != nil {
		return nil, nil, err
	}
	s := &System{Driver: d.driverPath}
	noGPU := &MissingError{What: "GPU", Why: "the driver " + d.driverPath + " sees none", Fix: "nvidia-smi lists the GPUs the driver sees; CUDA_VISIBLE_DEVICES may hide them"}
	switch r := d.init(0); r {
	case cudaSuccess:
	case cudaErrorNoDevice:
		return nil, s, noGPU
	default:
		return nil, s, d.fail("cuInit", r)
	}
	var v, n int32
	if r := d.version(&v); r != cudaSuccess {
		return nil, s, d.fail("cuDriverGetVersion", r)
	}
	s.DriverVersion = int(v)
	if r := d.deviceCount(&n); r != cudaSuccess {
		return nil, s, d.fail("cuDeviceGetCount", r)
	}
	if n == 0 {
		return nil, s, noGPU
	}
	for i := range n {
		dev, err := d.describe(i)
		if err != nil {
			return nil, s, err
		}
		s.Devices = append(s.Devices, dev)
	}

	fix := "install the CUDA toolkit's libraries (Debian: nvidia-cuda-toolkit), or name their folder with " + LibsEnv
	if s.NVRTC, err = open("NVRTC library", candidates(o.Libs, nvrtcNames, "/"), fix,
		[]string{"nvrtcVersion", "nvrtcCreateProgram", "nvrtcCompileProgram", "nvrtcGetPTXSize", "nvrtcGetPTX", "nvrtcGetProgramLogSize", "nvrtcGetProgramLog", "nvrtcDestroyProgram", "nvrtcGetErrorString"},
		&d.nvrtcVersion, &d.nvrtcCreate, &d.nvrtcCompile, &d.nvrtcPTXSize, &d.nvrtcPTX, &d.nvrtcLogSize, &d.nvrtcLog, &d.nvrtcDestroy, &d.nvrtcErrorString); err != nil {
		return nil, s, err
	}
	var major, minor int32
	d.nvrtcVersion(&major, &minor)
	s.NVRTCVersion = [2]int{int(major), int(minor)}
	if s.CUBLAS, err = open("cuBLAS library", candidates(o.Libs, cublasNames, "/"), fix,
		[]string{"cublasCreate_v2", "cublasDestroy_v2", "cublasSetMathMode", "cublasSgemm_v2"},
		&d.blasCreate, &d.blasDestroy, &d.blasMathMode, &d.blasSgemm); err != nil {
		return nil, s, err
	}
	return &d, s, nil
}

// describe returns the driver's description of GPU i.
func (d *lib) describe(i int32) (Device, error) {
	var dev int32
	if r := d.device(&dev, i); r != cudaSuccess {
		return Device{}, d.fail("cuDeviceGet", r)
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
			return Device{}, d.fail(c.call, c.r)
		}
	}
	return Device{Index: int(i), Name: cString(name), Memory: mem, SMs: int(sms), Major: int(major), Minor: int(minor)}, nil
}

// fail is the error of the driver call that returned r.
func (d *lib) fail(call string, r int32) error {
	var msg *byte
	text := "unknown error"
	if d.errorString(r, &msg) == cudaSuccess && msg != nil {
		text = goString(msg)
	}
	return fmt.Errorf("cuda: %s (driver %s): error %d: %s", call, d.driverPath, r, text)
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
