package dashboard

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hetsgd/hetsgd/internal/testdata"
)

// following starts Follow on path as run 0 of a new server, polling every
// few milliseconds, and returns the server, the warnings so far, and a
// function that waits until the loop has made n more polls.
func following(t *testing.T, path string) (s *Server, warnings func() []string, polls func(n int)) {
	t.Helper()
	s = New()
	run := s.AddRun(filepath.Base(path))
	var mu sync.Mutex
	var warned []string
	var polled atomic.Int64
	afterPoll = func(int) { polled.Add(1) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- s.Follow(ctx, run, path, 5*time.Millisecond, func(err error) {
			mu.Lock()
			warned = append(warned, err.Error())
			mu.Unlock()
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Follow: %v", err)
		}
		afterPoll = nil
	})
	warnings = func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), warned...)
	}
	polls = func(n int) {
		t.Helper()
		want := polled.Load() + int64(n)
		testdata.Until(t, fmt.Sprintf("%d more polls", n), func() bool { return polled.Load() >= want })
	}
	return s, warnings, polls
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
	deadline := time.Now().Add(testdata.Hang)
	for {
		got := history(s, 0)
		if strings.Join(got, "\n") == strings.Join(want, "\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("history after %v:\n%s\nwant:\n%s", testdata.Hang, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// head is a run log's first record, which Follow requires.
const head = `{"event":"config","schema":1}`

// Records appended to a followed file are published as their lines end;
// half a record waits for its other half.
func TestFollowAppendedAndPartialLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	appendTo(t, path, head+"\n"+rec(0)+"\n"+rec(1)+"\n"+rec(2)[:10])
	s, warnings, polls := following(t, path)
	waitHistory(t, s, head, rec(0), rec(1))
	polls(3) // each of which sees the half record
	if got, want := strings.Join(history(s, 0), "\n"), strings.Join([]string{head, rec(0), rec(1)}, "\n"); got != want {
		t.Fatalf("with half a record written, the history:\n%s\nwant:\n%s", got, want)
	}
	appendTo(t, path, rec(2)[10:])
	// A whole object is taken before its line break comes…
	waitHistory(t, s, head, rec(0), rec(1), rec(2))
	// …which then ends its line, not a blank record.
	appendTo(t, path, "\n"+rec(3)+"\n")
	waitHistory(t, s, head, rec(0), rec(1), rec(2), rec(3))
	if w := warnings(); len(w) > 0 {
		t.Fatalf("warnings: %q", w)
	}
}

// A line that is not a JSON object is skipped; the first is reported, by
// file and line, and no other: a file of many such lines prints one.
func TestFollowSkipsBadLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	appendTo(t, path, head+"\n"+rec(0)+"\nnot json\n\n[1,2]\n"+rec(1)+"\n")
	s, warnings, polls := following(t, path)
	waitHistory(t, s, head, rec(0), rec(1))
	appendTo(t, path, rec(2)+"\n"+strings.Repeat("junk\n", 1000))
	waitHistory(t, s, head, rec(0), rec(1), rec(2))
	polls(3) // the poll that took rec(2) has ended, and two more read on
	w := warnings()
	if len(w) != 1 || !strings.HasPrefix(w[0], "dashboard: "+path+":3: not a JSON object") {
		t.Fatalf("warnings %q, want line 3's alone", w)
	}
}

// A file that does not start with a config record, or holds a line longer
// than any record (no line break in gigabytes), is not a run log: Follow
// says so once and stops following it, its memory bounded.
func TestFollowRefusesOtherFiles(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.txt")
	appendTo(t, text, "line one\nline two\n")
	s := New()
	if err := s.Follow(context.Background(), s.AddRun("notes"), text, time.Millisecond, nil); err == nil || !strings.Contains(err.Error(), "notes.txt:1: not a run log") {
		t.Fatalf("a text file: %v", err)
	}
	long := filepath.Join(dir, "long.jsonl")
	f, err := os.Create(long)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(head + "\n")
	f.Truncate(int64(len(head)+1) + 40<<20) // 40 MB of zero bytes, no line break
	f.Close()
	if err := s.Follow(context.Background(), s.AddRun("long"), long, time.Millisecond, nil); err == nil || !strings.Contains(err.Error(), "long.jsonl:2: a line longer than 16 MiB") {
		t.Fatalf("a file without line breaks: %v", err)
	}
}

// A log cut back and written on (a resumed run) becomes the run's new
// history, even when it has grown past its old size by the next poll.
func TestFollowCutBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	appendTo(t, path, head+"\n"+rec(0)+"\n"+rec(1)+"\n"+rec(2)+"\n")
	s, warnings, _ := following(t, path)
	waitHistory(t, s, head, rec(0), rec(1), rec(2))

	resumed := `{"event":"resume","samples":100,"train_seconds":1.5}`
	if err := os.WriteFile(path, []byte(head+"\n"+rec(0)+"\n"+resumed+"\n"+rec(3)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitHistory(t, s, head, rec(0), resumed, rec(3))

	if err := os.Truncate(path, int64(len(head)+len(rec(0))+2)); err != nil {
		t.Fatal(err)
	}
	waitHistory(t, s, head, rec(0))

	// Replaced by another file of the same name.
	other := path + ".new"
	appendTo(t, other, head+"\n"+rec(5)+"\n")
	if err := os.Rename(other, path); err != nil {
		t.Fatal(err)
	}
	waitHistory(t, s, head, rec(5))
	if w := warnings(); len(w) > 0 {
		t.Fatalf("warnings: %q", w)
	}
}

// A file that goes away is reported once and followed again when back.
func TestFollowFileGoneAndBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	appendTo(t, path, head+"\n"+rec(0)+"\n")
	s, warnings, polls := following(t, path)
	waitHistory(t, s, head, rec(0))
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	testdata.Until(t, "the warning", func() bool { return len(warnings()) > 0 })
	polls(3) // each of which finds the file gone

	if w := warnings(); len(w) != 1 || !strings.Contains(w[0], path) {
		t.Fatalf("warnings %q, want one naming the file", w)
	}
	appendTo(t, path, head+"\n"+rec(1)+"\n")
	waitHistory(t, s, head, rec(1))
}

func TestFollowMissingFile(t *testing.T) {
	s := New()
	path := filepath.Join(t.TempDir(), "none.jsonl")
	err := s.Follow(context.Background(), s.AddRun("none"), path, time.Millisecond, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "dashboard: ") || !strings.Contains(err.Error(), path) {
		t.Fatalf("Follow of a missing file: %v", err)
	}
}

// A log rewritten while a poll is reading it — the poll has taken a line of
// the old file and reads on into the new one — is read again from its
// start: the history never mixes the two files (a poll that read past the
// rewrite would otherwise leave a fragment of the new file as its last
// line, in place, and the old history for good).
func TestFollowRewrittenDuringAPoll(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	appendTo(t, path, head+"\n"+rec(0)+"\n")
	s := New()
	run := s.AddRun("run")
	f := &follower{s: s, run: run, path: path, warn: func(err error) { t.Errorf("warning: %v", err) }}
	defer f.close()
	if err := f.poll(); err != nil {
		t.Fatal(err)
	}
	appendTo(t, path, rec(1)+"\n"+rec(2)+"\n")
	resumed := `{"event":"resume","samples":100,"train_seconds":1.5}`
	rewrite := true
	f.onLine = func() {
		// After rec(1) is taken, the resumed run cuts the log back and
		// writes its own records, longer than the rest of the old file.
		if rewrite {
			rewrite = false
			if err := os.WriteFile(path, []byte(head+"\n"+rec(0)+"\n"+resumed+"\n"+rec(3)+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range 3 {
		if err := f.poll(); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := strings.Join(history(s, run), "\n"), strings.Join([]string{head, rec(0), resumed, rec(3)}, "\n"); got != want {
		t.Fatalf("history:\n%s\nwant:\n%s", got, want)
	}
}
