package lsh_test

import (
	"fmt"

	"github.com/hetsgd/hetsgd/lsh"
)

// The rows of an output layer of 1,000 labels worth computing for one
// input: its label, then the rows whose buckets its hidden vector falls in,
// at most 50 in all; and 20 random rows its batch shares.
func Example() {
	const labels, hidden = 1000, 16
	w := make([]float32, labels*hidden) // the output layer, a row per label
	for i := range w {
		w[i] = float32((i*7919)%201-100) / 100
	}
	fam, _ := lsh.NewDWTA(hidden, 2, 10, 1)    // K = 2 values a table, L = 10 tables
	ix, _ := lsh.NewIndex(fam, labels, labels) // buckets keep every row that hashes to them
	ix.Build(w, hidden, 1)
	s, _ := lsh.NewSampler(ix, 50, 1)
	h := w[42*hidden : 43*hidden] // a hidden vector just like label 42's row
	active := s.Retrieve(nil, h, []int32{7})
	fmt.Println(active[0], contains(active, 42), len(active) <= 50, len(s.Fill(nil, 20)))
	// Output: 7 true true 20
}

func contains(s []int32, x int32) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}
