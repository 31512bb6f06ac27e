package comm_test

import (
	"fmt"
	"sync"

	"github.com/hetsgd/hetsgd/comm"
)

// Three ranks — goroutines here, processes under MPI — each hold a local
// vector; WeightedAllReduce gives every rank the weighted sum of all of them.
func ExampleWeightedAllReduce() {
	world := comm.Mem(3)
	sums := make([][]float32, len(world))
	var wg sync.WaitGroup
	for r, c := range world {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := []float32{float32(r), 1}
			sums[r] = make([]float32, 2)
			// Each rank weighs its vector by 1/3: the mean over the ranks.
			if err := comm.WeightedAllReduce(c, sums[r], []float32{1. / 3}, [][]float32{mine}); err != nil {
				panic(err)
			}
		}()
	}
	wg.Wait()
	fmt.Println(sums[0], sums[2])
	// Output: [1 1] [1 1]
}

// Ranks check that they agree before working together, and learn which one
// does not.
func ExampleAgree() {
	world := comm.Mem(2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r, c := range world {
		wg.Add(1)
		go func() {
			defer wg.Done()
			settings := comm.Fingerprint{Name: "settings", Sum: [32]byte{byte(r)}}
			errs[r] = comm.Agree(c, []comm.Fingerprint{settings})
		}()
	}
	wg.Wait()
	fmt.Println(errs[0] != nil, errs[1] != nil)
	// Output: true true
}
