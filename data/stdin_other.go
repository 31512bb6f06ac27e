//go:build !unix

package data

import "os"

// stdin returns the standard input itself where its descriptor cannot be
// copied: a load closes it when done.
func stdin() (*os.File, error) { return os.Stdin, nil }
