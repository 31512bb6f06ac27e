package tfidf

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// This file holds the vectorizer as its definition reads, the reference
// the numbered n-grams of lexicon are checked against: every n-gram built
// as text and counted in maps.

// refTokens is Tokens by definition: the words of text as scikit-learn's
// default analyzer finds them: lowercased, maximal runs of at least two word
// characters (its token pattern (?u)\b\w\w+\b: letters, numbers and the
// underscore).
func refTokens(text string, dst []string) []string {
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

// refGrams calls f with each n-gram of tokens, n from o.MinN to o.MaxN,
// its words joined by a space.
func refGrams(o Options, tokens []string, f func(term string)) {
	for n := o.MinN; n <= o.MaxN; n++ {
		for i := 0; i+n <= len(tokens); i++ {
			f(strings.Join(tokens[i:i+n], " "))
		}
	}
}

// refFit is Fit by definition.
func refFit(o Options, texts []string) (terms []string, idf []float64) {
	tf, df := map[string]int{}, map[string]int{}
	for _, text := range texts {
		seen := map[string]bool{}
		refGrams(o, refTokens(text, nil), func(t string) {
			tf[t]++
			if !seen[t] {
				seen[t] = true
				df[t]++
			}
		})
	}
	for t := range tf {
		if df[t] >= o.MinDF {
			terms = append(terms, t)
		}
	}
	if o.MaxFeatures > 0 && len(terms) > o.MaxFeatures {
		slices.SortFunc(terms, func(a, b string) int { return cmp.Or(cmp.Compare(tf[b], tf[a]), strings.Compare(a, b)) })
		terms = terms[:o.MaxFeatures]
	}
	slices.Sort(terms)
	n := float64(len(texts))
	for _, t := range terms {
		idf = append(idf, math.Log((1+n)/float64(1+df[t]))+1)
	}
	return terms, idf
}

// refRow is a row by definition.
func refRow(o Options, terms []string, idf []float64, text string) ([]int32, []float32) {
	col := map[string]int32{}
	for j, t := range terms {
		col[t] = int32(j)
	}
	tf := map[int32]int{}
	refGrams(o, refTokens(text, nil), func(t string) {
		if j, ok := col[t]; ok {
			tf[j]++
		}
	})
	var ids []int32
	for j := range tf {
		ids = append(ids, j)
	}
	slices.Sort(ids)
	vals := make([]float64, len(ids))
	var norm float64
	for n, j := range ids {
		x := float64(tf[j])
		if o.Sublinear {
			x = 1 + math.Log(x)
		}
		vals[n] = x * idf[j]
		norm += vals[n] * vals[n]
	}
	norm = math.Sqrt(norm)
	out := make([]float32, len(ids))
	for n, x := range vals {
		out[n] = float32(x / norm)
	}
	return ids, out
}

// checkAgainstReference fails t unless Sets, and a vectorizer read back
// from its terms, give the reference's vocabulary, idf and rows, bit for
// bit.
func checkAgainstReference(t *testing.T, o Options, train, test []string) {
	t.Helper()
	docs := func(texts []string) []Document {
		var d []Document
		for _, x := range texts {
			d = append(d, Document{Text: x})
		}
		return d
	}
	terms, idf := refFit(o, train)
	m, trainSet, testSet, _, err := Sets(o, docs(train), docs(test))
	if len(terms) == 0 {
		if err == nil {
			t.Fatalf("%+v: no terms by definition, but Sets fitted %d", o, len(m.Terms))
		}
		return
	}
	if err != nil {
		t.Fatalf("%+v: %v", o, err)
	}
	if !slices.Equal(m.Terms, terms) || !slices.Equal(m.IDF, idf) {
		t.Fatalf("%+v: terms %q idf %v, want %q %v", o, m.Terms, m.IDF, terms, idf)
	}
	back := &Vectorizer{Options: o, Terms: terms, IDF: idf}
	if err := back.index(); err != nil {
		t.Fatalf("%+v: the fitted terms read back: %v", o, err)
	}
	var r Row
	for _, s := range []struct {
		texts []string
		x     interface {
			Row(int) ([]int32, []float32)
		}
	}{{train, &trainSet.X}, {test, &testSet.X}} {
		for d, text := range s.texts {
			ids, vals := refRow(o, terms, idf, text)
			gotIDs, gotVals := s.x.Row(d)
			back.Transform(text, &r)
			if !slices.Equal(gotIDs, ids) || !slices.Equal(gotVals, vals) || !slices.Equal(r.IDs, ids) || !slices.Equal(r.Values, vals) {
				t.Fatalf("%+v: %q: row %v %v (read back %v %v), want %v %v", o, text, gotIDs, gotVals, r.IDs, r.Values, ids, vals)
			}
		}
	}
}

// The fast vectorizer equals the definition on random texts of a small
// vocabulary, so that long n-grams repeat, at every setting's corner.
func TestEqualsReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"a", "bb", "cc", "dd", "ee", "ff", "ÜBER", "日本", "x_y", "12"}
	text := func() string {
		var b strings.Builder
		for range rng.IntN(30) {
			b.WriteString(words[rng.IntN(len(words))])
			b.WriteString([]string{" ", ", ", "-", "\t", "!"}[rng.IntN(5)])
		}
		return b.String()
	}
	var train, test []string
	for range 60 {
		train = append(train, text())
	}
	for range 20 {
		test = append(test, text())
	}
	for _, o := range []Options{
		Defaults, {MinN: 1, MaxN: 1, MinDF: 1}, {MinN: 2, MaxN: 3, MinDF: 2},
		{MinN: 1, MaxN: 4, MinDF: 1, MaxFeatures: 50, Sublinear: true}, {MinN: 3, MaxN: 8, MinDF: 1},
		{MinN: 1, MaxN: 2, MinDF: 1000},
	} {
		checkAgainstReference(t, o, train, test)
	}
}
