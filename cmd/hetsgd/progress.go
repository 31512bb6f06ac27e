package main

import (
	"fmt"
	"io"

	"github.com/hetsgd/hetsgd/progress"
)

// progressWanted decides whether to draw the progress bar: "auto" draws it
// only when stderr is a terminal, so logs and pipes stay clean.
func progressWanted(mode string, stderr io.Writer) (bool, error) {
	switch mode {
	case "on":
		return true, nil
	case "off":
		return false, nil
	case "auto":
		return progress.IsTerminal(stderr), nil
	}
	return false, fmt.Errorf("--progress %q: want auto, on or off", mode)
}
