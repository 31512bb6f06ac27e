// Command asm generates the SIMD kernels of package kernel with avo: the GEMM
// micro-kernels (this file) and the vector loops of vec.go; and, as text,
// the bf16 micro-kernel and conversions of bf16.go.
// Run "go generate ./kernel" from the repository root after changing it.
//
// Each micro-kernel computes one MR×NR tile of C += Apanel·Bpanel, where the
// A panel holds, for each of kc steps, MR consecutive values (one per row of
// the tile) and the B panel NR consecutive values (one per column). Both
// panels are packed by the Go code, which also scales A by alpha, so the
// kernel is a pure sequence of broadcast–multiply–adds:
//
//	for p < kc: for r < MR: C[r, 0:NR] += A[p·MR + r] · B[p·NR : p·NR+NR]
//
// The tile of C stays in vector registers for the whole kc loop and is added
// to memory (row stride ldc floats) at the end.
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

func main() {
	ConstraintExpr("amd64")
	// AVX-512: 12 rows × 32 columns (two 16-float vectors): 24 accumulators,
	// 2 B vectors and one broadcast register of the 32 available.
	microKernel("gemmMicroAVX512", 12, 2, 16, false)
	microKernel("gemmMicroStoreAVX512", 12, 2, 16, true)
	// AVX2 + FMA: 6 rows × 16 columns (two 8-float vectors): 12
	// accumulators, 2 B vectors and one broadcast register of the 16.
	microKernel("gemmMicroAVX2", 6, 2, 8, false)
	microKernel("gemmMicroStoreAVX2", 6, 2, 8, true)
	expShiftStore("expShiftStoreAVX512", 16)
	expShiftStore("expShiftStoreAVX2", 8)
	axpy("axpyAVX512", 16)
	axpy("axpyAVX2", 8)
	scal("scalAVX512", 16)
	scal("scalAVX2", 8)
	adam("adamAVX512", 16)
	adam("adamAVX2", 8)
	momentum("momentumAVX512", 16)
	momentum("momentumAVX2", 8)
	dot2("dot2AVX512", 16)
	dot2("dot2AVX2", 8)
	vmax("maxAVX512", 16)
	vmax("maxAVX2", 8)
	copyNT("copyNTAVX512", 16)
	copyNT("copyNTAVX2", 8)
	addMax("addMaxAVX512", 16)
	addMax("addMaxAVX2", 8)
	scaleAcc("scaleAccAVX512", 16)
	scaleAcc("scaleAccAVX2", 8)
	scaleAccStrided("scaleAccStridedAVX512", 16)
	scaleAccStrided("scaleAccStridedAVX2", 8)
	maxKeys8("maxKeys8AVX512")
	codes8("codes8AVX512")
	Generate()
	writeBF16("../bf16_amd64.s")
}

// microKernel generates one micro-kernel; with store it overwrites the tile
// of C with the product instead of adding to it (GEMM with beta = 0, whose
// C is then never read).
func microKernel(name string, mr, nv, lanes int, store bool) {
	TEXT(name, NOSPLIT, "func(kc int, a, b, c *float32, ldc int)")
	Pragma("noescape")
	verb := "adds the product of a packed %d×kc A panel and a packed kc×%d B panel to"
	if store {
		verb = "writes the product of a packed %d×kc A panel and a packed kc×%d B panel into"
	}
	Doc(fmt.Sprintf("%s "+verb+" the %d×%d tile of C at c (row stride ldc floats). kc ≥ 1.", name, mr, nv*lanes, mr, nv*lanes))
	kc := Load(Param("kc"), GP64())
	a := Load(Param("a"), GP64())
	b := Load(Param("b"), GP64())
	c := Load(Param("c"), GP64())
	ldc := Load(Param("ldc"), GP64())
	SHLQ(Imm(2), ldc) // floats → bytes

	vec := func() reg.VecVirtual { return vecReg(lanes) }
	acc := make([][]reg.VecVirtual, mr)
	for r := range acc {
		acc[r] = make([]reg.VecVirtual, nv)
		for v := range acc[r] {
			acc[r][v] = vec()
			if lanes == 16 {
				VPXORD(acc[r][v], acc[r][v], acc[r][v])
			} else {
				VXORPS(acc[r][v], acc[r][v], acc[r][v])
			}
		}
	}
	bv := make([]reg.VecVirtual, nv)
	for v := range bv {
		bv[v] = vec()
	}
	bc := vec()

	Label("loop")
	for v := range bv {
		VMOVUPS(Mem{Base: b, Disp: 4 * lanes * v}, bv[v])
	}
	for r := 0; r < mr; r++ {
		VBROADCASTSS(Mem{Base: a, Disp: 4 * r}, bc)
		for v := range bv {
			VFMADD231PS(bv[v], bc, acc[r][v])
		}
	}
	ADDQ(Imm(uint64(4*mr)), a)
	ADDQ(Imm(uint64(4*nv*lanes)), b)
	DECQ(kc)
	JNZ(LabelRef("loop"))

	for r := 0; r < mr; r++ {
		for v := range bv {
			m := Mem{Base: c, Disp: 4 * lanes * v}
			if !store {
				VADDPS(m, acc[r][v], acc[r][v])
			}
			VMOVUPS(acc[r][v], m)
		}
		if r < mr-1 {
			ADDQ(ldc, c)
		}
	}
	VZEROUPPER()
	RET()
}
