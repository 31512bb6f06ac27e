package dashboard

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hetsgd/hetsgd/internal/testdata"
)

// getRuns returns the body of url's /runs.
func getRuns(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url + "runs")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// A live dashboard serves its one run once StartLive returns, takes the
// records published to it, those of a continued log's start included,
// and stops serving at Stop. A nil Live publishes nothing.
func TestLive(t *testing.T) {
	l, err := StartLive("127.0.0.1:0", "sync ×1")
	if err != nil {
		t.Fatal(err)
	}
	if got := getRuns(t, l.URL); got != `["sync ×1"]` {
		t.Fatalf("/runs: %s", got)
	}
	if err := l.PublishLog(strings.NewReader(rec(0)+"\n"+rec(1)+"\nafter the checkpoint\n"), int64(2*len(rec(0))+2)); err != nil {
		t.Fatal(err)
	}
	l.Publish([]byte(rec(2) + "\n"))
	if got, want := strings.Join(history(l.s, l.run), "|"), rec(0)+"|"+rec(1)+"|"+rec(2); got != want {
		t.Fatalf("history %s, want %s", got, want)
	}
	if err := l.PublishLog(strings.NewReader(rec(3)+"\n"), 100); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a log shorter than its checkpoint: %v", err)
	}
	l.Stop()
	if _, err := http.Get(l.URL + "runs"); err == nil {
		t.Fatal("still serving after Stop")
	}
	var none *Live
	none.Publish([]byte(rec(0) + "\n"))
}

// An address that cannot be listened on is StartLive's error, before any
// run would start.
func TestLiveBadAddress(t *testing.T) {
	if l, err := StartLive("256.0.0.1:1", "run"); err == nil || l != nil {
		t.Fatalf("StartLive on 256.0.0.1:1: %v, %v", l, err)
	}
}

// ServeLogs names each log's run by its file's name, or its path when two
// share a name, warns of a log it cannot read while it serves the others,
// and returns nil once its context is done.
func TestServeLogs(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for _, p := range []string{"a/run.jsonl", "b/run.jsonl"} {
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(`{"event":"config","strategy":"sync","devices":1}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	gone := filepath.Join(dir, "gone.jsonl")
	paths = append(paths, gone)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan string, 1)
	var mu sync.Mutex
	var warnings []string
	done := make(chan error, 1)
	go func() {
		done <- ServeLogs(ctx, "127.0.0.1:0", paths, func(url string) { ready <- url }, func(err error) {
			mu.Lock()
			defer mu.Unlock()
			warnings = append(warnings, err.Error())
		})
	}()
	url := <-ready
	want := `["` + paths[0] + `","` + paths[1] + `","gone.jsonl"]`
	if got := getRuns(t, url); got != want {
		t.Fatalf("/runs: %s, want %s", got, want)
	}
	testdata.Until(t, "the warning of the missing log", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(warnings) == 1 && strings.Contains(warnings[0], gone)
	})
	cancel()
	if err := testdata.Recv(t, done, "ServeLogs's return after its context was cancelled"); err != nil {
		t.Fatalf("cancelled: %v", err)
	}
}
