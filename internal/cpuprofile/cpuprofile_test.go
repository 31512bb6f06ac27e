package cpuprofile

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/internal/testdata"
)

// gzipMagic opens every profile pprof writes (a gzipped protocol buffer).
var gzipMagic = []byte{0x1f, 0x8b}

func TestStartWritesTheProfileAtStop(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cpu.prof")
	stop, err := Start(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatal("the profile is under its name before it is whole")
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || !bytes.HasPrefix(b, gzipMagic) {
		t.Fatalf("the profile: %d bytes, %v", len(b), err)
	}
	if got := testdata.Entries(t, dir); len(got) != 1 {
		t.Errorf("left in the folder: %v", got)
	}
}

// A profile never replaces a file: one there at the start is refused and
// left as it was; one made while the process ran is kept, the profile
// dropped.
func TestProfileReplacesNoFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "train.txt")
	os.WriteFile(path, []byte("data"), 0o644)
	if _, err := Start(path); err == nil || !strings.Contains(err.Error(), Env+"="+path) {
		t.Fatalf("an existing file: %v", err)
	}
	late := filepath.Join(dir, "late.prof")
	stop, err := Start(late)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(late, []byte("made meanwhile"), 0o644)
	if err := stop(); err == nil || !strings.Contains(err.Error(), late) {
		t.Fatalf("a file made meanwhile: %v", err)
	}
	for name, want := range map[string]string{path: "data", late: "made meanwhile"} {
		if b, _ := os.ReadFile(name); string(b) != want {
			t.Errorf("%s holds %q, want %q", name, b, want)
		}
	}
	if got := testdata.Entries(t, dir); len(got) != 2 {
		t.Errorf("left in the folder: %v", got)
	}
}

func TestFromEnv(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(Env, "")
	stop, err := FromEnv()
	if err != nil || stop() != nil || len(testdata.Entries(t, dir)) != 0 {
		t.Fatalf("without %s: %v", Env, err)
	}
	path := filepath.Join(dir, "cpu.prof")
	t.Setenv(Env, path)
	t.Setenv(rankEnv, "3")
	if stop, err = FromEnv(); err != nil {
		t.Fatal(err)
	}
	if v, set := os.LookupEnv(Env); set {
		t.Errorf("the processes this one starts would profile into %q too", v)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + ".rank-3"); err != nil {
		t.Errorf("a rank's profile: %v", err)
	}
}
