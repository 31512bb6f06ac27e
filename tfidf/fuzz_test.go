package tfidf

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// Whatever the input, ReadDocuments returns documents or an error, never
// panics; what it returns vectorizes, and every row has unit norm or none.
func FuzzReadDocuments(f *testing.F) {
	for _, seed := range []string{"a,b\tsome text here\n\tno labels at all\n", "x\t\n", "no tab\n", "a\tÜber\xff\n", "\n\n", "l\ttext with\ttabs\n"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		docs, err := ReadDocuments(strings.NewReader(in), "fuzz")
		if err != nil {
			return
		}
		for _, d := range docs {
			if !utf8.ValidString(d.Text) {
				t.Fatalf("text %q is not UTF-8", d.Text)
			}
		}
		m, train, _, _, err := Sets(Options{MinN: 1, MaxN: 2, MinDF: 1}, docs, docs)
		if err != nil {
			return // no term in the documents
		}
		for i := range train.Len() {
			_, vals := train.X.Row(i)
			var n float64
			for _, v := range vals {
				n += float64(v) * float64(v)
			}
			if len(vals) > 0 && (n < 0.999 || n > 1.001) {
				t.Fatalf("row %d of %d terms has squared norm %v", i, len(m.Terms), n)
			}
		}
	})
}

// Whatever the texts, the vectorizer equals its definition (see
// reference_test.go): the fitted terms, their idf and every row, and a
// vectorizer read back from the terms gives the same rows.
func FuzzEqualsReference(f *testing.F) {
	f.Add("a b a b c\nb c d\nc d e a", "a b c e", uint8(1), uint8(3), uint8(1))
	f.Add("Über über ÜBER\nx_y 12 x_y", "über 12", uint8(2), uint8(2), uint8(2))
	f.Fuzz(func(t *testing.T, train, test string, minN, span, minDF uint8) {
		o := Options{MinN: 1 + int(minN%3), MinDF: 1 + int(minDF%3), Sublinear: minN%2 == 0}
		o.MaxN = o.MinN + int(span%3)
		checkAgainstReference(t, o, strings.Split(train, "\n"), strings.Split(test, "\n"))
	})
}
