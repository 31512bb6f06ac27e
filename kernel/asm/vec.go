package main

import (
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// Exp constants, shared with the scalar Exp32 of package kernel: range
// reduction x = n·ln2 + r with ln2 split in two, then the Cephes expf
// polynomial for e^r.
var expPoly = []float32{1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1}

const (
	log2e  = 1.44269504088896341
	ln2Hi  = 0.693359375
	ln2Lo  = -2.12194440e-4
	minArg = -87.33654475055310 // ln of the smallest normal float32
)

// vecReg allocates a vector register of the width that holds lanes float32
// values: a ZMM for 16, a YMM for 8.
func vecReg(lanes int) reg.VecVirtual {
	if lanes == 16 {
		return ZMM()
	}
	return YMM()
}

// f32 is a float32 constant in the read-only data section, broadcast from
// memory by the instructions that use it.
func f32(name string, v float32) Mem {
	m := GLOBL(name, RODATA|NOPTR)
	DATA(0, U32(math.Float32bits(v)))
	return m
}

// expShiftStore generates
//
//	func name(x *float32, n int, m float32) float64
//
// which replaces x[i] by exp(x[i] − m) for i < n (n a multiple of the vector
// width) and returns the sum of the new values accumulated in float64.
func expShiftStore(name string, lanes int) {
	TEXT(name, NOSPLIT, "func(x *float32, n int, m float32) float64")
	Pragma("noescape")
	Doc(name + " replaces x[i] by exp(x[i]−m) for i < n (a multiple of the vector width) and returns their sum, accumulated in float64.")
	x := Load(Param("x"), GP64())
	n := Load(Param("n"), GP64())
	avx512 := lanes == 16
	vec := func() reg.VecVirtual { return vecReg(lanes) }
	half := func() reg.VecVirtual { // half the float32 vector, as float32 → float64 converts
		if avx512 {
			return YMM()
		}
		return XMM()
	}
	mv := vec()
	VBROADCASTSS(NewParamAddr("m", 16), mv)
	suffix := "512"
	if !avx512 {
		suffix = "256"
	}
	cMin, cLog2e := vec(), vec()
	VBROADCASTSS(f32("expMin"+suffix, minArg), cMin)
	VBROADCASTSS(f32("expLog2e"+suffix, log2e), cLog2e)
	cHi, cLo := vec(), vec()
	VBROADCASTSS(f32("expLn2Hi"+suffix, ln2Hi), cHi)
	VBROADCASTSS(f32("expLn2Lo"+suffix, ln2Lo), cLo)
	poly := make([]Mem, len(expPoly))
	for i, c := range expPoly {
		poly[i] = f32("expP"+string(rune('0'+i))+suffix, c)
	}
	one := f32("expOne"+suffix, 1)
	var bias Mem
	if !avx512 {
		bias = GLOBL("expBias256", RODATA|NOPTR)
		DATA(0, U32(127))
	}
	acc0, acc1 := vec(), vec()
	VXORPD(acc0, acc0, acc0)
	VXORPD(acc1, acc1, acc1)

	Label(name + "_loop")
	t := vec()
	VMOVUPS(Mem{Base: x}, t)
	VSUBPS(mv, t, t)
	VMAXPS(cMin, t, t)
	nf := vec()
	VMULPS(cLog2e, t, nf)
	VROUNDPSorRNDSCALE(avx512, nf)
	// r = t − n·ln2Hi − n·ln2Lo
	VFNMADD231PS(cHi, nf, t)
	VFNMADD231PS(cLo, nf, t)
	p := vec()
	tmp := vec()
	VBROADCASTSS(poly[0], p)
	for _, c := range poly[1:] {
		VBROADCASTSS(c, tmp)
		VFMADD213PS(tmp, t, p) // p = p·r + c
	}
	// p = p·r² + r + 1
	r2 := vec()
	VMULPS(t, t, r2)
	VBROADCASTSS(one, tmp)
	VADDPS(tmp, t, t)
	VFMADD213PS(t, r2, p)
	// × 2^n
	if avx512 {
		VSCALEFPS(nf, p, p)
	} else {
		ni := vec()
		VCVTPS2DQ(nf, ni)
		VPBROADCASTD(bias, tmp)
		VPADDD(tmp, ni, ni)
		VPSLLD(Imm(23), ni, ni)
		VMULPS(ni, p, p)
	}
	VMOVUPS(p, Mem{Base: x})
	// Sum in float64: convert each half of the vector.
	lo, hi := half(), half()
	if avx512 {
		VEXTRACTF64X4(Imm(1), p, hi)
		VCVTPS2PD(p.AsY(), tmp)
		VADDPD(tmp, acc0, acc0)
		VCVTPS2PD(hi, tmp)
		VADDPD(tmp, acc1, acc1)
	} else {
		VEXTRACTF128(Imm(1), p, hi)
		VCVTPS2PD(p.AsX(), tmp)
		VADDPD(tmp, acc0, acc0)
		VCVTPS2PD(hi, tmp)
		VADDPD(tmp, acc1, acc1)
	}
	_ = lo
	ADDQ(Imm(uint64(4*lanes)), x)
	SUBQ(Imm(uint64(lanes)), n)
	JNZ(LabelRef(name + "_loop"))

	// Horizontal sum of the float64 accumulators.
	VADDPD(acc1, acc0, acc0)
	if avx512 {
		y := YMM()
		VEXTRACTF64X4(Imm(1), acc0, y)
		VADDPD(y, acc0.AsY(), y)
		xx := XMM()
		VEXTRACTF128(Imm(1), y, xx)
		VADDPD(xx, y.AsX(), xx)
		VHADDPD(xx, xx, xx)
		Store(xx, ReturnIndex(0))
	} else {
		xx := XMM()
		VEXTRACTF128(Imm(1), acc0, xx)
		VADDPD(xx, acc0.AsX(), xx)
		VHADDPD(xx, xx, xx)
		Store(xx, ReturnIndex(0))
	}
	VZEROUPPER()
	RET()
}

// VROUNDPSorRNDSCALE rounds v to the nearest integer in place.
func VROUNDPSorRNDSCALE(avx512 bool, v reg.VecVirtual) {
	if avx512 {
		VRNDSCALEPS(Imm(0), v, v)
	} else {
		VROUNDPS(Imm(0), v, v)
	}
}

// axpy generates func name(a float32, x, y *float32, n int): y[i] += a·x[i]
// for i < n, n a multiple of the vector width.
func axpy(name string, lanes int) {
	TEXT(name, NOSPLIT, "func(a float32, x, y *float32, n int)")
	Pragma("noescape")
	Doc(name + " computes y[i] += a·x[i] for i < n, a multiple of the vector width.")
	x := Load(Param("x"), GP64())
	y := Load(Param("y"), GP64())
	n := Load(Param("n"), GP64())
	vec := func() reg.VecVirtual { return vecReg(lanes) }
	av := vec()
	VBROADCASTSS(NewParamAddr("a", 0), av)
	v := vec()
	Label(name + "_loop")
	VMOVUPS(Mem{Base: y}, v)
	VFMADD231PS(Mem{Base: x}, av, v)
	VMOVUPS(v, Mem{Base: y})
	ADDQ(Imm(uint64(4*lanes)), x)
	ADDQ(Imm(uint64(4*lanes)), y)
	SUBQ(Imm(uint64(lanes)), n)
	JNZ(LabelRef(name + "_loop"))
	VZEROUPPER()
	RET()
}

// scal generates func name(a float32, x *float32, n int): x[i] *= a for
// i < n, n a multiple of the vector width.
func scal(name string, lanes int) {
	TEXT(name, NOSPLIT, "func(a float32, x *float32, n int)")
	Pragma("noescape")
	Doc(name + " computes x[i] *= a for i < n, a multiple of the vector width.")
	x := Load(Param("x"), GP64())
	n := Load(Param("n"), GP64())
	vec := func() reg.VecVirtual { return vecReg(lanes) }
	av := vec()
	VBROADCASTSS(NewParamAddr("a", 0), av)
	v := vec()
	Label(name + "_loop")
	VMULPS(Mem{Base: x}, av, v)
	VMOVUPS(v, Mem{Base: x})
	ADDQ(Imm(uint64(4*lanes)), x)
	SUBQ(Imm(uint64(lanes)), n)
	JNZ(LabelRef(name + "_loop"))
	VZEROUPPER()
	RET()
}

// adam generates
//
//	func name(p, g, m, v *float32, n int, c *[6]float32)
//
// the fused Adam update over n elements (a multiple of the vector width),
// with c = {lr', β1, β2, ε, wd, 1/√(1−β2ᵗ)} and lr' = lr/(1−β1ᵗ):
//
//	g' = g + wd·p; m = β1·m + (1−β1)·g'; v = β2·v + (1−β2)·g'²
//	p -= lr'·m / (√v·c5 + ε)
func adam(name string, lanes int) {
	TEXT(name, NOSPLIT, "func(p, grad, m, v *float32, n int, c *[6]float32)")
	Pragma("noescape")
	Doc(name + " applies the fused Adam update to n elements (a multiple of the vector width); c = {lr/(1−β1ᵗ), β1, β2, ε, wd, 1/√(1−β2ᵗ)}.")
	p := Load(Param("p"), GP64())
	g := Load(Param("grad"), GP64())
	m := Load(Param("m"), GP64())
	v := Load(Param("v"), GP64())
	n := Load(Param("n"), GP64())
	c := Load(Param("c"), GP64())
	vec := func() reg.VecVirtual { return vecReg(lanes) }
	var k [6]reg.VecVirtual
	for i := range k {
		k[i] = vec()
		VBROADCASTSS(Mem{Base: c, Disp: 4 * i}, k[i])
	}
	lr, b1, b2, eps, wd, c2 := k[0], k[1], k[2], k[3], k[4], k[5]
	one := vec()
	VBROADCASTSS(f32(name+"One", 1), one)
	omb1, omb2 := vec(), vec() // 1−β1, 1−β2
	VSUBPS(b1, one, omb1)
	VSUBPS(b2, one, omb2)
	pv, gv, mv, vv, t := vec(), vec(), vec(), vec(), vec()
	Label(name + "_loop")
	VMOVUPS(Mem{Base: p}, pv)
	VMOVUPS(Mem{Base: g}, gv)
	VFMADD231PS(pv, wd, gv) // g' = g + wd·p
	VMULPS(Mem{Base: m}, b1, mv)
	VFMADD231PS(gv, omb1, mv) // m = β1·m + (1−β1)·g'
	VMULPS(gv, gv, t)
	VMULPS(Mem{Base: v}, b2, vv)
	VFMADD231PS(t, omb2, vv) // v = β2·v + (1−β2)·g'²
	VMOVUPS(mv, Mem{Base: m})
	VMOVUPS(vv, Mem{Base: v})
	VSQRTPS(vv, t)
	VFMADD213PS(eps, c2, t) // √v·c2 + ε
	VMULPS(lr, mv, gv)
	VDIVPS(t, gv, gv)
	VSUBPS(gv, pv, pv)
	VMOVUPS(pv, Mem{Base: p})
	for _, r := range []reg.Register{p, g, m, v} {
		ADDQ(Imm(uint64(4*lanes)), r)
	}
	SUBQ(Imm(uint64(lanes)), n)
	JNZ(LabelRef(name + "_loop"))
	VZEROUPPER()
	RET()
}

// momentum generates
//
//	func name(p, g, b *float32, n int, c *[3]float32)
//
// the heavy-ball update with c = {lr, μ, wd}: b = μ·b + g + wd·p; p -= lr·b.
func momentum(name string, lanes int) {
	TEXT(name, NOSPLIT, "func(p, grad, b *float32, n int, c *[3]float32)")
	Pragma("noescape")
	Doc(name + " applies b = μ·b + g + wd·p; p -= lr·b to n elements (a multiple of the vector width); c = {lr, μ, wd}.")
	p := Load(Param("p"), GP64())
	g := Load(Param("grad"), GP64())
	b := Load(Param("b"), GP64())
	n := Load(Param("n"), GP64())
	c := Load(Param("c"), GP64())
	vec := func() reg.VecVirtual { return vecReg(lanes) }
	lr, mu, wd := vec(), vec(), vec()
	VBROADCASTSS(Mem{Base: c}, lr)
	VBROADCASTSS(Mem{Base: c, Disp: 4}, mu)
	VBROADCASTSS(Mem{Base: c, Disp: 8}, wd)
	pv, gv, bv := vec(), vec(), vec()
	Label(name + "_loop")
	VMOVUPS(Mem{Base: p}, pv)
	VMOVUPS(Mem{Base: g}, gv)
	VFMADD231PS(pv, wd, gv)
	VMOVUPS(Mem{Base: b}, bv)
	VFMADD213PS(gv, mu, bv) // b = μ·b + g'
	VMOVUPS(bv, Mem{Base: b})
	VFNMADD231PS(bv, lr, pv)
	VMOVUPS(pv, Mem{Base: p})
	for _, r := range []reg.Register{p, g, b} {
		ADDQ(Imm(uint64(4*lanes)), r)
	}
	SUBQ(Imm(uint64(lanes)), n)
	JNZ(LabelRef(name + "_loop"))
	VZEROUPPER()
	RET()
}

// dot2 generates
//
//	func name(x, y *float32, n int) (xy, xx float32)
//
// ⟨x, y⟩ and ⟨x, x⟩ over n elements (a multiple of twice the vector width),
// accumulated in float32 lanes: the inner loop of AdaCons' consensus pass,
// which sums the returned values across blocks in float64.
func dot2(name string, lanes int) {
	TEXT(name, NOSPLIT, "func(x, y *float32, n int) (xy, xx float32)")
	Pragma("noescape")
	Doc(name + " returns ⟨x, y⟩ and ⟨x, x⟩ over n elements (a multiple of twice the vector width), accumulated in float32.")
	x := Load(Param("x"), GP64())
	y := Load(Param("y"), GP64())
	n := Load(Param("n"), GP64())
	vec := func() reg.VecVirtual { return vecReg(lanes) }
	a0, a1, b0, b1 := vec(), vec(), vec(), vec()
	for _, r := range []reg.VecVirtual{a0, a1, b0, b1} {
		VXORPS(r, r, r)
	}
	x0, x1 := vec(), vec()
	Label(name + "_loop")
	VMOVUPS(Mem{Base: x}, x0)
	VMOVUPS(Mem{Base: x, Disp: 4 * lanes}, x1)
	VFMADD231PS(Mem{Base: y}, x0, a0)
	VFMADD231PS(Mem{Base: y, Disp: 4 * lanes}, x1, a1)
	VFMADD231PS(x0, x0, b0)
	VFMADD231PS(x1, x1, b1)
	ADDQ(Imm(uint64(8*lanes)), x)
	ADDQ(Imm(uint64(8*lanes)), y)
	SUBQ(Imm(uint64(2*lanes)), n)
	JNZ(LabelRef(name + "_loop"))
	VADDPS(a1, a0, a0)
	VADDPS(b1, b0, b0)
	// Horizontal sums down to one lane.
	for _, acc := range []reg.VecVirtual{a0, b0} {
		if lanes == 16 {
			h := YMM()
			VEXTRACTF64X4(Imm(1), acc, h)
			VADDPS(h, acc.AsY(), h)
			xh := XMM()
			VEXTRACTF128(Imm(1), h, xh)
			VADDPS(xh, h.AsX(), xh)
			VHADDPS(xh, xh, xh)
			VHADDPS(xh, xh, xh)
			if acc == a0 {
				Store(xh, ReturnIndex(0))
			} else {
				Store(xh, ReturnIndex(1))
			}
		} else {
			xh := XMM()
			VEXTRACTF128(Imm(1), acc, xh)
			VADDPS(xh, acc.AsX(), xh)
			VHADDPS(xh, xh, xh)
			VHADDPS(xh, xh, xh)
			if acc == a0 {
				Store(xh, ReturnIndex(0))
			} else {
				Store(xh, ReturnIndex(1))
			}
		}
	}
	VZEROUPPER()
	RET()
}

// vmax generates func name(x *float32, n int) float32: the largest of x[i]
// for i < n (n ≥ 2 vectors' worth, a multiple of twice the vector width),
// with VMAXPS semantics for NaN (the caller's exp of x − max propagates any
// NaN anyway).
func vmax(name string, lanes int) {
	TEXT(name, NOSPLIT, "func(x *float32, n int) float32")
	Pragma("noescape")
	Doc(name + " returns the largest of x[i] for i < n (a non-zero multiple of twice the vector width).")
	x := Load(Param("x"), GP64())
	n := Load(Param("n"), GP64())
	vec := func() reg.VecVirtual { return vecReg(lanes) }
	m0, m1 := vec(), vec()
	VMOVUPS(Mem{Base: x}, m0)
	VMOVUPS(Mem{Base: x, Disp: 4 * lanes}, m1)
	ADDQ(Imm(uint64(8*lanes)), x)
	SUBQ(Imm(uint64(2*lanes)), n)
	JZ(LabelRef(name + "_reduce"))
	Label(name + "_loop")
	VMAXPS(Mem{Base: x}, m0, m0)
	VMAXPS(Mem{Base: x, Disp: 4 * lanes}, m1, m1)
	ADDQ(Imm(uint64(8*lanes)), x)
	SUBQ(Imm(uint64(2*lanes)), n)
	JNZ(LabelRef(name + "_loop"))
	Label(name + "_reduce")
	VMAXPS(m1, m0, m0)
	Store(hmax(m0, lanes), ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// copyNT generates func name(dst, src *float32, n int): dst[i] = src[i] for
// i < n (a multiple of the vector width), with non-temporal stores that
// write dst without first reading its cache lines from memory. dst must be
// aligned to the vector width.
func copyNT(name string, lanes int) {
	TEXT(name, NOSPLIT, "func(dst, src *float32, n int)")
	Pragma("noescape")
	Doc(name + " copies n floats (a multiple of the vector width) from src to dst, aligned to the vector width, with non-temporal stores.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	n := Load(Param("n"), GP64())
	v := vecReg(lanes)
	Label(name + "_loop")
	VMOVUPS(Mem{Base: src}, v)
	VMOVNTPS(v, Mem{Base: dst})
	ADDQ(Imm(uint64(4*lanes)), src)
	ADDQ(Imm(uint64(4*lanes)), dst)
	SUBQ(Imm(uint64(lanes)), n)
	JNZ(LabelRef(name + "_loop"))
	SFENCE()
	VZEROUPPER()
	RET()
}

// addMax generates func name(x, b *float32, n int) float32: x[i] += b[i] for
// i < n (a non-zero multiple of twice the vector width) and the largest new
// x[i]: the bias and row-maximum pass over a block of logits.
func addMax(name string, lanes int) {
	TEXT(name, NOSPLIT, "func(x, b *float32, n int) float32")
	Pragma("noescape")
	Doc(name + " adds b[i] to x[i] for i < n (a non-zero multiple of twice the vector width) and returns the largest result.")
	x := Load(Param("x"), GP64())
	b := Load(Param("b"), GP64())
	n := Load(Param("n"), GP64())
	vec := func() reg.VecVirtual { return vecReg(lanes) }
	m0, m1, v0, v1 := vec(), vec(), vec(), vec()
	VMOVUPS(Mem{Base: x}, m0)
	VADDPS(Mem{Base: b}, m0, m0)
	VMOVUPS(m0, Mem{Base: x})
	VMOVUPS(Mem{Base: x, Disp: 4 * lanes}, m1)
	VADDPS(Mem{Base: b, Disp: 4 * lanes}, m1, m1)
	VMOVUPS(m1, Mem{Base: x, Disp: 4 * lanes})
	ADDQ(Imm(uint64(8*lanes)), x)
	ADDQ(Imm(uint64(8*lanes)), b)
	SUBQ(Imm(uint64(2*lanes)), n)
	JZ(LabelRef(name + "_reduce"))
	Label(name + "_loop")
	VMOVUPS(Mem{Base: x}, v0)
	VADDPS(Mem{Base: b}, v0, v0)
	VMOVUPS(v0, Mem{Base: x})
	VMAXPS(v0, m0, m0)
	VMOVUPS(Mem{Base: x, Disp: 4 * lanes}, v1)
	VADDPS(Mem{Base: b, Disp: 4 * lanes}, v1, v1)
	VMOVUPS(v1, Mem{Base: x, Disp: 4 * lanes})
	VMAXPS(v1, m1, m1)
	ADDQ(Imm(uint64(8*lanes)), x)
	ADDQ(Imm(uint64(8*lanes)), b)
	SUBQ(Imm(uint64(2*lanes)), n)
	JNZ(LabelRef(name + "_loop"))
	Label(name + "_reduce")
	VMAXPS(m1, m0, m0)
	Store(hmax(m0, lanes), ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// hmax reduces the lanes of v to their maximum, in lane 0 of the result.
func hmax(v reg.VecVirtual, lanes int) reg.VecVirtual {
	var xh reg.VecVirtual
	if lanes == 16 {
		h := YMM()
		VEXTRACTF64X4(Imm(1), v, h)
		VMAXPS(h, v.AsY(), h)
		xh = XMM()
		VEXTRACTF128(Imm(1), h, xh)
		VMAXPS(xh, h.AsX(), xh)
	} else {
		xh = XMM()
		VEXTRACTF128(Imm(1), v, xh)
		VMAXPS(xh, v.AsX(), xh)
	}
	t := XMM()
	VPERMILPS(Imm(0x4e), xh, t) // swap the 64-bit halves
	VMAXPS(t, xh, xh)
	VPERMILPS(Imm(0xb1), xh, t) // swap neighbours
	VMAXPS(t, xh, xh)
	return xh
}

// scaleAcc generates func name(dst, src, acc *float32, n int, f float32):
// dst[i] = f·src[i] and acc[i] += f·src[i] for i < n (a multiple of the
// vector width): turning a block of exponentials into probabilities while
// summing its columns.
func scaleAcc(name string, lanes int) {
	TEXT(name, NOSPLIT, "func(dst, src, acc *float32, n int, f float32)")
	Pragma("noescape")
	Doc(name + " sets dst[i] = f·src[i] and adds it to acc[i] for i < n (a multiple of the vector width).")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	acc := Load(Param("acc"), GP64())
	n := Load(Param("n"), GP64())
	vec := func() reg.VecVirtual { return vecReg(lanes) }
	fv, v, a := vec(), vec(), vec()
	VBROADCASTSS(NewParamAddr("f", 32), fv)
	Label(name + "_loop")
	VMULPS(Mem{Base: src}, fv, v)
	VMOVUPS(v, Mem{Base: dst})
	VADDPS(Mem{Base: acc}, v, a)
	VMOVUPS(a, Mem{Base: acc})
	ADDQ(Imm(uint64(4*lanes)), src)
	ADDQ(Imm(uint64(4*lanes)), dst)
	ADDQ(Imm(uint64(4*lanes)), acc)
	SUBQ(Imm(uint64(lanes)), n)
	JNZ(LabelRef(name + "_loop"))
	VZEROUPPER()
	RET()
}

// scaleAccStrided generates
//
//	func name(dst, src, acc *float32, chunks, stride int, f float32)
//
// which, for each of chunks runs of two vectors of src, writes f·src to dst
// and adds it to acc; src and acc advance by the run, dst by stride floats:
// it writes a row of probabilities straight into the nr-wide panels of a
// packed GEMM operand while summing the bias gradient.
func scaleAccStrided(name string, lanes int) {
	TEXT(name, NOSPLIT, "func(dst, src, acc *float32, chunks, stride int, f float32)")
	Pragma("noescape")
	Doc(name + " writes f·src into dst in runs of two vectors, dst advancing by stride floats per run, and adds f·src to acc.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	acc := Load(Param("acc"), GP64())
	n := Load(Param("chunks"), GP64())
	stride := Load(Param("stride"), GP64())
	SHLQ(Imm(2), stride) // floats → bytes
	vec := func() reg.VecVirtual { return vecReg(lanes) }
	fv, v0, v1, a0, a1 := vec(), vec(), vec(), vec(), vec()
	VBROADCASTSS(NewParamAddr("f", 40), fv)
	Label(name + "_loop")
	VMULPS(Mem{Base: src}, fv, v0)
	VMULPS(Mem{Base: src, Disp: 4 * lanes}, fv, v1)
	VMOVUPS(v0, Mem{Base: dst})
	VMOVUPS(v1, Mem{Base: dst, Disp: 4 * lanes})
	VADDPS(Mem{Base: acc}, v0, a0)
	VADDPS(Mem{Base: acc, Disp: 4 * lanes}, v1, a1)
	VMOVUPS(a0, Mem{Base: acc})
	VMOVUPS(a1, Mem{Base: acc, Disp: 4 * lanes})
	ADDQ(Imm(uint64(8*lanes)), src)
	ADDQ(Imm(uint64(8*lanes)), acc)
	ADDQ(stride, dst)
	DECQ(n)
	JNZ(LabelRef(name + "_loop"))
	VZEROUPPER()
	RET()
}
