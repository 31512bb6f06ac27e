package tfidf

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// sortParts sorts, whatever the number of parts, odd ones included.
func TestSortParts(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 7, 100, 1001} {
		for parts := 1; parts <= 7; parts++ {
			s := make([]int, n)
			for i := range s {
				s[i] = rng.IntN(50)
			}
			want := slices.Clone(s)
			slices.Sort(want)
			sortParts(s, cmp.Compare[int], parts)
			if !slices.Equal(s, want) {
				t.Fatalf("%d elements in %d parts: %v, want %v", n, parts, s, want)
			}
		}
	}
}

// The pair table finds what was put in it, and nothing else, across its
// resizes.
func TestPairTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var tab pairTable
	want := map[uint64]int32{}
	for i := range 5000 {
		k := pairKey(rng.Int32N(300), rng.Int32N(300))
		if _, ok := want[k]; !ok {
			want[k] = int32(i)
			tab.put(k, int32(i))
		}
	}
	for k := range uint64(400) {
		for _, key := range []uint64{k, k<<32 | k, pairKey(int32(k), 7)} {
			got, ok := tab.get(key)
			w, wok := want[key]
			if ok != wok || got != w {
				t.Fatalf("get(%#x) = %d %v, want %d %v", key, got, ok, w, wok)
			}
		}
	}
}

// The vocabulary and rows do not depend on the number of cores that make
// them, though the lexicon's numbering does.
func TestSetsIndependentOfCores(t *testing.T) {
	var docs []Document
	rng := rand.New(rand.NewPCG(7, 8))
	for range 97 {
		var b strings.Builder
		for range rng.IntN(40) {
			b.WriteString([]string{"red ", "green ", "blue ", "cyan ", "Über ", "x2 "}[rng.IntN(6)])
		}
		docs = append(docs, Document{Text: b.String(), Labels: []string{"a"}})
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	var first []any
	for _, procs := range []int{1, 2, 3, 5, 8} {
		runtime.GOMAXPROCS(procs)
		for _, o := range []Options{Defaults, {MinN: 1, MaxN: 3, MinDF: 2, MaxFeatures: 30}} {
			m, train, test, _, err := Sets(o, docs[:80], docs[80:])
			if err != nil {
				t.Fatal(err)
			}
			got := []any{m.Terms, m.IDF, train.X, test.X}
			if first == nil || len(first) < 8 {
				first = append(first, got...)
				continue
			}
			i := 0
			if o.MaxFeatures > 0 {
				i = 4
			}
			if !reflect.DeepEqual(got, first[i:i+4]) {
				t.Fatalf("%+v on %d cores: a vocabulary or rows unlike on 1 core", o, procs)
			}
		}
	}
}

// A vocabulary large enough for the parallel sort (over 8,192 terms)
// equals the definition, at several numbers of cores.
func TestLargeVocabularyEqualsReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	words := make([]string, 150)
	for i := range words {
		words[i] = fmt.Sprintf("w%03d", i)
	}
	var train, test []string
	for d := range 360 {
		var b strings.Builder
		for range 40 {
			b.WriteString(words[rng.IntN(len(words))])
			b.WriteByte(' ')
		}
		if d < 300 {
			train = append(train, b.String())
		} else {
			test = append(test, b.String())
		}
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{2, 3, 7} {
		runtime.GOMAXPROCS(procs)
		for _, o := range []Options{Defaults, {MinN: 1, MaxN: 2, MinDF: 1, MaxFeatures: 9000}} {
			if terms, _ := refFit(o, train); len(terms) < 8192 {
				t.Fatalf("%+v: %d terms: too few for the parallel sort", o, len(terms))
			}
			checkAgainstReference(t, o, train, test)
		}
	}
}
