package kernel

import "fmt"

// Groups are the index groups of MaxKeys8, checked once when made: a
// DWTA family draws its bins once and hashes with them millions of times.
type Groups struct {
	idx []int32
	max int32 // the largest index
}

// NewGroups checks idx (a multiple of 8 indices, none negative) and keeps
// it; the caller must not change it afterwards.
func NewGroups(idx []int32) (Groups, error) {
	if len(idx)%8 != 0 {
		return Groups{}, fmt.Errorf("kernel: %d indices do not make groups of 8", len(idx))
	}
	g := Groups{idx: idx, max: -1}
	for _, i := range idx {
		if i < 0 {
			return Groups{}, fmt.Errorf("kernel: negative index %d", i)
		}
		g.max = max(g.max, i)
	}
	return g, nil
}

// Len is the number of groups.
func (g Groups) Len() int { return len(g.idx) / 8 }

// MaxKeys8 is the winner-take-all of eight vectors side by side, the inner
// loop of DWTA hashing (package lsh) run on eight rows at once: keys holds
// eight lanes an entry (entry i, lane r at keys[8i+r]), and for each group
// g of eight indices,
//
//	top[8g+r] = max over j < 8 of keys[8·idx[8g+j]+r] | (7−j)
//
// so that the low three bits of a lane's result name the first j of its
// largest key, when keys leave those bits zero. keys must hold every entry
// the groups name, and top a result for each group (else it panics).
func MaxKeys8(top, keys []uint64, g Groups) {
	if len(top) < len(g.idx) || int(g.max) >= len(keys)/8 {
		panic(fmt.Sprintf("kernel: MaxKeys8 of %d groups naming entry %d, into %d keys and %d results", g.Len(), g.max, len(keys)/8, len(top)/8))
	}
	if len(g.idx) == 0 {
		return
	}
	cur.maxKeys8(top, keys, g.idx)
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

// Codes8 packs DWTA's codes of eight rows from their bins' winners, top
// as MaxKeys8 leaves it for K·L bins (k·l groups): lane r of
// codes[8t:8t+8] holds table t's K bin values 7 − (top & 7), 3 bits each,
// the first the most significant. It returns the rows (bit r) with a bin
// no key won (top < 8): their codes need the family's densification.
func Codes8(codes, top []uint64, k, l int) uint8 {
	if k < 1 || l < 1 || k > 21 || len(codes) < 8*l || len(top) < 8*k*l {
		panic(fmt.Sprintf("kernel: Codes8 of %d tables of %d bins into %d codes from %d tops", l, k, len(codes)/8, len(top)/8))
	}
	return cur.codes8(codes, top, k, l)
}

// codes8Go is the portable Codes8 (its arguments checked).
func codes8Go(codes, top []uint64, k, l int) uint8 {
	var empty uint8
	for t := range l {
		var c [8]uint64
		for j := range k {
			x := top[8*(t*k+j) : 8*(t*k+j)+8]
			for r := range c {
				if x[r] < 8 {
					empty |= 1 << r
				}
				c[r] = c[r]<<3 | (^x[r] & 7)
			}
		}
		copy(codes[8*t:8*t+8], c[:])
	}
	return empty
}
