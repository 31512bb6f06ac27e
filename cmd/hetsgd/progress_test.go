package main

import (
	"bytes"
	"testing"
)

// "auto" asks the writer the command was given, not the process's stderr.
func TestProgressAutoAsksTheWriter(t *testing.T) {
	if on, err := progressWanted("auto", &bytes.Buffer{}); err != nil || on {
		t.Fatalf("auto on a buffer: %v, %v; want no bar", on, err)
	}
}
