package tfidf

import (
	"cmp"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"

	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/sparse"
)

// Options are the vectorizer's settings, named as scikit-learn's
// TfidfVectorizer names them.
type Options struct {
	// MinN and MaxN are the n-gram range: word n-grams of MinN to MaxN
	// words (ngram_range; 1 and 2 by default here).
	MinN int `json:"min_n"`
	MaxN int `json:"max_n"`
	// MinDF drops the terms on fewer training documents (min_df, a count;
	// default 1: none).
	MinDF int `json:"min_df"`
	// MaxFeatures keeps the terms most frequent over the training
	// documents (max_features; 0: all), ties by term.
	MaxFeatures int `json:"max_features"`
	// Sublinear takes 1 + ln(tf) for a term's count tf (sublinear_tf).
	Sublinear bool `json:"sublinear_tf"`
}

// Defaults are the settings hetsgd data from-text uses unless told.
var Defaults = Options{MinN: 1, MaxN: 2, MinDF: 1, Sublinear: true}

func (o Options) check() error {
	switch {
	case o.MinN < 1 || o.MaxN < o.MinN || o.MaxN > 8:
		return fmt.Errorf("tfidf: n-gram range %d to %d: want 1 ≤ min ≤ max ≤ 8", o.MinN, o.MaxN)
	case o.MinDF < 1:
		return fmt.Errorf("tfidf: min_df %d: want at least 1", o.MinDF)
	case o.MaxFeatures < 0:
		return fmt.Errorf("tfidf: max_features %d: want at least 0 (0: all)", o.MaxFeatures)
	}
	return nil
}

// Vectorizer turns text into TF-IDF rows: a vocabulary of terms, sorted,
// a term's id its place, and each term's idf.
type Vectorizer struct {
	Options
	Terms []string  `json:"terms"`
	IDF   []float64 `json:"idf"`
	// Documents is the number of training documents the idf counts.
	Documents int `json:"documents"`
	lex       *lexicon
	column    []int32 // a lexicon id's term's id; -1: not a term
}

// Fit learns the vocabulary and idf of texts: the terms on at least MinDF
// of them, the MaxFeatures most frequent of those when MaxFeatures > 0,
// sorted; a term's idf is ln((1 + n)/(1 + df)) + 1 over the n documents,
// df its documents (scikit-learn's smooth_idf).
func Fit(o Options, texts []string) (*Vectorizer, error) {
	v, _, err := fit(o, texts)
	return v, err
}

// fit is Fit that also returns each text's n-grams, by lexicon id.
//
// Each core counts the n-grams of a part of the texts in a lexicon of its
// own (tokenizing and one map lookup an n-gram: most of the work); the
// parts' lexicons are then merged, one lookup a distinct n-gram. The ids
// depend on the number of cores; nothing fit returns does, since terms
// are ordered by their text.
func fit(o Options, texts []string) (*Vectorizer, []docGrams, error) {
	if err := o.check(); err != nil {
		return nil, nil, err
	}
	if len(texts) == 0 {
		return nil, nil, fmt.Errorf("tfidf: no documents to fit")
	}
	type shard struct {
		lex   *lexicon
		grams docGrams
		tf    []int64 // a term's occurrences may pass 2³¹ in a large corpus
		df    []int32
		err   error
	}
	shards := make([]*shard, min(runtime.GOMAXPROCS(0), len(texts)))
	parallelParts(len(texts), len(shards), func(p, lo, hi int) {
		s := &shard{lex: newLexicon(), grams: docGrams{lo: lo, offsets: make([]int, 1, hi-lo+1), ids: make([]int32, 0, o.gramsHint(texts[lo:hi]))}}
		var tok tokenizer
		var ws, seen []int32
		for d := lo; d < hi; d++ {
			tok.cut(texts[d])
			ws = ws[:0]
			for i := range tok.words() {
				ws = append(ws, s.lex.addWord(tok.word(i)))
			}
			start := len(s.grams.ids)
			s.grams.ids = s.lex.addGrams(ws, o.MinN, o.MaxN, s.grams.ids)
			s.grams.offsets = append(s.grams.offsets, len(s.grams.ids))
			if n := len(s.lex.size); n > maxIDs {
				s.err = errTooManyGrams
				break
			} else if n > len(s.tf) {
				s.tf, s.df, seen = grow(s.tf, n), grow(s.df, n), grow(seen, n)
			}
			for _, id := range s.grams.ids[start:] {
				s.tf[id]++
				if seen[id] != int32(d+1) {
					seen[id] = int32(d + 1)
					s.df[id]++
				}
			}
		}
		shards[p] = s
	})
	for _, s := range shards {
		if s.err != nil {
			return nil, nil, s.err
		}
	}
	lex := shards[0].lex
	tf, df := shards[0].tf, shards[0].df
	remaps := make([][]int32, len(shards))
	for p, s := range shards[1:] {
		remap := make([]int32, len(s.lex.size))
		for id, first := range s.lex.first {
			if first < 0 {
				remap[id] = lex.addWordString(s.lex.word[id])
			} else {
				remap[id] = lex.addPair(remap[first], remap[s.lex.last[id]])
			}
		}
		if len(lex.size) > maxIDs {
			return nil, nil, errTooManyGrams
		}
		tf, df = grow(tf, len(lex.size)), grow(df, len(lex.size))
		for id, g := range remap {
			tf[g] += s.tf[id]
			df[g] += s.df[id]
		}
		remaps[p+1] = remap
	}
	grams := make([]docGrams, len(shards))
	parallelParts(len(shards), len(shards), func(p, _, _ int) {
		grams[p] = shards[p].grams
		if remap := remaps[p]; remap != nil {
			for i, id := range grams[p].ids {
				grams[p].ids[i] = remap[id]
			}
		}
	})
	var kept []term
	for id, size := range lex.size {
		if int(size) >= o.MinN && df[id] >= int32(o.MinDF) {
			kept = append(kept, term{id: int32(id)})
		}
	}
	if len(kept) == 0 {
		return nil, nil, fmt.Errorf("tfidf: no term is on %d or more of the %d documents", o.MinDF, len(texts))
	}
	order := lex.order()
	parallel(len(kept), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			kept[i].key = order.key(kept[i].id)
		}
	})
	if o.MaxFeatures > 0 && len(kept) > o.MaxFeatures {
		sortParallel(kept, func(a, b term) int { return cmp.Or(cmp.Compare(tf[b.id], tf[a.id]), order.compare(a, b)) })
		kept = kept[:o.MaxFeatures]
	}
	sortParallel(kept, order.compare)
	v := &Vectorizer{Options: o, Terms: make([]string, len(kept)), IDF: make([]float64, len(kept)), Documents: len(texts), lex: lex}
	v.column = make([]int32, len(lex.size))
	for i := range v.column {
		v.column[i] = -1
	}
	// A part's terms are one string, cut: one allocation, not one a term.
	n := float64(len(texts))
	parallel(len(kept), func(lo, hi int) {
		var b []byte
		ends := make([]int, 0, hi-lo)
		for j := lo; j < hi; j++ {
			id := kept[j].id
			b = lex.appendText(b, id)
			ends = append(ends, len(b))
			v.IDF[j] = math.Log((1+n)/float64(1+df[id])) + 1
			v.column[id] = int32(j)
		}
		all, start := string(b), 0
		for i, end := range ends {
			v.Terms[lo+i], start = all[start:end], end
		}
	})
	return v, grams, nil
}

// gramsHint guesses, to size buffers, how many n-grams texts hold: a
// word and its separator take about six bytes of English.
func (o Options) gramsHint(texts []string) int { return textBytes(texts) / 6 * (o.MaxN - o.MinN + 1) }

func textBytes(texts []string) int {
	n := 0
	for _, t := range texts {
		n += len(t)
	}
	return n
}

// maxIDs bounds the n-grams a lexicon numbers: ids and pair keys are
// int32, and a document (at most maxLine bytes) adds fewer than 2²⁶.
const maxIDs = math.MaxInt32 - 1<<26

var errTooManyGrams = fmt.Errorf("tfidf: the texts hold more than %d distinct n-grams: fewer texts, or a narrower --ngram", maxIDs)

// grow returns s lengthened to n, the new elements zero.
func grow[T int32 | int64](s []T, n int) []T {
	if n <= len(s) {
		return s
	}
	return slices.Grow(s, n-len(s))[:n]
}

// docGrams are the n-grams of documents lo, lo+1, … by lexicon id:
// document lo+d's are ids[offsets[d]:offsets[d+1]].
type docGrams struct {
	lo      int
	ids     []int32
	offsets []int
}

// gramsOf returns document d's n-grams from parts, which hold it.
func gramsOf(parts []docGrams, d int) []int32 {
	for _, p := range parts {
		if i := d - p.lo; i >= 0 && i < len(p.offsets)-1 {
			return p.ids[p.offsets[i]:p.offsets[i+1]]
		}
	}
	panic("tfidf: no n-grams of the document")
}

// index numbers the terms of a vectorizer read from a file.
func (v *Vectorizer) index() error {
	v.lex = newLexicon()
	ids := make([]int32, len(v.Terms))
	for j, t := range v.Terms {
		if j > 0 && t <= v.Terms[j-1] {
			return fmt.Errorf("term %d (%q) is not after term %d (%q): the terms are sorted and distinct", j, t, j-1, v.Terms[j-1])
		}
		n := strings.Count(t, " ") + 1
		if n < v.MinN || n > v.MaxN || strings.Contains(" "+t+" ", "  ") {
			return fmt.Errorf("term %d (%q) is not %d to %d words joined by single spaces", j, t, v.MinN, v.MaxN)
		}
		ids[j] = v.lex.addTerm(t)
	}
	v.column = make([]int32, len(v.lex.size))
	for i := range v.column {
		v.column[i] = -1
	}
	for j, id := range ids {
		v.column[id] = int32(j)
	}
	return nil
}

// Row is a document's TF-IDF row: its terms' ids, ascending, and their
// values, of unit L2 norm (no terms: empty).
type Row struct {
	IDs    []int32
	Values []float32
	tok    tokenizer
	words  []int32
	grams  []int32
	vals   []float64
}

// Transform computes text's row into r, reusing its buffers.
func (v *Vectorizer) Transform(text string, r *Row) {
	r.tok.cut(text)
	r.words = v.lex.wordIDs(&r.tok, r.words[:0])
	r.grams = v.lex.grams(r.words, v.MinN, v.MaxN, r.grams[:0])
	v.row(r.grams, r)
}

// row computes into r the row of a document of n-grams grams (lexicon
// ids; reordered).
func (v *Vectorizer) row(grams []int32, r *Row) {
	r.IDs = r.IDs[:0]
	for _, id := range grams {
		if j := v.column[id]; j >= 0 {
			r.IDs = append(r.IDs, j)
		}
	}
	slices.Sort(r.IDs)
	// Count each term's occurrences, runs of equal ids, in place.
	r.vals = r.vals[:0]
	n := 0
	for i := 0; i < len(r.IDs); {
		k := i + 1
		for k < len(r.IDs) && r.IDs[k] == r.IDs[i] {
			k++
		}
		r.IDs[n] = r.IDs[i]
		r.vals = append(r.vals, float64(k-i))
		n, i = n+1, k
	}
	r.IDs = r.IDs[:n]
	var norm float64
	for i, j := range r.IDs {
		tf := r.vals[i]
		if v.Sublinear {
			tf = 1 + math.Log(tf)
		}
		r.vals[i] = tf * v.IDF[j]
		norm += r.vals[i] * r.vals[i]
	}
	norm = math.Sqrt(norm)
	r.Values = r.Values[:0]
	for _, x := range r.vals {
		r.Values = append(r.Values, float32(x/norm))
	}
}

// Append adds text's row to b, a builder of the vocabulary's columns.
func (v *Vectorizer) Append(b *sparse.Builder, text string, r *Row) {
	v.Transform(text, r)
	appendRow(b, r)
}

func appendRow(b *sparse.Builder, r *Row) {
	for n, j := range r.IDs {
		b.Append(j, r.Values[n])
	}
	b.EndRow()
}

// parallel calls f with the ranges of a split of [0, n) into parts, one
// part a core, concurrently.
func parallel(n int, f func(lo, hi int)) {
	parallelParts(n, runtime.GOMAXPROCS(0), func(_, lo, hi int) { f(lo, hi) })
}

// parallelParts calls f concurrently, on the kernels' pool (kernel.Default,
// as wide as --threads), with each part p of a split of [0, n) into at
// most parts parts, and the part's range.
func parallelParts(n, parts int, f func(p, lo, hi int)) {
	parts = max(min(parts, n, 1<<16-1), 1)
	kernel.Default().Run(partFunc(func(p, np int) { f(p, p*n/np, (p+1)*n/np) }), parts)
}

// partFunc is a function as a kernel.Task.
type partFunc func(p, n int)

func (f partFunc) Part(p, n int) { f(p, n) }

// sortParallel sorts s by cmp, which orders any two distinct elements
// (the order is total): its parts are sorted each on a core and merged.
func sortParallel[T any](s []T, cmp func(a, b T) int) {
	sortParts(s, cmp, min(runtime.GOMAXPROCS(0), len(s)/4096))
}

// sortParts is sortParallel in parts parts.
func sortParts[T any](s []T, cmp func(a, b T) int, parts int) {
	if parts = min(parts, len(s)); parts <= 1 {
		slices.SortFunc(s, cmp)
		return
	}
	bounds := make([]int, parts+1)
	for p := range bounds {
		bounds[p] = p * len(s) / parts
	}
	parallelParts(parts, parts, func(p, _, _ int) { slices.SortFunc(s[bounds[p]:bounds[p+1]], cmp) })
	buf := make([]T, len(s))
	src, dst := s, buf
	for len(bounds) > 2 {
		// Runs 2i and 2i+1 merge into one (a last odd run is copied).
		runs := len(bounds) - 1
		parallelParts((runs+1)/2, (runs+1)/2, func(i, _, _ int) {
			lo, mid, hi := bounds[2*i], bounds[2*i+1], bounds[min(2*i+2, runs)]
			merge(dst[lo:hi], src[lo:mid], src[mid:hi], cmp)
		})
		var next []int
		for i := 0; i < runs; i += 2 {
			next = append(next, bounds[i])
		}
		bounds = append(next, len(s))
		src, dst = dst, src
	}
	copy(s, src) // a no-op when the last round merged into s
}

// merge writes into dst (of their joint length) the sorted a and b, merged.
func merge[T any](dst, a, b []T, cmp func(a, b T) int) {
	i, j := 0, 0
	for k := range dst {
		if j == len(b) || (i < len(a) && cmp(a[i], b[j]) <= 0) {
			dst[k], i = a[i], i+1
		} else {
			dst[k], j = b[j], j+1
		}
	}
}
