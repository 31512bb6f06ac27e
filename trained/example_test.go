package trained_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/hetsgd/hetsgd/model"
	"github.com/hetsgd/hetsgd/trained"
)

// A model saved anywhere — here an archive of hetsgd export — is loaded by
// its path, with its network and parameters.
func ExampleLoad() {
	dir, err := os.MkdirTemp("", "trained-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	mlp, err := model.New(model.Config{Inputs: 1836, Hidden: []int{128}, Outputs: 159})
	if err != nil {
		panic(err)
	}
	p := make([]float32, mlp.NumParams())
	mlp.Init(p, 1)
	f, err := os.Create(filepath.Join(dir, "model.npz"))
	if err != nil {
		panic(err)
	}
	if err := model.WriteNPZ(f, mlp.Config(), p); err != nil {
		panic(err)
	}
	if err := f.Close(); err != nil {
		panic(err)
	}

	m, err := trained.Load(filepath.Join(dir, "model.npz"), trained.Last, trained.Use{What: "scoring", Rows: 256})
	if err != nil {
		panic(err)
	}
	c := m.Config()
	fmt.Printf("%d features, hidden %v, %d labels; the parameters written: %v\n", c.Inputs, c.Hidden, c.Outputs, slices.Equal(m.Params, p))
	// Output:
	// 1836 features, hidden [128], 159 labels; the parameters written: true
}
