package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hetsgd/hetsgd/internal/testdata"
	"github.com/hetsgd/hetsgd/runlog"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The bar: train --dashboard serves the page and streams the log's records
// while the run goes on. The run has no end but Ctrl-C; the test stops it
// once two evaluations came through /events, so they came while it
// trained, and every record streamed is the log's line, byte for byte.
func TestTrainDashboardStreams(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "run.jsonl")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	exited := make(chan int, 1)
	go func() {
		exited <- run(ctx, []string{"train", "--epochs", "0", "--time-budget", "600", "--eval-every", "0.2", "--eval-points", "200",
			"--hidden", "16", "--dashboard", "127.0.0.1:0", "--log", logPath, "--progress", "off"}, &out, &errb)
	}()
	urlRE := regexp.MustCompile(`dashboard at (http://\S+/)`)
	var url string
	for deadline := time.Now().Add(testdata.Hang); url == ""; time.Sleep(20 * time.Millisecond) {
		if m := urlRE.FindStringSubmatch(out.String()); m != nil {
			url = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no dashboard address after %v; stdout %q, stderr %q", testdata.Hang, out.String(), errb.String())
		}
	}
	page, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(page.Body)
	page.Body.Close()
	if page.StatusCode != 200 || !bytes.Contains(body, []byte("<html")) || page.Header.Get("Content-Security-Policy") == "" {
		t.Fatalf("GET /: %s, CSP %q, %d bytes", page.Status, page.Header.Get("Content-Security-Policy"), len(body))
	}

	resp, err := http.Get(url + "events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("/events: content type %q", ct)
	}
	var streamed []string
	evals := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	id := ""
	for evals < 2 && sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			id = line[4:]
		case strings.HasPrefix(line, "data: ") && strings.HasPrefix(id, "0:"):
			streamed = append(streamed, line[6:])
			if strings.Contains(line, `"event":"eval"`) {
				evals++
			}
		case line == "":
			id = ""
		}
	}
	if evals < 2 {
		t.Fatalf("the stream ended after %d records: %v", len(streamed), sc.Err())
	}
	cancel() // Ctrl-C
	testdata.Recv(t, exited, "train's end after Ctrl-C")
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for i, s := range streamed {
		if i >= len(lines) || lines[i] != s {
			t.Fatalf("streamed record %d differs from the log's line:\n%s\n%s", i, s, lines[min(i, len(lines)-1)])
		}
	}
	run, err := runlog.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if run.Done == nil || !run.Done.Interrupted {
		t.Fatalf("the run was not going on when its evaluations were streamed: done %+v", run.Done)
	}
}

// A dashboard address that cannot be listened on fails before the run.
func TestTrainDashboardBadAddress(t *testing.T) {
	code, out, errs := runCLI(t, "train", "--dashboard", "256.0.0.1:1", "--epochs", "0.1")
	if code != 1 || !strings.Contains(errs, "--dashboard 256.0.0.1:1") || strings.Contains(out, "epoch") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}
