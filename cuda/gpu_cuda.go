//go:build cuda

package cuda

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"syscall"
	"unsafe"
)

// NVRTC's and cuBLAS's constants (nvrtc.h, cublas_api.h).
const (
	nvrtcSuccess     = 0
	blasSuccess      = 0
	blasOpN          = 0
	blasOpT          = 1
	blasDefaultMath  = 0
	blasTF32Math     = 3
	maxKernelArgs    = 32
	maxThreadsABlock = 1024
)

// A GPU is one device of the driver's, with a context of its own (the
// device's primary context) and a cuBLAS handle in it.
//
// A CUDA context is current on an OS thread, not on a goroutine: a call
// made from another thread fails (invalid context). So a GPU owns one
// goroutine locked to its thread, and every call into the libraries runs
// there. Its methods may be called from any goroutine; from inside Do they
// run in line.
type GPU struct {
	lib  *lib
	info Device
	dev  int32
	ctx  uintptr
	blas uintptr
	tid  int // the owner's thread

	work chan func()
	done chan struct{}

	// args holds a launch's arguments, params points at them (cuLaunchKernel
	// reads each argument through a pointer): sized once, so that a launch
	// does not allocate.
	args   [maxKernelArgs]uint64
	params [maxKernelArgs]unsafe.Pointer

	mu      sync.Mutex // modules
	modules map[[sha256.Size]byte]*Module
	closed  bool
}

// Open loads the libraries where o says (as Probe) and opens GPU index.
func Open(o Options, index int) (*GPU, error) {
	l, s, err := load(o)
	if err != nil {
		return nil, err
	}
	if index < 0 || index >= len(s.Devices) {
		return nil, fmt.Errorf("cuda: no GPU %d: the driver sees %d (0 to %d)", index, len(s.Devices), len(s.Devices)-1)
	}
	g := &GPU{lib: l, info: s.Devices[index], work: make(chan func()), done: make(chan struct{}), modules: map[[sha256.Size]byte]*Module{}}
	ready := make(chan error)
	go g.own(int32(index), ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	return g, nil
}

// own is the goroutine that owns the context: it makes the context current
// on its locked thread, creates the cuBLAS handle there, and runs the work
// sent until Close.
func (g *GPU) own(index int32, ready chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	l := g.lib
	err := func() error {
		if r := l.device(&g.dev, index); r != cudaSuccess {
			return l.fail("cuDeviceGet", r)
		}
		if r := l.primaryRetain(&g.ctx, g.dev); r != cudaSuccess {
			return l.fail("cuDevicePrimaryCtxRetain", r)
		}
		if r := l.ctxSetCurrent(g.ctx); r != cudaSuccess {
			l.primaryRelease(g.dev)
			return l.fail("cuCtxSetCurrent", r)
		}
		if r := l.blasCreate(&g.blas); r != blasSuccess {
			l.primaryRelease(g.dev)
			return fmt.Errorf("cuda: cublasCreate on GPU %d: cuBLAS status %d", index, r)
		}
		return nil
	}()
	g.tid = syscall.Gettid()
	ready <- err
	if err != nil {
		return
	}
	for f := range g.work {
		f()
	}
	l.blasDestroy(g.blas)
	l.ctxSynchronize()
	l.primaryRelease(g.dev)
	close(g.done)
}

// Device describes the GPU.
func (g *GPU) Device() Device { return g.info }

// Do runs f on the goroutine that owns the context and returns its error:
// a step's launches sent at once rather than a hop each.
func (g *GPU) Do(f func() error) error {
	if syscall.Gettid() == g.tid {
		return f()
	}
	var err error
	ran := make(chan struct{})
	g.work <- func() { err = f(); close(ran) }
	<-ran
	return err
}

// Close frees the GPU's context; its buffers and modules go with it.
func (g *GPU) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	g.closed = true
	close(g.work)
	<-g.done
	return nil
}

// call runs a driver call on the owner's thread and names it in an error.
func (g *GPU) call(name string, f func() int32) error {
	return g.Do(func() error {
		if r := f(); r != cudaSuccess {
			return g.lib.fail(name, r)
		}
		return nil
	})
}

// Buffer is device memory of 4-byte elements (float32 or int32): Len of
// them at Ptr.
type Buffer struct {
	Ptr uint64
	Len int
}

// Slice is the buffer's elements [lo, hi).
func (b Buffer) Slice(lo, hi int) Buffer {
	if lo < 0 || hi < lo || hi > b.Len {
		panic(fmt.Sprintf("cuda: slice [%d:%d] of a buffer of %d", lo, hi, b.Len))
	}
	return Buffer{Ptr: b.Ptr + 4*uint64(lo), Len: hi - lo}
}

// Alloc allocates n elements of device memory (uninitialised).
func (g *GPU) Alloc(n int) (Buffer, error) {
	var p uint64
	err := g.Do(func() error {
		if r := g.lib.memAlloc(&p, uintptr(4*max(n, 1))); r != cudaSuccess {
			return fmt.Errorf("cuda: allocating %.1f MiB on %s: %w", float64(4*n)/(1<<20), g.info.Name, g.lib.fail("cuMemAlloc", r))
		}
		return nil
	})
	return Buffer{Ptr: p, Len: n}, err
}

// FreeMemory returns the bytes of device memory free now: what a replica
// about to be allocated is checked against, since other replicas (and
// other programs) may hold part of the GPU.
func (g *GPU) FreeMemory() (uint64, error) {
	var free, total uint64
	err := g.call("cuMemGetInfo", func() int32 { return g.lib.memGetInfo(&free, &total) })
	return free, err
}

// Free frees b.
func (g *GPU) Free(b Buffer) error {
	if b.Ptr == 0 {
		return nil
	}
	return g.call("cuMemFree", func() int32 { return g.lib.memFree(b.Ptr) })
}

// Element is what a Buffer holds.
type Element interface{ ~float32 | ~int32 | ~uint32 }

// CopyIn copies src into dst's first len(src) elements.
func CopyIn[T Element](g *GPU, dst Buffer, src []T) error {
	if len(src) > dst.Len {
		return fmt.Errorf("cuda: copying %d elements into a buffer of %d", len(src), dst.Len)
	}
	if len(src) == 0 {
		return nil
	}
	return g.call("cuMemcpyHtoD", func() int32 { return g.lib.copyHtoD(dst.Ptr, unsafe.Pointer(&src[0]), uintptr(4*len(src))) })
}

// CopyOut copies src's first len(dst) elements into dst.
func CopyOut[T Element](g *GPU, dst []T, src Buffer) error {
	if len(dst) > src.Len {
		return fmt.Errorf("cuda: copying %d elements out of a buffer of %d", len(dst), src.Len)
	}
	if len(dst) == 0 {
		return nil
	}
	return g.call("cuMemcpyDtoH", func() int32 { return g.lib.copyDtoH(unsafe.Pointer(&dst[0]), src.Ptr, uintptr(4*len(dst))) })
}

// Copy copies src into dst, on the GPU (the buffers have one length).
func (g *GPU) Copy(dst, src Buffer) error {
	if dst.Len != src.Len {
		return fmt.Errorf("cuda: copying a buffer of %d elements into one of %d", src.Len, dst.Len)
	}
	return g.call("cuMemcpyDtoD", func() int32 { return g.lib.copyDtoD(dst.Ptr, src.Ptr, uintptr(4*dst.Len)) })
}

// Fill sets every element of b to the bits of v (0 for zero).
func (g *GPU) Fill(b Buffer, v uint32) error {
	return g.call("cuMemsetD32", func() int32 { return g.lib.memsetD32(b.Ptr, v, uintptr(b.Len)) })
}

// Sync waits for the GPU's work so far.
func (g *GPU) Sync() error {
	return g.call("cuCtxSynchronize", func() int32 { return g.lib.ctxSynchronize() })
}

// A Module is a program compiled for the GPU: its kernels by name.
type Module struct {
	g      *GPU
	handle uintptr
	funcs  map[string]Function
}

// Function is a kernel of a module.
type Function struct {
	handle uintptr
	name   string
}

// A CompileError is NVRTC's refusal of a program, with its log.
type CompileError struct {
	Name string
	Log  string
}

func (e *CompileError) Error() string {
	return fmt.Sprintf("cuda: NVRTC could not compile %s:\n%s", e.Name, e.Log)
}

// Compile compiles CUDA C source with NVRTC for this GPU's architecture
// and loads it, the first time a source is asked for; later calls return
// the same module. (The cache lives as long as the GPU: NVRTC takes tens
// of milliseconds a program, so a cache on disk would save little.)
func (g *GPU) Compile(name, source string) (*Module, error) {
	key := sha256.Sum256([]byte(source))
	g.mu.Lock()
	defer g.mu.Unlock()
	if m := g.modules[key]; m != nil {
		return m, nil
	}
	ptx, err := g.ptx(name, source)
	if err != nil {
		return nil, err
	}
	m := &Module{g: g, funcs: map[string]Function{}}
	if err := g.call("cuModuleLoadData", func() int32 { return g.lib.moduleLoadData(&m.handle, &ptx[0]) }); err != nil {
		return nil, fmt.Errorf("cuda: loading %s: %w", name, err)
	}
	g.modules[key] = m
	return m, nil
}

// ptx compiles source to PTX, NUL-terminated.
func (g *GPU) ptx(name, source string) ([]byte, error) {
	l := g.lib
	nvrtc := func(call string, r int32) error {
		if r == nvrtcSuccess {
			return nil
		}
		return fmt.Errorf("cuda: %s of %s: %s", call, name, goString(l.nvrtcErrorString(r)))
	}
	var prog uintptr
	if err := nvrtc("nvrtcCreateProgram", l.nvrtcCreate(&prog, cstr(source), cstr(name), 0, 0, 0)); err != nil {
		return nil, err
	}
	defer l.nvrtcDestroy(&prog)
	arch := cstr(fmt.Sprintf("--gpu-architecture=compute_%d%d", g.info.Major, g.info.Minor))
	opts := []*byte{arch, cstr("--std=c++17")}
	if r := l.nvrtcCompile(prog, int32(len(opts)), &opts[0]); r != nvrtcSuccess {
		var n uintptr
		l.nvrtcLogSize(prog, &n)
		log := make([]byte, max(n, 1))
		l.nvrtcLog(prog, &log[0])
		return nil, &CompileError{Name: name, Log: cString(log)}
	}
	var n uintptr
	if err := nvrtc("nvrtcGetPTXSize", l.nvrtcPTXSize(prog, &n)); err != nil {
		return nil, err
	}
	ptx := make([]byte, n+1)
	if err := nvrtc("nvrtcGetPTX", l.nvrtcPTX(prog, &ptx[0])); err != nil {
		return nil, err
	}
	ptx[n] = 0
	return ptx, nil
}

// Function returns the kernel called name (declared extern "C").
func (m *Module) Function(name string) (Function, error) {
	m.g.mu.Lock()
	defer m.g.mu.Unlock()
	if f, ok := m.funcs[name]; ok {
		return f, nil
	}
	f := Function{name: name}
	if err := m.g.call("cuModuleGetFunction", func() int32 { return m.g.lib.moduleFunction(&f.handle, m.handle, cstr(name)) }); err != nil {
		return Function{}, fmt.Errorf("cuda: kernel %s: %w", name, err)
	}
	m.funcs[name] = f
	return f, nil
}

// Dim is a launch's grid or block shape.
type Dim struct{ X, Y, Z int }

// D1 is a one-dimensional shape.
func D1(x int) Dim { return Dim{x, 1, 1} }

// Launch runs f on a grid of blocks, each of block threads, with args: a
// kernel's arguments in order, each made by Ptr, I32 or F32 (8 bytes a
// slot, read as the parameter's type).
func (g *GPU) Launch(f Function, grid, block Dim, args ...uint64) error {
	if len(args) > maxKernelArgs {
		return fmt.Errorf("cuda: kernel %s launched with %d arguments, more than %d", f.name, len(args), maxKernelArgs)
	}
	if n := block.X * block.Y * block.Z; n < 1 || n > maxThreadsABlock || grid.X < 1 || grid.Y < 1 || grid.Z < 1 {
		return fmt.Errorf("cuda: kernel %s launched on a grid of %v blocks of %v threads", f.name, grid, block)
	}
	return g.Do(func() error {
		for i, a := range args {
			g.args[i] = a
			g.params[i] = unsafe.Pointer(&g.args[i])
		}
		r := g.lib.launchKernel(f.handle, uint32(grid.X), uint32(grid.Y), uint32(grid.Z), uint32(block.X), uint32(block.Y), uint32(block.Z), 0, 0, &g.params[0], 0)
		if r != cudaSuccess {
			return fmt.Errorf("cuda: kernel %s: %w", f.name, g.lib.fail("cuLaunchKernel", r))
		}
		return nil
	})
}

// Ptr, I32 and F32 are a kernel's arguments: a buffer's address, an int
// and a float.
func Ptr(b Buffer) uint64   { return b.Ptr }
func I32(v int) uint64      { return uint64(uint32(int32(v))) }
func F32(v float32) uint64  { return uint64(math.Float32bits(v)) }
func cstr(s string) *byte   { b := append([]byte(s), 0); return &b[0] }
func errBLAS(r int32) error { return fmt.Errorf("cuBLAS status %d", r) }

// ErrMath is SetMath given a mode it does not know.
var ErrMath = errors.New("cuda: math mode is fp32 or tf32")

// SetMath sets cuBLAS's products to fp32 or tf32 (tensor cores, inputs
// rounded to 10 bits of mantissa).
func (g *GPU) SetMath(mode string) error {
	var v int32
	switch mode {
	case "fp32":
		v = blasDefaultMath
	case "tf32":
		v = blasTF32Math
	default:
		return fmt.Errorf("%w, not %q", ErrMath, mode)
	}
	return g.Do(func() error {
		if r := g.lib.blasMathMode(g.blas, v); r != blasSuccess {
			return fmt.Errorf("cuda: cublasSetMathMode: %w", errBLAS(r))
		}
		return nil
	})
}

// Gemm computes C = alpha·op(A)·op(B) + beta·C for row-major matrices, as
// kernel.Gemm does on the host: op(A) is m×k, op(B) k×n, C m×n, and the
// leading dimensions count elements between rows.
func (g *GPU) Gemm(transA, transB bool, m, n, k int, alpha float32, a Buffer, lda int, b Buffer, ldb int, beta float32, c Buffer, ldc int) error {
	// Row-major C is column-major Cᵀ = op(B)ᵀ·op(A)ᵀ: cuBLAS gets the
	// operands swapped.
	op := func(t bool) int32 {
		if t {
			return blasOpT
		}
		return blasOpN
	}
	return g.Do(func() error {
		al, be := alpha, beta
		if r := g.lib.blasSgemm(g.blas, op(transB), op(transA), int32(n), int32(m), int32(k), &al, b.Ptr, int32(ldb), a.Ptr, int32(lda), &be, c.Ptr, int32(ldc)); r != blasSuccess {
			return fmt.Errorf("cuda: cublasSgemm (%d×%d×%d): %w", m, n, k, errBLAS(r))
		}
		return nil
	})
}
