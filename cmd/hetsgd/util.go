package main

import (
	"os"
	"strings"
)

func cutPrefix(s, prefix string) (string, bool) { return strings.CutPrefix(s, prefix) }

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}
