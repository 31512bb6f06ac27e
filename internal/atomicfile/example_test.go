package atomicfile_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/hetsgd/hetsgd/internal/atomicfile"
)

func Example() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "report.md")

	f, err := atomicfile.Create(path, false)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Abort() // on any early return, the target is untouched
	fmt.Fprintln(f, "# Report")
	if err := f.Commit(); err != nil {
		fmt.Println(err)
		return
	}
	b, _ := os.ReadFile(path)
	fmt.Print(string(b))
	// Output: # Report
}
