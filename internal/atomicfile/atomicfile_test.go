package atomicfile

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestCommitAndAbort(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.txt")
	if err := WriteFile(path, []byte("one"), false); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("two"), false); !errors.Is(err, ErrExist) {
		t.Fatalf("second write without overwrite: %v, want ErrExist", err)
	}
	f, err := Create(path, true)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("half of thr"))
	if got := read(t, path); got != "one" {
		t.Fatalf("target changed before commit: %q", got)
	}
	f.Abort()
	if got := read(t, path); got != "one" {
		t.Fatalf("target changed by abort: %q", got)
	}
	if err := WriteFile(path, []byte("three"), true); err != nil {
		t.Fatal(err)
	}
	if got := read(t, path); got != "three" {
		t.Fatalf("after overwrite: %q", got)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("leftovers beside the target: %v", entries)
	}
}

func TestRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	os.WriteFile(target, []byte("keep"), 0o644)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Skip(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip(err)
	}
	for path, want := range map[string]string{link: "symbolic link", fifo: "FIFO", dir: "folder", "/dev/null": "device"} {
		err := WriteFile(path, []byte("x"), true)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
			t.Errorf("WriteFile(%s): %v, want an error naming it and %q", path, err, want)
		}
	}
	if got := read(t, target); got != "keep" {
		t.Fatalf("link target written: %q", got)
	}
}

func TestRemoveStale(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cache.bin")
	// The id of a process that has ended.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip(err)
	}
	dead := filepath.Join(dir, tempPrefix("cache.bin")+strconv.Itoa(cmd.Process.Pid)+".123.tmp")
	mine := filepath.Join(dir, tempPrefix("cache.bin")+strconv.Itoa(os.Getpid())+".456.tmp")
	other := filepath.Join(dir, tempPrefix("other.bin")+strconv.Itoa(cmd.Process.Pid)+".789.tmp")
	for _, p := range []string{dead, mine, other} {
		os.WriteFile(p, []byte("x"), 0o644)
	}
	f, err := Create(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Abort()
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("a dead writer's temporary file survived: %v", err)
	}
	for _, p := range []string{mine, other} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s removed: %v", filepath.Base(p), err)
		}
	}
}

func TestDistinct(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "train.txt")
	os.WriteFile(in, []byte("data"), 0o644)
	hard := filepath.Join(dir, "hard")
	os.Link(in, hard)
	soft := filepath.Join(dir, "soft")
	os.Symlink(in, soft)
	for _, out := range []string{in, hard, soft, filepath.Join(dir, ".", "train.txt")} {
		if err := Distinct(out, "", in); err == nil || !strings.Contains(err.Error(), "input") {
			t.Errorf("Distinct(%s, %s) = %v, want an error", out, in, err)
		}
	}
	if err := Distinct(filepath.Join(dir, "log.jsonl"), in); err != nil {
		t.Errorf("a new output: %v", err)
	}
}

// WriteWith puts the file in place once written whole; a write that fails,
// or one stopped by its context, leaves the target as it was and nothing
// beside it.
func TestWriteWith(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.txt")
	write := func(s string) func(io.Writer) error {
		return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
	}
	if err := WriteWith(context.Background(), path, false, write("one")); err != nil || read(t, path) != "one" {
		t.Fatalf("a whole write: %v", err)
	}
	boom := errors.New("boom")
	if err := WriteWith(context.Background(), path, true, func(w io.Writer) error { io.WriteString(w, "tw"); return boom }); !errors.Is(err, boom) {
		t.Fatalf("a failed write: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	big := strings.Repeat("x", 4<<20) // past the buffer: written while stopped
	if err := WriteWith(ctx, path, true, write(big)); !errors.Is(err, context.Canceled) {
		t.Fatalf("a stopped write: %v", err)
	}
	if got := read(t, path); got != "one" {
		t.Fatalf("the target now holds %q", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("left beside the target: %v", entries)
	}
	if err := WriteWith(context.Background(), path, false, write("two")); !errors.Is(err, ErrExist) {
		t.Fatalf("over an existing file without overwrite: %v", err)
	}
}
