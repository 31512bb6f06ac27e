package tfidf

// pairTable maps an n-gram's pair key (pairKey) to its id: an
// open-addressing hash table with linear probing, at most half full.
// n-grams are looked up once for each occurrence in the texts, the
// vectorizer's most frequent operation, and a table of integer keys made
// for it does it in about half the time of a Go map.
type pairTable struct {
	slots []pairSlot
	n     int
	shift uint
}

// A slot's key has its top bit set when the slot is used: pair keys'
// first ids are below 2³¹, so their top bit is clear.
type pairSlot struct {
	key uint64
	id  int32
}

const usedSlot = 1 << 63

func (t *pairTable) slot(k uint64) int {
	// Fibonacci hashing: the product's top bits mix all of the key's.
	return int((k * 0x9e3779b97f4a7c15) >> t.shift)
}

// get returns k's id, or false.
func (t *pairTable) get(k uint64) (int32, bool) {
	if t.n == 0 {
		return 0, false
	}
	k |= usedSlot
	mask := len(t.slots) - 1
	for i := t.slot(k); ; i = (i + 1) & mask {
		switch t.slots[i].key {
		case k:
			return t.slots[i].id, true
		case 0:
			return 0, false
		}
	}
}

// put adds k, which is not in t, with id.
func (t *pairTable) put(k uint64, id int32) {
	if 2*(t.n+1) > len(t.slots) {
		t.resize(max(16, 2*len(t.slots)))
	}
	t.insert(k|usedSlot, id)
	t.n++
}

func (t *pairTable) insert(k uint64, id int32) {
	mask := len(t.slots) - 1
	i := t.slot(k)
	for t.slots[i].key != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = pairSlot{k, id}
}

func (t *pairTable) resize(size int) {
	old := t.slots
	t.slots = make([]pairSlot, size)
	t.shift = 64
	for s := size; s > 1; s >>= 1 {
		t.shift--
	}
	for _, s := range old {
		if s.key != 0 {
			t.insert(s.key, s.id)
		}
	}
}
