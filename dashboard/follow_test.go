package dashboard

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// following starts Follow on path as run 0 of a new server, polling every
// few milliseconds, and returns the server and the warnings so far.
func following(t *testing.T, path string) (*Server, func() []string) {
	t.Helper()
	s := New()
	run := s.AddRun(filepath.Base(path))
	var mu sync.Mutex
	var warnings []string
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- s.Follow(ctx, run, path, 5*time.Millisecond, func(err error) {
			mu.Lock()
			warnings = append(warnings, err.Error())
			mu.Unlock()
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Follow: %v", err)
		}
	})
	return s, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), warnings...)
	}
}

func appendTo(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// waitHistory waits until run 0 holds exactly want.
func waitHistory(t *testing.T, s *Server, want ...string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := history(s, 0)
		if strings.Join(got, "\n") == strings.Join(want, "\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("history:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// settle lets several polls pass.
func settle() { time.Sleep(60 * time.Millisecond) }

// Records appended to a followed file are published as their lines end;
// half a record waits for its other half.
func TestFollowAppendedAndPartialLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	appendTo(t, path, rec(0)+"\n"+rec(1)+"\n"+rec(2)[:10])
	s, warnings := following(t, path)
	waitHistory(t, s, rec(0), rec(1))
	settle()
	waitHistory(t, s, rec(0), rec(1))
	appendTo(t, path, rec(2)[10:])
	// A whole object is taken before its line break comes…
	waitHistory(t, s, rec(0), rec(1), rec(2))
	// …which then ends its line, not a blank record.
	appendTo(t, path, "\n"+rec(3)+"\n")
	waitHistory(t, s, rec(0), rec(1), rec(2), rec(3))
	if w := warnings(); len(w) > 0 {
		t.Fatalf("warnings: %q", w)
	}
}

// A line that is not a JSON object is skipped and reported once, by file
// and line.
func TestFollowSkipsBadLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	appendTo(t, path, rec(0)+"\nnot json\n\n[1,2]\n"+rec(1)+"\n")
	s, warnings := following(t, path)
	waitHistory(t, s, rec(0), rec(1))
	appendTo(t, path, rec(2)+"\n")
	waitHistory(t, s, rec(0), rec(1), rec(2))
	w := warnings()
	if len(w) != 2 || !strings.HasPrefix(w[0], "dashboard: "+path+":2: not a JSON object") || !strings.HasPrefix(w[1], "dashboard: "+path+":4: not a JSON object") {
		t.Fatalf("warnings %q, want lines 2 and 4 once each", w)
	}
}

// A log cut back and written on (a resumed run) becomes the run's new
// history, even when it has grown past its old size by the next poll.
func TestFollowCutBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	appendTo(t, path, rec(0)+"\n"+rec(1)+"\n"+rec(2)+"\n")
	s, warnings := following(t, path)
	waitHistory(t, s, rec(0), rec(1), rec(2))

	resumed := `{"event":"resume","samples":100,"train_seconds":1.5}`
	if err := os.WriteFile(path, []byte(rec(0)+"\n"+resumed+"\n"+rec(3)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitHistory(t, s, rec(0), resumed, rec(3))

	if err := os.Truncate(path, int64(len(rec(0))+1)); err != nil {
		t.Fatal(err)
	}
	waitHistory(t, s, rec(0))

	// Replaced by another file of the same name.
	other := path + ".new"
	appendTo(t, other, rec(5)+"\n")
	if err := os.Rename(other, path); err != nil {
		t.Fatal(err)
	}
	waitHistory(t, s, rec(5))
	if w := warnings(); len(w) > 0 {
		t.Fatalf("warnings: %q", w)
	}
}

// A file that goes away is reported once and followed again when back.
func TestFollowFileGoneAndBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	appendTo(t, path, rec(0)+"\n")
	s, warnings := following(t, path)
	waitHistory(t, s, rec(0))
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the warning", func() bool { return len(warnings()) > 0 })
	settle()
	if w := warnings(); len(w) != 1 || !strings.Contains(w[0], path) {
		t.Fatalf("warnings %q, want one naming the file", w)
	}
	appendTo(t, path, rec(1)+"\n")
	waitHistory(t, s, rec(1))
}

func TestFollowMissingFile(t *testing.T) {
	s := New()
	path := filepath.Join(t.TempDir(), "none.jsonl")
	err := s.Follow(context.Background(), s.AddRun("none"), path, time.Millisecond, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "dashboard: ") || !strings.Contains(err.Error(), path) {
		t.Fatalf("Follow of a missing file: %v", err)
	}
}
