package main

// The bf16 micro-kernel is written here as text rather than through avo:
// Go's assembler has no mnemonic for VDPBF16PS (AVX512-BF16), so its
// instructions are emitted as bytes, which needs registers fixed in advance,
// and avo allocates its own.
//
// It computes one 12×32 tile of C += Apanel·Bpanel in bf16 with float32
// accumulation. Both panels hold pairs of bf16 values along k, one pair per
// 32-bit word, the even k in the low half: for each of kq = ⌈kc/2⌉ pair
// steps the A panel holds 12 words (one per row of the tile) and the B panel
// 32 words (one per column). VDPBF16PS multiplies the two bf16 halves of a
// broadcast A word by those of each B word and adds both products to a
// float32 lane:
//
//	for q < kq: for r < 12: C[r, j] += A[q·12+r].hi·B[q·32+j].hi + A[q·12+r].lo·B[q·32+j].lo
//
// Registers: Z0–Z23 hold the tile (row r in Z2r, Z2r+1), Z24 and Z25 the B
// words of a pair step, Z26–Z31 the broadcast A words in turn.

import (
	"fmt"
	"os"
	"strings"
)

// evex0F38 returns the encoding of a 512-bit EVEX instruction of map 0F38,
// W0, with three zmm register operands in Intel order: dst (ModRM.reg),
// src1 (EVEX.vvvv), src2 (ModRM.rm). pp is the implied prefix (1: 66,
// 2: F3, 3: F2).
func evex0F38(opcode, pp byte, dst, src1, src2 int) []byte {
	bit := func(r, i int) byte { return byte(r>>i) & 1 }
	p0 := (1-bit(dst, 3))<<7 | (1-bit(src2, 4))<<6 | (1-bit(src2, 3))<<5 | (1-bit(dst, 4))<<4 | 0b0010 // R X B R' 0 0 m m (map 0F38)
	p1 := byte(^src1&15)<<3 | 1<<2 | pp                                                                // W=0 vvvv 1 pp
	p2 := byte(0b10)<<5 | (1-bit(src1, 4))<<3                                                          // z=0 L'L=512 b=0 V' aaa=0
	modrm := 0xC0 | byte(dst&7)<<3 | byte(src2&7)
	return []byte{0x62, p0, p1, p2, opcode, modrm}
}

// vdpbf16ps encodes VDPBF16PS zmm(dst), zmm(src1), zmm(src2): dst's float32
// lanes += the pairwise products of src1's and src2's bf16 pairs
// (EVEX.512.F3.0F38.W0 52 /r).
func vdpbf16ps(dst, src1, src2 int) []byte { return evex0F38(0x52, 2, dst, src1, src2) }

// vcvtne2ps2bf16 encodes VCVTNE2PS2BF16 zmm(dst), zmm(src1), zmm(src2):
// the 16 floats of src2 rounded to bf16 into dst's low 16 words, those of
// src1 into its high 16 (EVEX.512.F2.0F38.W0 72 /r).
func vcvtne2ps2bf16(dst, src1, src2 int) []byte { return evex0F38(0x72, 3, dst, src1, src2) }

func bytesDirective(b []byte, comment string) string {
	parts := make([]string, len(b))
	for i, x := range b {
		parts[i] = fmt.Sprintf("BYTE $0x%02x", x)
	}
	return "\t" + strings.Join(parts, "; ") + " // " + comment + "\n"
}

// bf16Kernel writes the text of one micro-kernel; with store it overwrites
// the tile instead of adding to it.
func bf16Kernel(w *strings.Builder, name string, store bool) {
	const mr, nv = 12, 2
	verb := "adds to"
	if store {
		verb = "writes into"
	}
	fmt.Fprintf(w, "\n// func %s(kq int, a *uint32, b *uint32, c *float32, ldc int)\n", name)
	fmt.Fprintf(w, "// %s %s the 12×32 tile of C at c (row stride ldc floats) the bf16 product\n// of a packed 12×2kq A panel and a packed 2kq×32 B panel. kq ≥ 1.\n// Requires: AVX512F, AVX512_BF16\n", name, verb)
	fmt.Fprintf(w, "TEXT ·%s(SB), NOSPLIT, $0-40\n", name)
	w.WriteString("\tMOVQ kq+0(FP), AX\n\tMOVQ a+8(FP), CX\n\tMOVQ b+16(FP), DX\n\tMOVQ c+24(FP), BX\n\tMOVQ ldc+32(FP), SI\n\tSHLQ $0x02, SI\n")
	for r := 0; r < mr*nv; r++ {
		fmt.Fprintf(w, "\tVPXORD Z%d, Z%d, Z%d\n", r, r, r)
	}
	fmt.Fprintf(w, "\n%s_loop:\n", name)
	w.WriteString("\tVMOVDQU32 (DX), Z24\n\tVMOVDQU32 64(DX), Z25\n")
	for r := 0; r < mr; r++ {
		bc := 26 + r%6
		fmt.Fprintf(w, "\tVPBROADCASTD %d(CX), Z%d\n", 4*r, bc)
		for v := 0; v < nv; v++ {
			acc := nv*r + v
			w.WriteString(bytesDirective(vdpbf16ps(acc, 24+v, bc), fmt.Sprintf("VDPBF16PS Z%d, Z%d, Z%d", bc, 24+v, acc)))
		}
	}
	fmt.Fprintf(w, "\tADDQ $0x%02x, CX\n\tADDQ $0x%02x, DX\n\tDECQ AX\n\tJNZ %s_loop\n\n", 4*mr, 4*16*nv, name)
	for r := 0; r < mr; r++ {
		for v := 0; v < nv; v++ {
			acc := nv*r + v
			mem := "(BX)"
			if v > 0 {
				mem = fmt.Sprintf("%d(BX)", 64*v)
			}
			if !store {
				fmt.Fprintf(w, "\tVADDPS %s, Z%d, Z%d\n", mem, acc, acc)
			}
			fmt.Fprintf(w, "\tVMOVUPS Z%d, %s\n", acc, mem)
		}
		if r < mr-1 {
			w.WriteString("\tADDQ SI, BX\n")
		}
	}
	w.WriteString("\tVZEROUPPER\n\tRET\n")
}

// cvtPairs writes the routine that rounds n floats (a multiple of 32) to
// bf16 in place order: word q of dst holds src[2q] (low) and src[2q+1].
func cvtPairs(w *strings.Builder) {
	w.WriteString(`
// func cvtPairsAVX512(dst *uint32, src *float32, n int)
// cvtPairsAVX512 rounds src[0:n] to bf16 into dst[0:n/2], src[2q] in the low
// half of word q. n is a multiple of 32 and ≥ 32.
// Requires: AVX512F, AVX512_BF16
TEXT ·cvtPairsAVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $0x05, CX

cvtPairsAVX512_loop:
	VMOVUPS (SI), Z0
	VMOVUPS 64(SI), Z1
`)
	w.WriteString(bytesDirective(vcvtne2ps2bf16(2, 1, 0), "VCVTNE2PS2BF16 Z0, Z1, Z2"))
	w.WriteString(`	VMOVDQU32 Z2, (DI)
	ADDQ $0x80, SI
	ADDQ $0x40, DI
	DECQ CX
	JNZ cvtPairsAVX512_loop
	VZEROUPPER
	RET
`)
}

// pairRows writes the routine that pairs two rows: word c of dst holds
// lo[c] (low) and hi[c] as bf16, 16 words an iteration; idx holds VPERMW's
// interleaving (0, 16, 1, 17, …).
func pairRows(w *strings.Builder) {
	w.WriteString(`
// func pairRowsAVX512(dst *uint32, lo *float32, hi *float32, n int, idx *uint16)
// pairRowsAVX512 writes dst[c] = (lo[c], hi[c]) rounded to bf16, lo[c] in the
// low half, for c < n, a multiple of 16 and ≥ 16. idx holds the word
// permutation 0, 16, 1, 17, …, 15, 31.
// Requires: AVX512F, AVX512BW, AVX512_BF16
TEXT ·pairRowsAVX512(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ lo+8(FP), SI
	MOVQ hi+16(FP), DX
	MOVQ n+24(FP), CX
	MOVQ idx+32(FP), R8
	VMOVDQU16 (R8), Z3
	SHRQ $0x04, CX

pairRowsAVX512_loop:
	VMOVUPS (SI), Z0
	VMOVUPS (DX), Z1
`)
	w.WriteString(bytesDirective(vcvtne2ps2bf16(2, 1, 0), "VCVTNE2PS2BF16 Z0, Z1, Z2"))
	w.WriteString(`	VPERMW Z2, Z3, Z4
	VMOVDQU32 Z4, (DI)
	ADDQ $0x40, SI
	ADDQ $0x40, DX
	ADDQ $0x40, DI
	DECQ CX
	JNZ pairRowsAVX512_loop
	VZEROUPPER
	RET
`)
}

// writeBF16 writes the bf16 micro-kernels and conversions to path.
func writeBF16(path string) {
	var w strings.Builder
	w.WriteString("// Code generated by command: go run . (kernel/asm/bf16.go). DO NOT EDIT.\n\n//go:build amd64\n\n#include \"textflag.h\"\n")
	bf16Kernel(&w, "gemmBF16MicroAVX512", false)
	bf16Kernel(&w, "gemmBF16MicroStoreAVX512", true)
	cvtPairs(&w)
	pairRows(&w)
	if err := os.WriteFile(path, []byte(w.String()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
