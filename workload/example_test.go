package workload_test

import (
	"fmt"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/workload"
)

// The sparse MLP on the bundled Bibtex set, as an engine runs it: one
// hidden layer of 16, a worker that loads batches from the shared stream
// and computes their gradients.
func ExampleNewXML() {
	train, test, err := data.Bundled("bibtex")
	if err != nil {
		panic(err)
	}
	w, err := workload.NewXML(train, test, []int{16}, 0, 0, 256)
	if err != nil {
		panic(err)
	}
	p, g := make([]float32, w.NumParams()), make([]float32, w.NumParams())
	w.Init(p, 1)
	worker, err := w.NewWorker(32, 1, false)
	if err != nil {
		panic(err)
	}
	worker.Load(data.NewSampler(w.Size(), 1), 32)
	loss := worker.Gradient(p, g)
	fmt.Println(w.Kind(), w.Size(), w.NumParams(), loss > 0)
	// Output: xml 4880 32095 true
}
