package comm_test

import (
	"fmt"
	"os"
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

// What MeasureNetwork found on two ranks of one host, as tables: the
// link's one-way times against its fit, and an all-reduce against MPI's
// own and the ring model's.
func ExampleNetworkReport_Write() {
	link := &comm.LinkFit{Network: comm.Network{Latency: 2e-6, Bandwidth: 10e9}, A: 0, B: 1,
		Sizes: []int{8, 1 << 20}, Seconds: []float64{2.1e-6, 107e-6}}
	rep := &comm.NetworkReport{Model: comm.Model{Intra: link.Network, Inter: link.Network, AllReduce: comm.Ring}, Intra: link,
		AllReduce: []comm.AllReduceTiming{{Bytes: 4 << 20, Ranks: 2, Go: 1.2e-3, Raw: 1e-3, Model: 0.9e-3}}, Ranks: 2, Hosts: 1}
	if err := rep.Write(os.Stdout); err != nil {
		panic(err)
	}
	// Output:
	// 2 ranks on 1 host(s)
	//
	// link within a host (ranks 0 and 1): latency 2.00 µs, bandwidth 10.00 GB/s
	//        bytes    one way (µs)        fit (µs)
	//            8            2.10            2.00
	//      1048576          107.00          106.86
	//
	// no rank runs on another host: the model's link between nodes is the one within a host
	//
	// all-reduce of 2 ranks    hetsgd (ms)      MPI (ms)   overhead  ring model (ms)
	//        4.0 MB                    1.200         1.000     +20.0%           0.900
}
