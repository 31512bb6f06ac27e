package kernel

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
)

// impl is one implementation of the kernels' inner loops: the GEMM
// micro-kernel with the blocking sizes that suit it (BLIS notation), and the
// vector loops. A kc×nc block of op(B) is packed into nr-wide column panels;
// an mc×kc block of op(A) into mr-tall row panels; the micro-kernel
// multiplies one A panel by one B panel into an mr×nr tile of C held in
// registers.
type impl struct {
	name       string
	mr, nr     int
	kc, mc, nc int
	micro      func(kc int, a, b, c []float32, ldc int)  // C[mr×nr] += A·B
	microStore func(kc int, a, b, c []float32, ldc int)  // C[mr×nr] = A·B
	expShift   func(x []float32, m float32) float64      // x = exp(x−m); Σ in float64
	axpy       func(a float32, x, y []float32)           // y += a·x, len(y) == len(x)
	scal       func(a float32, x []float32)              // x *= a
	adam       func(p, g, m, v []float32, c *[6]float32) // see AdamRule
	momentum   func(p, g, b []float32, c *[3]float32)    // see MomentumRule
	dot2       func(x, y []float32) (xy, xx float32)     // ⟨x,y⟩ and ⟨x,x⟩ of a block
	max        func(x []float32) float32                 // largest element, len(x) ≥ 1
	copyNT     func(dst, src []float32)                  // copy without reading dst's lines
	addMax     func(x, b []float32) float32              // x += b; max(x), len(x) ≥ 1
	scaleAcc   func(dst, src, acc []float32, f float32)  // dst = f·src; acc += dst
	maxKeys8   func(top, keys []uint64, idx []int32)     // see MaxKeys8 (checked)
	codes8     func(codes, top []uint64, k, l int) uint8 // see Codes8 (checked)
	// scaleAccPanels is scaleAcc writing dst as nr-wide runs stride apart
	// (zero-padding the last run): one row of a packed B operand.
	scaleAccPanels func(dst, src, acc []float32, f float32, stride int)
	// blas marks an implementation whose GEMM tiles are computed by an
	// external BLAS (the openblas build): it reads the operands as they are
	// and ignores gemmArgs.packedA/packedB.
	blas bool
	// bf16 marks an implementation whose GEMM multiplies bf16 panels (see
	// bf16.go); twin is its float32 original, or for a float32
	// implementation its bf16 variant where the CPU has one (nil if none).
	bf16 bool
	twin *impl
	// simdPack marks a bf16 implementation that packs its panels with the
	// SIMD conversions (pairRowsSIMD, cvtPairsSIMD) rather than the
	// portable ones.
	simdPack bool
}

// tile computes C[i0:i1, j0:j1] of g with the implementation's GEMM.
func (im *impl) tile(g *gemmArgs, i0, i1, j0, j1 int, s *gemmScratch) {
	if im.blas {
		blasTile(g, i0, i1, j0, j1)
		return
	}
	gemmBlock(g, i0, i1, j0, j1, s)
}

// goImpl is the portable implementation: a 4×4 GEMM tile in scalar Go and
// plain loops.
var goImpl = &impl{name: "go", mr: 4, nr: 4, kc: 256, mc: 64, nc: 1024,
	micro: micro4x4, microStore: micro4x4Store, expShift: expShiftGo, axpy: axpyGo, scal: scalGo, adam: adamGo, momentum: momentumGo, dot2: dot2Go,
	max: maxGo, copyNT: copyGo, addMax: addMaxGo, scaleAcc: scaleAccGo, maxKeys8: maxKeys8Go, codes8: codes8Go}

func init() {
	goImpl.scaleAccPanels = goImpl.scaleAccPanelsGo
	goImpl.twin = bf16Twin(goImpl, microBF16Go(4, 4, false), microBF16Go(4, 4, true))
}

// impls lists the implementations this machine can run, fastest first; cur
// is the one in use.
var (
	impls = append(simdImpls(), goImpl)
	cur   = pickImpl()
)

// pickImpl chooses the first implementation (an external BLAS when built
// in, else the fastest SIMD one), or the one named by the
// HETSGD_KERNEL environment variable (go, avx2, avx512) when it is available.
func pickImpl() *impl {
	if name := os.Getenv("HETSGD_KERNEL"); name != "" {
		for _, g := range impls {
			if g.name == name {
				return g
			}
		}
	}
	return impls[0]
}

// CheckEnv reports a HETSGD_KERNEL that names no implementation this
// machine can run, which pickImpl would otherwise pass over in silence.
func CheckEnv() error {
	name := os.Getenv("HETSGD_KERNEL")
	if name == "" || slices.ContainsFunc(impls, func(g *impl) bool { return g.name == name }) {
		return nil
	}
	return fmt.Errorf("kernel: $HETSGD_KERNEL=%q: this machine runs %s", name, strings.Join(Impls(), ", "))
}

// Impl returns the name of the kernel implementation in use.
func Impl() string { return cur.name }

// Impls lists the kernel implementations this machine can run, fastest first.
func Impls() []string {
	var names []string
	for _, g := range impls {
		names = append(names, g.name)
	}
	return names
}

// Use selects a kernel implementation by name: one of Impls, or the bf16
// variant of one (its name with "-bf16") where the CPU has it. It is meant
// for start-up and tests; it must not race with running kernels.
func Use(name string) error {
	for _, g := range impls {
		if g.name == name {
			cur = g
			return nil
		}
		if g.twin != nil && g.twin.name == name {
			cur = g.twin
			return nil
		}
	}
	return fmt.Errorf("kernel: implementation %q is not available here (have %s)", name, strings.Join(Impls(), ", "))
}

// UsePrecision selects the precision of the GEMM products (Gemm and
// XentLayer): FP32, or BF16 with float32 accumulation, which runs on the
// bf16 variant of the implementation in use where the CPU has one
// (AVX512-BF16; the portable "go" implementation has a bf16 variant in Go
// for tests) and stays float32 elsewhere. It reports whether the products
// are now bf16; Impl names the implementation that computes them. Like
// Use, it must not race with running kernels.
func UsePrecision(p string) (bool, error) {
	base := cur.fp32()
	switch p {
	case FP32:
		cur = base
		return false, nil
	case BF16:
		if base.twin == nil {
			cur = base
			return false, nil
		}
		cur = base.twin
		return true, nil
	}
	return false, fmt.Errorf("kernel: precision %q: want %s or %s", p, FP32, BF16)
}

// Precision returns the precision of the GEMM products in use, FP32 or
// BF16.
func Precision() string {
	if cur.bf16 {
		return BF16
	}
	return FP32
}

// BF16Impl names the bf16 variant of the implementation in use, which
// UsePrecision(BF16) selects, or returns "" where it has none (no
// AVX512-BF16): there bf16 products would be no faster than float32. The
// portable "go" implementation's variant, in Go, is for tests and counts
// as one.
func BF16Impl() string {
	if bf := cur.fp32().twin; bf != nil {
		return bf.name
	}
	return ""
}

// fp32 returns im's float32 original when im is a bf16 variant, else im.
func (im *impl) fp32() *impl {
	if im.bf16 {
		return im.twin
	}
	return im
}

// The portable vector loops.

func axpyGo(a float32, x, y []float32) {
	y = y[:len(x)]
	for len(x) >= 4 && len(y) >= 4 {
		y[0] += a * x[0]
		y[1] += a * x[1]
		y[2] += a * x[2]
		y[3] += a * x[3]
		x, y = x[4:], y[4:]
	}
	for i, v := range x {
		y[i] += a * v
	}
}

func scalGo(a float32, x []float32) {
	for i := range x {
		x[i] *= a
	}
}

func expShiftGo(x []float32, m float32) float64 {
	var s0, s1 float64
	for len(x) >= 2 {
		e0, e1 := Exp32(x[0]-m), Exp32(x[1]-m)
		x[0], x[1] = e0, e1
		s0 += float64(e0)
		s1 += float64(e1)
		x = x[2:]
	}
	for j, v := range x {
		e := Exp32(v - m)
		x[j] = e
		s0 += float64(e)
	}
	return s0 + s1
}

func sqrt32(x float32) float32 { return float32(math.Sqrt(float64(x))) }

// maxGo returns the largest element of x (len(x) ≥ 1). A NaN may or may not
// win, as with the SIMD versions; the callers' exp(x − max) turns any NaN of
// x into a NaN result either way.
func maxGo(x []float32) float32 {
	m := x[0]
	for _, v := range x {
		if v > m {
			m = v
		}
	}
	return m
}

func copyGo(dst, src []float32) { copy(dst, src) }

func addMaxGo(x, b []float32) float32 {
	b = b[:len(x)]
	for i := range x {
		x[i] += b[i]
	}
	return maxGo(x)
}

func scaleAccGo(dst, src, acc []float32, f float32) {
	src, acc = src[:len(dst)], acc[:len(dst)]
	for i := range dst {
		v := f * src[i]
		dst[i] = v
		acc[i] += v
	}
}

// scaleAccPanelsGo is the portable scaleAccPanels for runs of im.nr.
func (im *impl) scaleAccPanelsGo(dst, src, acc []float32, f float32, stride int) {
	nr := im.nr
	for q := 0; q*nr < len(src); q++ {
		lo, hi := q*nr, min((q+1)*nr, len(src))
		d := dst[q*stride : q*stride+nr]
		scaleAccGo(d[:hi-lo], src[lo:hi], acc[lo:hi], f)
		clear(d[hi-lo:])
	}
}
