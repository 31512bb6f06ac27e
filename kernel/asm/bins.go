package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// maxKeys8 generates
//
//	func maxKeys8AVX512(top, keys *uint64, idx *int32, groups int)
//
// the winner-take-all of eight vectors side by side: for each group g of
// eight indices, lane r of top[g] is the largest keys[idx[8g+j]][r] | (7−j)
// over j < 8 (keys and top hold eight lanes an entry). Package lsh's DWTA
// hashing runs eight rows of a matrix through it at once, a bin a group.
func maxKeys8(name string) {
	TEXT(name, NOSPLIT, "func(top, keys *uint64, idx *int32, groups int)")
	Pragma("noescape")
	Doc(name + " sets, for g < groups, lane r of top[8g:8g+8] to the largest keys[8·idx[8g+j]+r] | (7−j) over j < 8. Indices are the caller's to check.")
	top := Load(Param("top"), GP64())
	keys := Load(Param("keys"), GP64())
	idx := Load(Param("idx"), GP64())
	groups := Load(Param("groups"), GP64())
	tags := make([]reg.VecVirtual, 8)
	t := GP64()
	for j := range tags {
		tags[j] = ZMM()
		MOVQ(U64(7-j), t)
		VPBROADCASTQ(t, tags[j])
	}
	Label("group")
	acc := ZMM()
	for j := 0; j < 8; j++ {
		i := GP64()
		MOVLQSX(Mem{Base: idx, Disp: 4 * j}, i)
		SHLQ(Imm(6), i) // an entry is 64 bytes
		v := ZMM()
		VPORQ(Mem{Base: keys, Index: i, Scale: 1}, tags[j], v)
		if j == 0 {
			acc = v
			continue
		}
		VPMAXUQ(v, acc, acc)
	}
	VMOVDQU64(acc, Mem{Base: top})
	ADDQ(Imm(32), idx)
	ADDQ(Imm(64), top)
	DECQ(groups)
	JNZ(LabelRef("group"))
	VZEROUPPER()
	RET()
}

// codes8 generates
//
//	func codes8AVX512(codes, top *uint64, k, l int) uint8
//
// DWTA's codes of eight rows from their bins' winners (maxKeys8's top,
// K·L bins of eight lanes): lane r of codes[8t:8t+8] packs the K values
// 7 − (top & 7) of table t's bins, the first the most significant, 3 bits
// each. It returns the lanes (bit r: row r) with a bin that had no winner
// (top < 8), whose codes the caller redoes with densification.
func codes8(name string) {
	TEXT(name, NOSPLIT, "func(codes, top *uint64, k, l int) uint8")
	Pragma("noescape")
	Doc(name + " packs, for t < l, lane r of codes[8t:8t+8] from the k bin values 7−(top&7) of table t (3 bits each, the first the most significant) and returns the lanes with a bin whose top was below 8.")
	codes := Load(Param("codes"), GP64())
	top := Load(Param("top"), GP64())
	k := Load(Param("k"), GP64())
	l := Load(Param("l"), GP64())
	seven := ZMM()
	t := GP64()
	MOVQ(U64(7), t)
	VPBROADCASTQ(t, seven)
	empty := K()
	KXORW(empty, empty, empty)
	Label("table")
	c := ZMM()
	VPXORQ(c, c, c)
	j := GP64()
	MOVQ(k, j)
	Label("bin")
	x := ZMM()
	VMOVDQU64(Mem{Base: top}, x)
	low := K()
	VPCMPUQ(Imm(2), seven, x, low) // x ≤ 7 (predicate LE)
	KORW(low, empty, empty)
	VPSLLQ(Imm(3), c, c)
	v := ZMM()
	VPANDNQ(seven, x, v) // ^x & 7 = 7 − (x & 7)
	VPORQ(v, c, c)
	ADDQ(Imm(64), top)
	DECQ(j)
	JNZ(LabelRef("bin"))
	VMOVDQU64(c, Mem{Base: codes})
	ADDQ(Imm(64), codes)
	DECQ(l)
	JNZ(LabelRef("table"))
	r := GP32()
	KMOVW(empty, r)
	MOVB(r.As8(), NewParamAddr("ret", 32))
	VZEROUPPER()
	RET()
}
