package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Neither a symbolic link nor a second name of a file is written through,
// whether the file is opened or created; a plain file is, and a new one is
// made.
func TestInPlaceRefusesLinks(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("links need privileges there")
	}
	dir := t.TempDir()
	mine := filepath.Join(dir, "mine.txt")
	os.WriteFile(mine, []byte("keep"), 0o644)
	sym := filepath.Join(dir, "sym")
	os.Symlink(mine, sym)
	dangling := filepath.Join(dir, "dangling")
	os.Symlink(filepath.Join(dir, "nowhere"), dangling)
	hard := filepath.Join(dir, "hard")
	if err := os.Link(mine, hard); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{sym, hard} {
		if f, err := OpenInPlace(p, os.O_WRONLY); !errors.Is(err, ErrLink) {
			f.Close()
			t.Errorf("OpenInPlace(%s): %v, want ErrLink", p, err)
		}
	}
	for _, p := range []string{sym, hard, dangling} {
		if f, _, err := CreateInPlace(p, os.O_RDWR, 0o644); !errors.Is(err, ErrLink) {
			f.Close()
			t.Errorf("CreateInPlace(%s): %v, want ErrLink", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "nowhere")); err == nil {
		t.Error("a dangling link's target was created")
	}
	if f, err := OpenInPlace(dir, os.O_RDONLY); err == nil {
		f.Close()
		t.Error("a folder opened to be written in place")
	}
	if got := read(t, mine); got != "keep" {
		t.Fatalf("the linked file now holds %q", got)
	}

	os.Remove(hard)
	f, created, err := CreateInPlace(mine, os.O_WRONLY, 0o644)
	if err != nil || created {
		t.Fatalf("CreateInPlace of a plain file: %v, created %v", err, created)
	}
	f.Close()
	f, created, err = CreateInPlace(filepath.Join(dir, "new"), os.O_WRONLY, 0o644)
	if err != nil || !created {
		t.Fatalf("CreateInPlace of a new file: %v, created %v", err, created)
	}
	f.Close()
}
