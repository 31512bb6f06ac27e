//go:build unix && !solaris && !aix

package data

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fifo makes a named pipe in dir and feeds it content from a goroutine:
// one writer, once, as a shell's pipe or process substitution would. A
// second open by the reader would wait for a writer that never comes.
// hold, when not nil, keeps the pipe open after the content until closed.
// (This file is built where package syscall has Mkfifo: not on Solaris,
// illumos or AIX.)
func fifo(t *testing.T, dir, name, content string, hold <-chan struct{}) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	go func() {
		w, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer w.Close()
		w.WriteString(content)
		if hold != nil {
			<-hold
		}
	}()
	return path
}

// within runs f and fails the test if it has not returned in a minute: a
// load that opens a FIFO twice hangs, and the test must fail, not hang.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("%s: still loading after a minute (a second open of a FIFO, or a read not stopped?)", what)
	}
}

// A pair read from FIFOs is read once each, as streams: detected, checked
// and never cached.
func TestLoadPairFromFIFOs(t *testing.T) {
	dir := t.TempDir()
	cacheDir := filepath.Join(dir, "cache")
	l := Loader{Cache: CacheAuto, CacheDir: cacheDir}
	train := fifo(t, dir, "train", "2 5 3\n0,2 1:1 4:0.5\n1 0:1\n", nil)
	test := fifo(t, dir, "test", "1 5 3\n1 2:1\n", nil)
	var tr, te *Dataset
	var err error
	within(t, "XC pair", func() { tr, te, err = l.LoadPair(train, test) })
	if err != nil {
		t.Fatal(err)
	}
	if tr.Len() != 2 || te.Len() != 1 || tr.Features() != 5 || te.Labels() != 3 || tr.Y.NNZ() != 3 {
		t.Fatalf("train %d×%d×%d, test %d×%d×%d", tr.Len(), tr.Features(), tr.Labels(), te.Len(), te.Features(), te.Labels())
	}
	if _, err := os.Stat(cacheDir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a cache for a FIFO: %v", err)
	}

	// The check of the pair's dimensions is made on what was read: an XC
	// pair that disagrees is an error, not widened as libSVM would be.
	train = fifo(t, dir, "train2", "1 5 3\n0 1:1\n", nil)
	test = fifo(t, dir, "test2", "1 6 3\n0 1:1\n", nil)
	within(t, "mismatched XC pair", func() { _, _, err = l.LoadPair(train, test) })
	if err == nil || !strings.Contains(err.Error(), "must share") {
		t.Fatalf("mismatched XC pair from FIFOs: %v", err)
	}
	// libSVM from FIFOs is widened.
	train = fifo(t, dir, "train3", "0 1:1\n", nil)
	test = fifo(t, dir, "test3", "2 3:1\n", nil)
	within(t, "libSVM pair", func() { tr, te, err = l.LoadPair(train, test) })
	if err != nil || tr.Features() != 3 || tr.Labels() != 3 {
		t.Fatalf("libSVM pair from FIFOs: %v", err)
	}
}

// A load waiting on a pipe that stays open and silent returns when its
// context is cancelled.
func TestLoadFIFOCancelled(t *testing.T) {
	dir := t.TempDir()
	hold := make(chan struct{})
	defer close(hold)
	path := fifo(t, dir, "slow", "3 5 3\n0 1:1\n", hold)
	ctx, cancel := context.WithCancel(context.Background())
	var err error
	within(t, "cancelled FIFO", func() {
		time.AfterFunc(50*time.Millisecond, cancel) // any time: before, or during the blocked read
		_, err = Loader{Context: ctx}.Load(path)
	})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), path) {
		t.Fatalf("%v, want a stop naming %s", err, path)
	}
}
