package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hetsgd/hetsgd/internal/testdata"
)

// hetsgd dashboard LOG serves the log's records, follows the file for the
// records appended to it, and returns nil soon after it is interrupted.
// The flag may follow the log.
func TestDashboardFollowsLog(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "run.jsonl")
	first := `{"event":"config","strategy":"sync","devices":2}` + "\n" + `{"event":"eval","epoch":1,"train_seconds":0.25,"p1":0.3}` + "\n"
	if err := os.WriteFile(logPath, []byte(first), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	outR, outW := io.Pipe()
	var errb bytes.Buffer
	exited := make(chan error, 1)
	go func() {
		exited <- runDashboard(ctx, []string{logPath, "--addr", "127.0.0.1:0"}, outW, &errb)
		outW.Close()
	}()
	url, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil {
		t.Fatalf("no URL on stdout: %v", err)
	}
	url = strings.TrimSpace(url)
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("URL %q", url)
	}
	go io.Copy(io.Discard, outR)

	resp, err := http.Get(url + "runs")
	if err != nil {
		t.Fatal(err)
	}
	names, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.TrimSpace(string(names)) != `["run.jsonl"]` {
		t.Fatalf("/runs: %s", names)
	}

	sctx, stop := context.WithCancel(ctx)
	defer stop()
	req, _ := http.NewRequestWithContext(sctx, "GET", url+"events", nil)
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: {\"event\""); ok {
				data <- `{"event"` + d
			}
		}
		close(data)
	}()
	next := func() string {
		t.Helper()
		select {
		case d, ok := <-data:
			if !ok {
				t.Fatal("the event stream ended")
			}
			return d
		case <-time.After(testdata.Hang):
			t.Fatalf("no record after %v", testdata.Hang)
		}
		return ""
	}
	want := strings.Split(strings.TrimSpace(first), "\n")
	for _, w := range want {
		if got := next(); got != w {
			t.Fatalf("record %q, want %q", got, w)
		}
	}
	f, err := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	done := `{"event":"done","best_p1":0.3}`
	f.WriteString(done + "\n")
	f.Close()
	if got := next(); got != done {
		t.Fatalf("appended record %q, want %q", got, done)
	}

	cancel()
	if err := testdata.Recv(t, exited, "the dashboard's return after the interrupt"); err != nil {
		t.Fatalf("interrupted: %v, want nil", err)
	}
	if errb.Len() > 0 {
		t.Fatalf("stderr: %s", errb.String())
	}
}

func TestDashboardArgs(t *testing.T) {
	ctx := context.Background()
	var out, errb bytes.Buffer
	if err := runDashboard(ctx, []string{"--help"}, &out, &errb); !errors.Is(err, flag.ErrHelp) || !strings.Contains(errb.String(), "-addr") {
		t.Fatalf("--help: %v, %q", err, errb.String())
	}
	errb.Reset()
	if err := runDashboard(ctx, nil, &out, &errb); !errors.Is(err, errUsage) || !strings.Contains(errb.String(), "give at least one LOG") {
		t.Fatalf("no log: %v, %q", err, errb.String())
	}
	missing := filepath.Join(t.TempDir(), "none.jsonl")
	if err := runDashboard(ctx, []string{missing}, &out, &errb); err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("missing log: %v", err)
	}
	// A non-loopback address is warned about (this one cannot be
	// listened on, so nothing is opened to the network).
	errb.Reset()
	log := filepath.Join(t.TempDir(), "run.jsonl")
	os.WriteFile(log, nil, 0o644)
	err := runDashboard(ctx, []string{"--addr", "0.0.0.0:99999", log}, &out, &errb)
	if err == nil || !strings.Contains(errb.String(), "warning: --addr 0.0.0.0:99999 is not a loopback address") {
		t.Fatalf("non-loopback address: %v, stderr %q", err, errb.String())
	}
	if out.Len() > 0 {
		t.Fatalf("stdout %q", out.String())
	}
}
