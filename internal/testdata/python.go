package testdata

import (
	"os"
	"os/exec"
	"testing"
)

// Python returns a python3 that imports module — Debian's, where its
// python3-MODULE packages install, else the first on the PATH — or skips
// the test, naming the Debian package to install.
func Python(t testing.TB, module, debian string) string {
	t.Helper()
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		py = "python3"
	}
	if exec.Command(py, "-c", "import "+module).Run() != nil {
		t.Skipf("python3 with %s is not installed (Debian: %s)", module, debian)
	}
	return py
}

// NumPy is Python with numpy.
func NumPy(t testing.TB) string {
	t.Helper()
	return Python(t, "numpy", "python3-numpy")
}
