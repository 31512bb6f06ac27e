package tfidf

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

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
	index     map[string]int32
}

// Tokens appends to dst the words of text as scikit-learn's default
// analyzer finds them: lowercased, maximal runs of at least two word
// characters (its token pattern (?u)\b\w\w+\b: letters, numbers and the
// underscore).
func Tokens(text string, dst []string) []string {
	text = strings.ToLower(text)
	start := -1
	for i, r := range text {
		word := r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r)
		switch {
		case word && start < 0:
			start = i
		case !word && start >= 0:
			if utf8.RuneCountInString(text[start:i]) >= 2 {
				dst = append(dst, text[start:i])
			}
			start = -1
		}
	}
	if start >= 0 && utf8.RuneCountInString(text[start:]) >= 2 {
		dst = append(dst, text[start:])
	}
	return dst
}

// grams calls f with each n-gram of tokens, n from o.MinN to o.MaxN, its
// words joined by a space.
func (o Options) grams(tokens []string, f func(term string)) {
	var b strings.Builder
	for n := o.MinN; n <= o.MaxN; n++ {
		for i := 0; i+n <= len(tokens); i++ {
			if n == 1 {
				f(tokens[i])
				continue
			}
			b.Reset()
			for w, t := range tokens[i : i+n] {
				if w > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(t)
			}
			f(b.String())
		}
	}
}

// Fit learns the vocabulary and idf of the documents next gives, one
// after another until it returns false: the terms on at least MinDF
// documents, the MaxFeatures most frequent of them when MaxFeatures > 0,
// sorted; a term's idf is ln((1 + n)/(1 + df)) + 1 over the n documents,
// df its documents (scikit-learn's smooth_idf).
func Fit(o Options, next func() (string, bool)) (*Vectorizer, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	type count struct{ df, tf int }
	counts := map[string]*count{}
	seen := map[string]bool{}
	var tokens []string
	n := 0
	for {
		doc, ok := next()
		if !ok {
			break
		}
		n++
		clear(seen)
		tokens = Tokens(doc, tokens[:0])
		o.grams(tokens, func(term string) {
			c := counts[term]
			if c == nil {
				c = &count{}
				counts[term] = c
			}
			c.tf++
			if !seen[term] {
				seen[term] = true
				c.df++
			}
		})
	}
	if n == 0 {
		return nil, fmt.Errorf("tfidf: no documents to fit")
	}
	terms := make([]string, 0, len(counts))
	for t, c := range counts {
		if c.df >= o.MinDF {
			terms = append(terms, t)
		}
	}
	if o.MaxFeatures > 0 && len(terms) > o.MaxFeatures {
		slices.SortFunc(terms, func(a, b string) int {
			return cmp.Or(cmp.Compare(counts[b].tf, counts[a].tf), strings.Compare(a, b))
		})
		terms = terms[:o.MaxFeatures]
	}
	if len(terms) == 0 {
		return nil, fmt.Errorf("tfidf: no term is on %d or more of the %d documents", o.MinDF, n)
	}
	slices.Sort(terms)
	v := &Vectorizer{Options: o, Terms: terms, IDF: make([]float64, len(terms)), Documents: n}
	for j, t := range terms {
		v.IDF[j] = math.Log(float64(1+n)/float64(1+counts[t].df)) + 1
	}
	v.indexTerms()
	return v, nil
}

func (v *Vectorizer) indexTerms() {
	v.index = make(map[string]int32, len(v.Terms))
	for j, t := range v.Terms {
		v.index[t] = int32(j)
	}
}

// Row is a document's TF-IDF row: its terms' ids, ascending, and their
// values, of unit L2 norm (no terms: empty).
type Row struct {
	IDs    []int32
	Values []float32
	tokens []string
	tf     map[int32]int
	vals   []float64
}

// Transform computes text's row into r, reusing its buffers.
func (v *Vectorizer) Transform(text string, r *Row) {
	if r.tf == nil {
		r.tf = map[int32]int{}
	}
	clear(r.tf)
	r.tokens = Tokens(text, r.tokens[:0])
	v.grams(r.tokens, func(term string) {
		if j, ok := v.index[term]; ok {
			r.tf[j]++
		}
	})
	r.IDs = r.IDs[:0]
	for j := range r.tf {
		r.IDs = append(r.IDs, j)
	}
	slices.Sort(r.IDs)
	r.vals = slices.Grow(r.vals[:0], len(r.IDs))[:len(r.IDs)]
	vals := r.vals
	var norm float64
	for n, j := range r.IDs {
		tf := float64(r.tf[j])
		if v.Sublinear {
			tf = 1 + math.Log(tf)
		}
		vals[n] = tf * v.IDF[j]
		norm += vals[n] * vals[n]
	}
	norm = math.Sqrt(norm)
	r.Values = r.Values[:0]
	for _, x := range vals {
		r.Values = append(r.Values, float32(x/norm))
	}
}

// Append adds text's row to b, a builder of the vocabulary's columns.
func (v *Vectorizer) Append(b *sparse.Builder, text string, r *Row) {
	v.Transform(text, r)
	for n, j := range r.IDs {
		b.Append(j, r.Values[n])
	}
	b.EndRow()
}
