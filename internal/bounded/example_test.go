package bounded_test

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/hetsgd/hetsgd/internal/bounded"
)

// Lines reads a file's lines, each at most a limit long: past it, an error
// says which line, and nothing grows.
func ExampleLines() {
	lines := bounded.NewLines(strings.NewReader("short\n"+strings.Repeat("x", 100)+"\n"), 16)
	for {
		line, err := lines.Next()
		if err == io.EOF {
			break
		}
		if errors.Is(err, bounded.ErrTooLong) {
			fmt.Println(err)
			break
		}
		fmt.Printf("%q\n", line)
	}
	// Output:
	// "short\n"
	// line 2 is longer than 16 bytes (too long)
}
