package kernel

import "fmt"

// MaxKeys8 is the winner-take-all of eight vectors side by side, the inner
// loop of DWTA hashing (package lsh) run on eight rows at once: keys holds
// eight lanes an entry (entry i, lane r at keys[8i+r]), and for each group
// g of eight indices in idx,
//
//	top[8g+r] = max over j < 8 of keys[8·idx[8g+j]+r] | (7−j)
//
// so that the low three bits of a lane's result name the first j of its
// largest key, when keys leave those bits zero. len(idx) is a multiple of
// 8; every index must name an entry of keys (checked: an index past the
// keys panics).
func MaxKeys8(top, keys []uint64, idx []int32) {
	if len(idx)%8 != 0 || len(top) < len(idx) {
		panic(fmt.Sprintf("kernel: MaxKeys8 of %d indices into %d results", len(idx), len(top)))
	}
	n := int32(len(keys) / 8)
	for _, i := range idx {
		if uint32(i) >= uint32(n) {
			panic(fmt.Sprintf("kernel: MaxKeys8 index %d of %d entries", i, n))
		}
	}
	if len(idx) == 0 {
		return
	}
	cur.maxKeys8(top, keys, idx)
}

// maxKeys8Go is the portable MaxKeys8 (its arguments checked).
func maxKeys8Go(top, keys []uint64, idx []int32) {
	for g := 0; g < len(idx)/8; g++ {
		var t [8]uint64
		for j, i := range idx[8*g : 8*g+8] {
			e := keys[8*int(i) : 8*int(i)+8]
			for r := range t {
				t[r] = max(t[r], e[r]|uint64(7-j))
			}
		}
		copy(top[8*g:8*g+8], t[:])
	}
}
