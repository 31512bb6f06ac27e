//go:build cuda

package cuda_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/hetsgd/hetsgd/cuda"
	"github.com/hetsgd/hetsgd/cuda/cudatest"
	"github.com/hetsgd/hetsgd/kernel"
)

func TestMain(m *testing.M) { cudatest.Main(m) }

// Memory round trips: in, on the device, out.
func TestMemory(t *testing.T) {
	g := cudatest.GPU(t)
	a, err := g.Alloc(1000)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Free(a)
	b, err := g.Alloc(1000)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Free(b)
	in := make([]float32, 1000)
	for i := range in {
		in[i] = float32(i) * 0.5
	}
	if err := cuda.CopyIn(g, a, in); err != nil {
		t.Fatal(err)
	}
	if err := g.Fill(b, math.Float32bits(7)); err != nil {
		t.Fatal(err)
	}
	if err := g.Copy(b.Slice(10, 20), a.Slice(0, 10)); err != nil {
		t.Fatal(err)
	}
	out := make([]float32, 1000)
	if err := cuda.CopyOut(g, out, b); err != nil {
		t.Fatal(err)
	}
	for i, v := range out {
		want := float32(7)
		if i >= 10 && i < 20 {
			want = in[i-10]
		}
		if v != want {
			t.Fatalf("element %d: %v, want %v", i, v, want)
		}
	}
	if err := cuda.CopyIn(g, a, make([]int32, 1001)); err == nil {
		t.Error("copying more than a buffer holds: no error")
	}
}

const testKernels = `
extern "C" __global__ void axpy(int n, float a, const float* x, float* y) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) y[i] += a * x[i];
}

// One block a row: the row's sum through shared memory.
extern "C" __global__ void rowsum(int cols, const float* x, float* out) {
	__shared__ float part[128];
	const float* row = x + (long long)blockIdx.x * cols;
	float s = 0;
	for (int j = threadIdx.x; j < cols; j += blockDim.x) s += row[j];
	part[threadIdx.x] = s;
	__syncthreads();
	for (int w = blockDim.x / 2; w > 0; w /= 2) {
		if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
		__syncthreads();
	}
	if (threadIdx.x == 0) out[blockIdx.x] = part[0];
}
`

// A program compiles once; its kernels run over a grid, with arguments of
// each kind, and through shared memory.
func TestKernels(t *testing.T) {
	g := cudatest.GPU(t)
	m, err := g.Compile("test.cu", testKernels)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := g.Compile("test.cu", testKernels); err != nil || again != m {
		t.Errorf("a second compile of one source: %p, %v, want the module %p", again, err, m)
	}
	axpy, err := m.Function("axpy")
	if err != nil {
		t.Fatal(err)
	}
	const n = 1000
	x, y := make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], y[i] = float32(i), 1
	}
	dx, _ := g.Alloc(n)
	dy, _ := g.Alloc(n)
	defer g.Free(dx)
	defer g.Free(dy)
	cuda.CopyIn(g, dx, x)
	cuda.CopyIn(g, dy, y)
	if err := g.Launch(axpy, cuda.D1((n+127)/128), cuda.D1(128), cuda.I32(n), cuda.F32(-2), cuda.Ptr(dx), cuda.Ptr(dy)); err != nil {
		t.Fatal(err)
	}
	if err := cuda.CopyOut(g, y, dy); err != nil {
		t.Fatal(err)
	}
	for i, v := range y {
		if v != 1-2*float32(i) {
			t.Fatalf("axpy element %d: %v", i, v)
		}
	}

	rowsum, err := m.Function("rowsum")
	if err != nil {
		t.Fatal(err)
	}
	const rows, cols = 5, 300
	a := make([]float32, rows*cols)
	for i := range a {
		a[i] = float32(i%cols) + float32(i/cols)
	}
	da, _ := g.Alloc(rows * cols)
	defer g.Free(da)
	cuda.CopyIn(g, da, a)
	if err := g.Launch(rowsum, cuda.D1(rows), cuda.D1(128), cuda.I32(cols), cuda.Ptr(da), cuda.Ptr(dy)); err != nil {
		t.Fatal(err)
	}
	sums := make([]float32, rows)
	cuda.CopyOut(g, sums, dy)
	for r, v := range sums {
		if want := float32(cols*(cols-1)/2 + r*cols); v != want {
			t.Errorf("row %d sums to %v, want %v", r, v, want)
		}
	}

	if _, err := m.Function("nosuch"); err == nil || !strings.Contains(err.Error(), "nosuch") {
		t.Errorf("a kernel the module lacks: %v", err)
	}
	if err := g.Launch(axpy, cuda.D1(1), cuda.D1(2048)); err == nil {
		t.Error("a block of 2048 threads: no error")
	}
}

// A program NVRTC refuses is an error with the compiler's log.
func TestCompileError(t *testing.T) {
	g := cudatest.GPU(t)
	_, err := g.Compile("bad.cu", `extern "C" __global__ void bad(float* x) { x[0] = undeclared; }`)
	var ce *cuda.CompileError
	if !errors.As(err, &ce) || ce.Name != "bad.cu" || !strings.Contains(ce.Log, "undeclared") {
		t.Errorf("%v", err)
	}
}

// Row-major products equal kernel.GemmRef's, in each transposition, at
// odd shapes and with leading dimensions wider than the rows.
func TestGemm(t *testing.T) {
	g := cudatest.GPU(t)
	r := rand.New(rand.NewPCG(1, 2))
	fill := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return v
	}
	for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
		for _, s := range [][3]int{{1, 1, 1}, {7, 13, 5}, {33, 17, 64}} {
			m, n, k := s[0], s[1], s[2]
			ar, ac := m, k
			if tr[0] {
				ar, ac = k, m
			}
			br, bc := k, n
			if tr[1] {
				br, bc = n, k
			}
			lda, ldb, ldc := ac+3, bc+1, n+2
			a, b, c := fill(ar*lda), fill(br*ldb), fill(m*ldc)
			want := append([]float32(nil), c...)
			kernel.GemmRef(tr[0], tr[1], m, n, k, 0.5, a, lda, b, ldb, 2, want, ldc)
			da, _ := g.Alloc(len(a))
			db, _ := g.Alloc(len(b))
			dc, _ := g.Alloc(len(c))
			cuda.CopyIn(g, da, a)
			cuda.CopyIn(g, db, b)
			cuda.CopyIn(g, dc, c)
			if err := g.Gemm(tr[0], tr[1], m, n, k, 0.5, da, lda, db, ldb, 2, dc, ldc); err != nil {
				t.Fatal(err)
			}
			got := make([]float32, len(c))
			cuda.CopyOut(g, got, dc)
			for _, b := range []cuda.Buffer{da, db, dc} {
				g.Free(b)
			}
			for i := range got {
				if d := math.Abs(float64(got[i] - want[i])); d > 1e-4*(1+math.Abs(float64(want[i]))) {
					t.Fatalf("transposed %v, %d×%d×%d: element %d is %v, want %v", tr, m, n, k, i, got[i], want[i])
				}
			}
		}
	}
	if err := g.SetMath("bf16"); !errors.Is(err, cuda.ErrMath) {
		t.Errorf("an unknown math mode: %v", err)
	}
	if err := g.SetMath("fp32"); err != nil {
		t.Error(err)
	}
}

// The GPU may be called from any goroutine: each call runs on the thread
// its context is current on (elsewhere the driver refuses the call).
func TestGoroutines(t *testing.T) {
	g := cudatest.GPU(t)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			b, err := g.Alloc(10)
			if err == nil {
				err = cuda.CopyIn(g, b, make([]float32, 10))
			}
			if err == nil {
				err = g.Free(b)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// A GPU the driver does not have is named.
func TestOpenNoSuchGPU(t *testing.T) {
	o := cudatest.Options(t)
	if _, err := cuda.Open(o, 99); err == nil || !strings.Contains(err.Error(), "no GPU 99") {
		t.Errorf("%v", err)
	}
}
