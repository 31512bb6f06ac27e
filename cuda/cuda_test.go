package cuda

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A folder named is the only place looked at; otherwise the loader's
// search comes first, then the usual folder and the toolkits, newest
// first.
func TestCandidates(t *testing.T) {
	if got := candidates("/opt/cu", []string{"libx.so", "libx.so.13"}, "/"); !slices.Equal(got, []string{"/opt/cu/libx.so", "/opt/cu/libx.so.13"}) {
		t.Errorf("a folder named: %v", got)
	}
	root := t.TempDir()
	for _, v := range []string{"12.4", "13.0", "12.10"} {
		os.MkdirAll(filepath.Join(root, "usr/local/cuda-"+v, "targets/x86_64-linux/lib"), 0o755)
	}
	got := candidates("", []string{"libx.so"}, root)
	want := []string{"libx.so", filepath.Join(root, "usr/local/cuda/lib64/libx.so")}
	for _, v := range []string{"13.0", "12.10", "12.4"} {
		want = append(want, filepath.Join(root, "usr/local/cuda-"+v, "targets/x86_64-linux/lib/libx.so"))
	}
	if !slices.Equal(got, want) {
		t.Errorf("searched:\n%v\nwant\n%v", got, want)
	}
	if got := driverCandidates(Options{Driver: "/x/libcuda.so.1"}); !slices.Equal(got, []string{"/x/libcuda.so.1"}) {
		t.Errorf("a driver named: %v", got)
	}
}
