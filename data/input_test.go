package data

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/setting"
)

// A libSVM file whose feature ids start at 0 is refused as libsvm, with a
// hint that names the setting to change (renamed as a front end names
// it), and read as libsvm0, whole or streamed.
func TestLibSVM0(t *testing.T) {
	text := "0 0:1 3:1\n1,2 2:0.5\n"
	_, err := Read(strings.NewReader(text), "zero.txt", LibSVM)
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Line != 1 || !errors.Is(err, ErrFormat) {
		t.Fatalf("a 0-based file read as libsvm: %v", err)
	}
	renamed := setting.Rename(err, func(f string) string {
		if f == "data.Loader.Format" {
			return "--format"
		}
		return ""
	})
	if !strings.HasSuffix(renamed, "(read a libSVM file whose feature ids start at 0 with --format libsvm0)") {
		t.Errorf("the hint, renamed: %q", renamed)
	}
	if f, err := ParseFormat("LibSVM0"); err != nil || f != LibSVM0 {
		t.Fatalf("ParseFormat: %v %v", f, err)
	}
	ds, err := Read(strings.NewReader(text), "zero.txt", LibSVM0)
	if err != nil || ds.Features() != 4 || ds.Labels() != 3 || ds.X.Indices[0] != 0 {
		t.Fatalf("read as libsvm0: %v %+v", err, ds)
	}
	path := filepath.Join(t.TempDir(), "zero.txt")
	os.WriteFile(path, []byte(text), 0o644)
	s, err := OpenStream(context.Background(), path, LibSVM0, 4, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, err := s.Next(10); err != nil || got.Len() != 2 || got.X.Indices[1] != 3 {
		t.Fatalf("streamed as libsvm0: %v %+v", err, got)
	}
}

// "-" reads the standard input, once, as a stream named for what it is;
// the process's own standard input stays open.
func TestStdin(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdin
	os.Stdin = r
	defer func() { os.Stdin = old; r.Close() }()
	go func() {
		io.WriteString(w, "2 5 3\n0,2 1:1 4:0.5\n1 0:1\n")
		w.Close()
	}()
	sets, err := Loader{Cache: CacheAuto, CacheDir: t.TempDir()}.LoadAny(Stdin)
	if err != nil || len(sets) != 1 || sets[0].Len() != 2 || sets[0].Name != "standard input" {
		t.Fatalf("LoadAny(-): %v %v", sets, err)
	}
	if _, err := r.Stat(); err != nil {
		t.Errorf("the process's standard input was closed: %v", err)
	}
	if _, _, err := (Loader{}).LoadPair(Stdin, Stdin); err == nil || !strings.Contains(err.Error(), "both the standard input") {
		t.Errorf("both sets from the standard input: %v", err)
	}
}

// A dataset folder that does not exist is said to be missing, not its
// train.txt; a file given as a folder is named as a file.
func TestMissingFolder(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nowhere")
	if _, _, err := LoadDir(missing); err == nil || !strings.Contains(err.Error(), "dataset folder "+missing+" does not exist") {
		t.Errorf("a missing folder: %v", err)
	}
	if _, err := TestFile(missing); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("TestFile of a missing folder: %v", err)
	}
	file := filepath.Join(dir, "train.txt")
	os.WriteFile(file, []byte("1 2 2\n0 1:1\n"), 0o644)
	if _, _, err := LoadDir(file); err == nil || !strings.Contains(err.Error(), "is a file, not a dataset folder") {
		t.Errorf("a file as a folder: %v", err)
	}
	if _, _, err := LoadDir(dir); err == nil || !strings.Contains(err.Error(), "neither test.txt") {
		t.Errorf("a folder without test.txt: %v", err)
	}
}

// A set none of whose points has a label is refused, by the points
// scored; a pair with one is refused by LoadPair.
func TestCheckLabelled(t *testing.T) {
	ds, err := Read(strings.NewReader("3 4 2\n 1:1\n 2:1\n1 3:1\n"), "t", XC)
	if err != nil {
		t.Fatal(err)
	}
	if err := ds.CheckLabelled(0); err != nil {
		t.Errorf("a set with a label: %v", err)
	}
	if err := ds.CheckLabelled(2); !errors.Is(err, ErrNoLabels) || !strings.Contains(err.Error(), "first 2 points (of 3)") {
		t.Errorf("the first 2 points: %v", err)
	}
	dir := t.TempDir()
	train, test := filepath.Join(dir, "train.txt"), filepath.Join(dir, "test.txt")
	os.WriteFile(train, []byte("1 4 2\n0 1:1\n"), 0o644)
	os.WriteFile(test, []byte("2 4 2\n 1:1\n 2:1\n"), 0o644)
	if _, _, err := LoadPair(train, test, Auto); !errors.Is(err, ErrNoLabels) || !strings.Contains(err.Error(), test) {
		t.Errorf("a test set without labels: %v", err)
	}
}
