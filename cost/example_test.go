package cost_test

import (
	"fmt"

	"github.com/hetsgd/hetsgd/cost"
	"github.com/hetsgd/hetsgd/workload"
)

// The virtual clock's price of a batch grows with its rows and non-zeros,
// by the model shipped for this machine kind.
func ExampleModel_Batch() {
	m := cost.Default()
	shape := workload.Shape{H1: 128, Dense: 128 * 983, Labels: 983, Params: 500*128 + 128*983}
	small, large := m.Batch(shape, 32, 32*18), m.Batch(shape, 128, 128*18)
	fmt.Println(large > small, m.Update(shape) > 0)
	// Output: true true
}
