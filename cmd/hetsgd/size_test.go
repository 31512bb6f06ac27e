package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxWiringLines bounds the command's own code: cmd/hetsgd is wiring
// (flags, config and output), and the work lives in packages a Go program
// can import. A command that grows past it has work to move out.
const maxWiringLines = 2000

func TestCommandStaysWiring(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		total += bytes.Count(b, []byte("\n"))
	}
	if total == 0 {
		t.Fatal("no source files counted: run from the package's folder")
	}
	if total > maxWiringLines {
		t.Errorf("cmd/hetsgd holds %d lines of code besides its tests, over %d: move work into a package", total, maxWiringLines)
	}
}
