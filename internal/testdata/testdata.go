// Package testdata locates the reference datasets (Bibtex, Delicious, MNIST in
// their standard splits) for tests that need more than the bundled Bibtex,
// and holds the helpers tests of several packages share.
//
// The folder is $HETSGD_DATA when set, otherwise ../shared/data beside the
// repository root. Tests that need it call Dir, which skips the test when the
// folder is absent, so the suite passes (with skips) anywhere.
package testdata

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the reference data folder holding sub, or skips the test.
func Dir(t testing.TB, sub string) string {
	t.Helper()
	for _, base := range candidates() {
		p := filepath.Join(base, sub)
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return p
		}
	}
	t.Skipf("reference dataset %q not found (set HETSGD_DATA to the folder holding it)", sub)
	return ""
}

func candidates() []string {
	if d := os.Getenv("HETSGD_DATA"); d != "" {
		return []string{d}
	}
	root, err := moduleRoot()
	if err != nil {
		return nil
	}
	return []string{filepath.Join(root, "..", "shared", "data")}
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}

// Entries lists the names in folder dir, for tests of what a command
// leaves behind.
func Entries(t testing.TB, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// EqualBits reports whether two vectors are the same, bit for bit.
func EqualBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// MaxRelDiff is max |a−b| over max |b|: how far a result is from its
// reference, relative to the reference's scale.
func MaxRelDiff(a, b []float32) float64 {
	var d, s float64
	for i := range b {
		d = math.Max(d, math.Abs(float64(a[i]-b[i])))
		s = math.Max(s, math.Abs(float64(b[i])))
	}
	return d / s
}
