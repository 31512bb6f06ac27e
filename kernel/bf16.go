package kernel

import (
	"math"
	"unsafe"
)

// bf16 GEMM: the products of Gemm and XentLayer computed from operands
// rounded to bfloat16 (8 significant bits), with float32 accumulation and
// float32 results; the weights the optimizers update stay float32. An
// implementation with bf16 set (the "-bf16" twin of a float32 one, chosen
// by UsePrecision) packs its panels as pairs of bf16 values along k, one
// pair per 32-bit word with the even k in the low half, and its
// micro-kernel multiplies them pairwise (AVX512-BF16's VDPBF16PS):
//
//	C[r, j] += A[r, 2q+1]·B[2q+1, j] + A[r, 2q]·B[2q, j]   for each pair q
//
// The packed words live in the same float32 scratch as float32 panels, at
// the same panel offsets (a panel of kc float32 steps holds ⌈kc/2⌉ pair
// steps), so the blocking code is shared.
//
// Accuracy: rounding both operands to bf16 costs up to 2⁻⁸ of each, so an
// element of C may differ from the float32 product by about
// 2⁻⁷·Σ_p |A[i,p]·B[p,j]|; the tests hold the kernels to that (tolBF16).

// Precisions that UsePrecision accepts.
const (
	FP32 = "fp32"
	BF16 = "bf16"
)

// toBF16 rounds f to the nearest bfloat16 (ties to even), as VCVTNEPS2BF16
// does: float32 subnormals become zeros of their sign, a NaN stays a quiet
// NaN, and values past bf16's largest round to infinity.
func toBF16(f float32) uint16 {
	b := math.Float32bits(f)
	switch {
	case b&0x7fffffff > 0x7f800000:
		return uint16(b>>16) | 0x40
	case b&0x7f800000 == 0:
		return uint16(b>>16) & 0x8000
	}
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}

// fromBF16 widens a bfloat16 to the float32 of the same value; bf16
// subnormals read as zeros of their sign, as the hardware's dot product
// reads them.
func fromBF16(h uint16) float32 {
	if h&0x7f80 == 0 {
		return math.Float32frombits(uint32(h&0x8000) << 16)
	}
	return math.Float32frombits(uint32(h) << 16)
}

// RoundBF16 returns f rounded to bfloat16 and widened back to float32: the
// value a bf16 kernel multiplies in f's place.
func RoundBF16(f float32) float32 { return fromBF16(toBF16(f)) }

// pairBF16 packs two float32 values as one word of bf16 pairs, lo in the
// low half.
func pairBF16(lo, hi float32) uint32 { return uint32(toBF16(lo)) | uint32(toBF16(hi))<<16 }

// words views a float32 scratch buffer as the 32-bit words of bf16 pairs.
func words(f []float32) []uint32 {
	if len(f) == 0 {
		return nil
	}
	return unsafe.Slice((*uint32)(unsafe.Pointer(&f[0])), len(f))
}

// bf16RunMax bounds the k-runs packed through a stack buffer: every
// implementation's kc is at most 2·bf16RunMax.
const bf16RunMax = 128

// pairRun packs one run of k, alpha·src, as words of bf16 pairs into
// d[0], d[stride], d[2·stride], … (the last pair zero-padded when the run is
// odd).
func (im *impl) pairRun(d []uint32, stride int, src []float32, alpha float32) {
	kc := len(src)
	kq := (kc + 1) / 2
	if alpha == 1 && kc <= 2*bf16RunMax {
		var tmp [bf16RunMax]uint32
		im.cvtPairs(tmp[:kc/2], src[:kc&^1])
		if kc%2 == 1 {
			tmp[kq-1] = pairBF16(src[kc-1], 0)
		}
		d = d[:(kq-1)*stride+1]
		for q, v := range tmp[:kq] {
			d[q*stride] = v
		}
		return
	}
	for q := 0; q < kc/2; q++ {
		d[q*stride] = pairBF16(alpha*src[2*q], alpha*src[2*q+1])
	}
	if kc%2 == 1 {
		d[(kq-1)*stride] = pairBF16(alpha*src[kc-1], 0)
	}
}

// packABF16 is packA for a bf16 micro-kernel: panel r (at dst[ir·kc], as
// for float32) holds, for each pair q of k, the mr words
// (alpha·op(A)[i, pc+2q], alpha·op(A)[i, pc+2q+1]) of its rows, zero past
// mc and past kc.
func (im *impl) packABF16(dst []float32, a []float32, lda int, trans bool, ic, mc, pc, kc int, alpha float32) {
	w, mr := words(dst), im.mr
	kq := (kc + 1) / 2
	for ir := 0; ir < mc; ir += mr {
		rows := min(mr, mc-ir)
		panel := w[ir*kc : ir*kc+kq*mr]
		if trans {
			// op(A)[i,p] = a[p,i]: each p reads a contiguous run of rows.
			for q := 0; q < kq; q++ {
				d := panel[q*mr : q*mr+mr]
				lo := a[(pc+2*q)*lda+ic+ir : (pc+2*q)*lda+ic+ir+rows]
				if 2*q+1 < kc {
					hi := a[(pc+2*q+1)*lda+ic+ir : (pc+2*q+1)*lda+ic+ir+rows]
					for r := range lo {
						d[r] = pairBF16(alpha*lo[r], alpha*hi[r])
					}
				} else {
					for r := range lo {
						d[r] = pairBF16(alpha*lo[r], 0)
					}
				}
				clear(d[rows:])
			}
			continue
		}
		for r := 0; r < mr; r++ {
			if r >= rows {
				for q := 0; q < kq; q++ {
					panel[q*mr+r] = 0
				}
				continue
			}
			i := ic + ir + r
			im.pairRun(panel[r:], mr, a[i*lda+pc:i*lda+pc+kc], alpha)
		}
	}
}

// packBBF16 is packB for a bf16 micro-kernel: panel j (at dst[jr·kc])
// holds, for each pair q of k, the nr words (op(B)[pc+2q, c],
// op(B)[pc+2q+1, c]) of its columns, zero past nc and past kc.
func (im *impl) packBBF16(dst []float32, b []float32, ldb int, trans bool, pc, kc, jc, nc int) {
	w, nr := words(dst), im.nr
	kq := (kc + 1) / 2
	for jr := 0; jr < nc; jr += nr {
		cols := min(nr, nc-jr)
		panel := w[jr*kc : jr*kc+kq*nr]
		if !trans {
			for q := 0; q < kq; q++ {
				d := panel[q*nr : q*nr+nr]
				lo := b[(pc+2*q)*ldb+jc+jr : (pc+2*q)*ldb+jc+jr+cols]
				if 2*q+1 < kc {
					hi := b[(pc+2*q+1)*ldb+jc+jr : (pc+2*q+1)*ldb+jc+jr+cols]
					im.pairRows(d[:cols], lo, hi)
				} else {
					for c, v := range lo {
						d[c] = pairBF16(v, 0)
					}
				}
				clear(d[cols:])
			}
			continue
		}
		// op(B)[p,c] = b[c,p]: column c is a contiguous run of b.
		for c := 0; c < nr; c++ {
			if c >= cols {
				for q := 0; q < kq; q++ {
					panel[q*nr+c] = 0
				}
				continue
			}
			im.pairRun(panel[c:], nr, b[(jc+jr+c)*ldb+pc:(jc+jr+c)*ldb+pc+kc], 1)
		}
	}
}

// pairRows sets d[c] = (lo[c], hi[c]) and cvtPairs d[q] = (src[2q],
// src[2q+1]), rounded to bf16, the first of a pair in the low half. (Not
// function values: a stack buffer passed through one escapes.)
func (im *impl) pairRows(d []uint32, lo, hi []float32) {
	if im.simdPack {
		pairRowsSIMD(d, lo, hi)
		return
	}
	pairRowsGo(d, lo, hi)
}

func (im *impl) cvtPairs(d []uint32, src []float32) {
	if im.simdPack {
		cvtPairsSIMD(d, src)
		return
	}
	cvtPairsGo(d, src)
}

// pairRowsGo is the portable pairRows: d[c] = (lo[c], hi[c]) as bf16.
func pairRowsGo(d []uint32, lo, hi []float32) {
	hi = hi[:len(lo)]
	d = d[:len(lo)]
	for c, v := range lo {
		d[c] = pairBF16(v, hi[c])
	}
}

// cvtPairsGo is the portable cvtPairs: d[q] = (src[2q], src[2q+1]) as bf16.
func cvtPairsGo(d []uint32, src []float32) {
	src = src[:2*len(d)]
	for q := range d {
		d[q] = pairBF16(src[2*q], src[2*q+1])
	}
}

// microBF16Go returns the portable bf16 micro-kernel for mr×nr tiles, the
// reference the SIMD ones are tested against: each pair step adds the odd
// product and then the even one to the float32 sum, each rounded once,
// which is VDPBF16PS's arithmetic as Intel documents it (bf16 products are
// exact in float32).
func microBF16Go(mr, nr int, store bool) func(kc int, a, b, c []float32, ldc int) {
	return func(kc int, a, b, c []float32, ldc int) {
		kq := (kc + 1) / 2
		wa, wb := words(a[:kq*mr]), words(b[:kq*nr])
		for r := 0; r < mr; r++ {
			row := c[r*ldc : r*ldc+nr]
			for j := range row {
				var s float32
				for q := 0; q < kq; q++ {
					x, y := wa[q*mr+r], wb[q*nr+j]
					s += float32(fromBF16(uint16(x>>16)) * fromBF16(uint16(y>>16)))
					s += float32(fromBF16(uint16(x)) * fromBF16(uint16(y)))
				}
				if store {
					row[j] = s
				} else {
					row[j] += s
				}
			}
		}
	}
}

// GemmBF16Ref is the reference for Gemm at bf16 precision: GemmRef on
// operands rounded to bf16 (alpha·op(A) rounded as one value, as the
// kernels pack it), accumulated in float64.
func GemmBF16Ref(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	checkGemm(transA, transB, m, n, k, a, lda, b, ldb, c, ldc)
	ar := make([]float32, len(a))
	for i, v := range a {
		ar[i] = RoundBF16(alpha * v)
	}
	br := make([]float32, len(b))
	for i, v := range b {
		br[i] = RoundBF16(v)
	}
	GemmRef(transA, transB, m, n, k, 1, ar, lda, br, ldb, beta, c, ldc)
}

// bf16Twin returns im's bf16 variant: the same vector loops, with GEMM
// panels of bf16 pairs multiplied by micro and microStore.
func bf16Twin(im *impl, micro, microStore func(kc int, a, b, c []float32, ldc int)) *impl {
	t := *im
	t.name = im.name + "-bf16"
	t.micro, t.microStore = micro, microStore
	t.bf16 = true
	t.twin = im
	return &t
}

// packPanelsA packs a block of op(A) in the form im's micro-kernel reads.
func (im *impl) packPanelsA(dst []float32, a []float32, lda int, trans bool, ic, mc, pc, kc int, alpha float32) {
	if im.bf16 {
		im.packABF16(dst, a, lda, trans, ic, mc, pc, kc, alpha)
		return
	}
	packA(dst, im.mr, a, lda, trans, ic, mc, pc, kc, alpha)
}

// packPanelsB packs a block of op(B) in the form im's micro-kernel reads.
func (im *impl) packPanelsB(dst []float32, b []float32, ldb int, trans bool, pc, kc, jc, nc int) {
	if im.bf16 {
		im.packBBF16(dst, b, ldb, trans, pc, kc, jc, nc)
		return
	}
	packB(dst, im.nr, b, ldb, trans, pc, kc, jc, nc)
}
