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
