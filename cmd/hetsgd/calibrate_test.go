package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hetsgd/hetsgd/internal/testdata"
)

// calibrate --out --force replaces a regular file whole and leaves nothing
// beside it; it refuses, before measuring, to replace a link or a FIFO.
func TestCalibrateOut(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "precious")
	os.WriteFile(target, []byte("not a cost model"), 0o644)
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(target, link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	fifo := filepath.Join(dir, "fifo.json")
	refused := []string{link}
	if err := syscall.Mkfifo(fifo, 0o600); err == nil {
		refused = append(refused, fifo)
	}
	// With its context already done, a calibration that measured before
	// it checked --out would stop with the context's error: the refusal
	// shows that it came first.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for _, path := range refused {
		err := runCalibrate(done, []string{"--quick", "--out", path, "--force"}, new(bytes.Buffer), new(bytes.Buffer))
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("calibrate --out %s --force: %v, want a refusal before measuring", path, err)
		}
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "not a cost model" {
		t.Fatalf("the link's target was written: %q", b)
	}

	out := filepath.Join(dir, "cost.json")
	os.WriteFile(out, []byte("an earlier model"), 0o644)
	if err := runCalibrate(context.Background(), []string{"--quick", "--out", out}, new(bytes.Buffer), new(bytes.Buffer)); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("calibrate over an existing --out without --force: %v", err)
	}
	var stdout bytes.Buffer
	if err := runCalibrate(context.Background(), []string{"--quick", "--out", out, "--force"}, &stdout, new(bytes.Buffer)); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if b, _ := os.ReadFile(out); json.Unmarshal(b, &m) != nil || m["per_param"] == nil {
		t.Fatalf("--out holds %q", b)
	}
	if !strings.Contains(stdout.String(), "wrote "+out) {
		t.Fatalf("stdout %q", stdout.String())
	}
	want := []string{"cost.json", "fifo.json", "link.json", "precious"}
	if len(refused) == 1 {
		want = []string{"cost.json", "link.json", "precious"}
	}
	if got := testdata.Entries(t, dir); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("the folder holds %v, want %v", got, want)
	}
}

// An interrupted calibration stops at its next check of the context, with
// an error wrapping the context's, and writes no --out. (The checks come
// between timed runs; a calibration that did not check would end without
// an error, or hang the test until testdata.Hang.)
func TestCalibrateInterrupted(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "cost.json")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(300*time.Millisecond, cancel) // any time: it stops at the next check
	ended := make(chan error, 1)
	go func() { ended <- runCalibrate(ctx, []string{"--out", out}, new(bytes.Buffer), new(bytes.Buffer)) }()
	err := testdata.Recv(t, ended, "the interrupted calibration's end")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted calibration: %v, want an error wrapping context.Canceled", err)
	}
	if got := testdata.Entries(t, dir); len(got) != 0 {
		t.Fatalf("an interrupted calibration left %v", got)
	}
}
