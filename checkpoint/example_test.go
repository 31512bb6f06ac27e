package checkpoint_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/hetsgd/hetsgd/checkpoint"
)

// A checkpoint is written atomically into a folder that keeps the newest,
// and read back after its checksum is checked.
func Example() {
	dir := checkpoint.Dir(filepath.Join(os.TempDir(), "hetsgd-example"))
	defer os.RemoveAll(string(dir))
	if err := dir.Make(); err != nil {
		panic(err)
	}
	for _, samples := range []int64{100, 200, 300} {
		w, err := checkpoint.Create(dir.Path(samples))
		if err != nil {
			panic(err)
		}
		w.Bytes("settings", []byte(`{"strategy":"sync"}`))
		w.Float32s("center", []float32{1, 2, float32(samples)})
		if err := w.Commit(); err != nil {
			panic(err)
		}
		if err := dir.Prune(2); err != nil {
			panic(err)
		}
	}
	path, _ := checkpoint.Latest(string(dir))
	r, err := checkpoint.Open(path)
	if err != nil {
		panic(err)
	}
	defer r.Close()
	v := make([]float32, 3)
	if err := r.Float32s("center", v); err != nil {
		panic(err)
	}
	list, _ := dir.List()
	fmt.Println(filepath.Base(path), v, len(list))
	// Output: checkpoint-000000000300.hck [1 2 300] 2
}

// A run claims its folder before it works: a second run is refused it, by
// name, while the first holds it or once it holds the first's checkpoints.
func ExampleDir_Claim() {
	dir := checkpoint.Dir(filepath.Join(os.TempDir(), "hetsgd-claim-example"))
	defer os.RemoveAll(string(dir))
	first, err := dir.Claim(checkpoint.Owner{Run: "run-a"}, false)
	if err != nil {
		panic(err)
	}
	defer first.Release()
	_, err = dir.Claim(checkpoint.Owner{Run: "run-b"}, false)
	fmt.Println(err != nil)
	// Output: true
}
