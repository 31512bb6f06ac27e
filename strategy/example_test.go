package strategy_test

import (
	"fmt"

	"github.com/hetsgd/hetsgd/strategy"
	"github.com/hetsgd/hetsgd/strategy/strategytest"
)

// A strategy's action names its op, and the op does the arithmetic on the
// vectors an engine lends it: here the stock merge, on a host in memory,
// averages two replicas into the centre with momentum 0.5 and restarts
// both from it.
func ExampleMerge() {
	a := strategy.Merge([]float64{0.25, 0.75}, 0.5)
	op, err := strategy.NewOp(a.Op)
	if err != nil {
		panic(err)
	}
	h := &strategytest.Host{C: []float32{2, 2}, P: []float32{1, 1},
		Reps: []*strategytest.Replica{{Dev: 0, P: []float32{1, 2}}, {Dev: 1, P: []float32{3, 6}}}}
	if err := op.(strategy.Collector).Collect(h, &a); err != nil {
		panic(err)
	}
	fmt.Println(op.Format(&a))
	fmt.Println("centre", h.C, "previous", h.P, "replica 0", h.Reps[0].P)
	// Output:
	// merge weights=[0.25 0.75] gamma=0.5
	// centre [3 5.5] previous [2 2] replica 0 [3 5.5]
}
