package testdata

import (
	"os"
	"os/exec"
	"testing"
)

// NumPy returns a python3 that imports numpy — Debian's, where
// python3-numpy installs, else the first on the PATH — or skips the test.
func NumPy(t testing.TB) string {
	t.Helper()
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		py = "python3"
	}
	if exec.Command(py, "-c", "import numpy").Run() != nil {
		t.Skip("python3 with numpy is not installed (Debian: python3-numpy)")
	}
	return py
}
