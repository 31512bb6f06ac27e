package tfidf

import (
	"cmp"
	"slices"
	"strings"
)

// lexicon numbers n-grams without building their text: a word's id comes
// from words, and an n-gram of n ≥ 2 words is the pair of its first n−1
// words' id and its last word's id, numbered by pairs. All lengths share
// one numbering, so a document's n-grams are found by one map lookup
// each, on integers, however long they are; their text is built only for
// the terms a vocabulary keeps.
type lexicon struct {
	words map[string]int32
	pairs pairTable
	first []int32  // an id's first n−1 words' id; -1 for a word
	last  []int32  // an id's last word's id (its own for a word)
	size  []uint8  // an id's number of words
	word  []string // a word's text ("" for longer n-grams)
}

func newLexicon() *lexicon {
	return &lexicon{words: map[string]int32{}}
}

func (l *lexicon) next(first, last int32, size uint8, word string) int32 {
	id := int32(len(l.size))
	if last < 0 {
		last = id
	}
	l.first, l.last = append(l.first, first), append(l.last, last)
	l.size, l.word = append(l.size, size), append(l.word, word)
	return id
}

// addWord returns w's id, numbering it if new.
func (l *lexicon) addWord(w []byte) int32 {
	if id, ok := l.words[string(w)]; ok {
		return id
	}
	return l.newWord(string(w))
}

// addWordString is addWord for a string.
func (l *lexicon) addWordString(w string) int32 {
	if id, ok := l.words[w]; ok {
		return id
	}
	return l.newWord(w)
}

func (l *lexicon) newWord(w string) int32 {
	id := l.next(-1, -1, 1, w)
	l.words[w] = id
	return id
}

func pairKey(first, last int32) uint64 { return uint64(uint32(first))<<32 | uint64(uint32(last)) }

// addPair returns the id of n-gram first followed by word last, numbering
// it if new.
func (l *lexicon) addPair(first, last int32) int32 {
	k := pairKey(first, last)
	if id, ok := l.pairs.get(k); ok {
		return id
	}
	id := l.next(first, last, l.size[first]+1, "")
	l.pairs.put(k, id)
	return id
}

// wordIDs appends to dst the ids of the words t cut last, -1 for a word
// not in l.
func (l *lexicon) wordIDs(t *tokenizer, dst []int32) []int32 {
	for i := range t.words() {
		id, ok := l.words[string(t.word(i))]
		if !ok {
			id = -1
		}
		dst = append(dst, id)
	}
	return dst
}

// grams appends to dst the ids of the n-grams of ws (word ids, -1 for a
// word not in l), n from minN to maxN, that l holds.
func (l *lexicon) grams(ws []int32, minN, maxN int, dst []int32) []int32 {
	for i, id := range ws {
		if id < 0 {
			continue
		}
		if minN == 1 {
			dst = append(dst, id)
		}
		for n := 2; n <= maxN && i+n <= len(ws); n++ {
			w := ws[i+n-1]
			if w < 0 {
				break
			}
			next, ok := l.pairs.get(pairKey(id, w))
			if !ok {
				break
			}
			if id = next; n >= minN {
				dst = append(dst, id)
			}
		}
	}
	return dst
}

// addGrams is grams for fitting: it numbers the n-grams of ws that are
// new, and every word of ws is in l.
func (l *lexicon) addGrams(ws []int32, minN, maxN int, dst []int32) []int32 {
	for i, id := range ws {
		if minN == 1 {
			dst = append(dst, id)
		}
		for n := 2; n <= maxN && i+n <= len(ws); n++ {
			if id = l.addPair(id, ws[i+n-1]); n >= minN {
				dst = append(dst, id)
			}
		}
	}
	return dst
}

// appendText appends id's n-gram to b, its words joined by a space.
func (l *lexicon) appendText(b []byte, id int32) []byte {
	if f := l.first[id]; f >= 0 {
		b = append(l.appendText(b, f), ' ')
		id = l.last[id]
	}
	return append(b, l.word[id]...)
}

// addTerm numbers a vocabulary term (words joined by single spaces) and
// its prefixes, and returns its id.
func (l *lexicon) addTerm(term string) int32 {
	id := int32(-1)
	for w := range strings.SplitSeq(term, " ") {
		if id < 0 {
			id = l.addWordString(w)
		} else {
			id = l.addPair(id, l.addWordString(w))
		}
	}
	return id
}

// term is an n-gram to sort by its text: its lexicon id and key (see
// textOrder.key).
type term struct {
	key uint64
	id  int32
}

// textOrder orders n-grams as their texts without building them. Words
// are joined by a space, which sorts before every character a word holds
// (letters, digits and the underscore), so one n-gram's text sorts before
// another's exactly when its words, compared one by one by their text,
// do, the shorter first where one's words begin the other's. rank is a
// word's place among the words sorted, from 1; 0 for a longer n-gram.
type textOrder struct {
	lex  *lexicon
	rank []uint32
}

// order ranks l's words.
func (l *lexicon) order() textOrder {
	var words []int32
	for id, f := range l.first {
		if f < 0 {
			words = append(words, int32(id))
		}
	}
	sortParallel(words, func(a, b int32) int { return strings.Compare(l.word[a], l.word[b]) })
	o := textOrder{lex: l, rank: make([]uint32, len(l.first))}
	for r, id := range words {
		o.rank[id] = uint32(r + 1)
	}
	return o
}

// ranks returns the ranks of id's words, in order, in buf.
func (o textOrder) ranks(id int32, buf *[8]uint32) []uint32 {
	n := int(o.lex.size[id])
	for i := n - 1; i > 0; i-- {
		buf[i] = o.rank[o.lex.last[id]]
		id = o.lex.first[id]
	}
	buf[0] = o.rank[id]
	return buf[:n]
}

// key orders n-grams by their first two words: the rank of the first
// word, then of the second (0 for none).
func (o textOrder) key(id int32) uint64 {
	var buf [8]uint32
	r := o.ranks(id, &buf)
	k := uint64(r[0]) << 32
	if len(r) > 1 {
		k |= uint64(r[1])
	}
	return k
}

// compare orders a and b as their texts.
func (o textOrder) compare(a, b term) int {
	if c := cmp.Compare(a.key, b.key); c != 0 || o.lex.size[a.id] <= 2 && o.lex.size[b.id] <= 2 {
		return c
	}
	var ba, bb [8]uint32
	return slices.Compare(o.ranks(a.id, &ba), o.ranks(b.id, &bb))
}
