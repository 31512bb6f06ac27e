package runlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var errFull = errors.New("no space left on device")

// fullWriter takes room more bytes, then fails as a full disk does: after
// writing what fits.
type fullWriter struct {
	buf  bytes.Buffer
	room int
}

func (w *fullWriter) Write(p []byte) (int, error) {
	if len(p) <= w.room {
		w.room -= len(p)
		return w.buf.Write(p)
	}
	n, _ := w.buf.Write(p[:w.room])
	w.room = 0
	return n, errFull
}

func (w *fullWriter) cut(n int64) error {
	w.buf.Truncate(int(n))
	return nil
}

// wholeRecords fails the test unless b is whole JSON lines, and returns
// their "event" fields.
func wholeRecords(t *testing.T, b []byte) []string {
	t.Helper()
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Fatalf("the log ends with part of a record: %q", b)
	}
	var events []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var rec struct{ Event string }
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		events = append(events, rec.Event)
	}
	return events
}

func record(i int) map[string]any {
	return map[string]any{"event": fmt.Sprint("e", i), "pad": strings.Repeat("x", 40)}
}

// A write that runs out of space part-way is cut back to the last whole
// record and returns its error; the records before it stay, and once there
// is room again the log goes on.
func TestLogFullDiskCutsBack(t *testing.T) {
	w := &fullWriter{room: 1 << 20}
	l := newLog("run.jsonl", w, w.cut)
	for i := range 2 {
		if err := l.Write(record(i)); err != nil {
			t.Fatal(err)
		}
	}
	w.room = 30 // part of the next record
	err := l.Write(record(2))
	if !errors.Is(err, errFull) || !strings.Contains(err.Error(), "run.jsonl") {
		t.Fatalf("write on a full disk: %v, want the disk's error naming the log", err)
	}
	if got := wholeRecords(t, w.buf.Bytes()); strings.Join(got, ",") != "e0,e1" {
		t.Fatalf("after a failed write the log holds %v, want e0,e1", got)
	}
	w.room = 1 << 20
	if err := l.Write(record(3)); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got := wholeRecords(t, w.buf.Bytes()); strings.Join(got, ",") != "e0,e1,e3" {
		t.Fatalf("the log holds %v, want e0,e1,e3", got)
	}
}

// Where a partial record cannot be cut back (a pipe), the error is returned
// and no later record is glued to it.
func TestLogPartialRecordOnStream(t *testing.T) {
	w := &fullWriter{room: 1 << 20}
	l := NewLog(w)
	if err := l.Write(record(0)); err != nil {
		t.Fatal(err)
	}
	w.room = 10
	if err := l.Write(record(1)); !errors.Is(err, errFull) {
		t.Fatalf("write on a full stream: %v", err)
	}
	w.room = 1 << 20
	before := w.buf.Len()
	if err := l.Write(record(2)); !errors.Is(err, errFull) || !strings.Contains(err.Error(), "part of a record") {
		t.Fatalf("write after a partial record: %v, want the first error again", err)
	}
	if w.buf.Len() != before {
		t.Fatalf("a record was appended to a partial one: %q", w.buf.Bytes())
	}
}

// Each record reaches the output in one write, so that another process
// writing to the same pipe cannot split it.
func TestLogOneWritePerRecord(t *testing.T) {
	var c countingWriter
	l := NewLog(&c)
	for i := range 3 {
		if err := l.Write(record(i)); err != nil {
			t.Fatal(err)
		}
	}
	if c.writes != 3 {
		t.Fatalf("3 records in %d writes", c.writes)
	}
}

type countingWriter struct{ writes int }

func (c *countingWriter) Write(p []byte) (int, error) { c.writes++; return len(p), nil }

// A record that cannot be encoded is an error and writes nothing.
func TestLogBadRecord(t *testing.T) {
	var buf bytes.Buffer
	l := NewLog(&buf)
	if err := l.Write(map[string]any{"event": "x", "bad": func() {}}); err == nil || buf.Len() != 0 {
		t.Fatalf("unencodable record: %v, wrote %q", err, buf.Bytes())
	}
}

// Close syncs a log file, and a failed sync is Close's error.
func TestLogCloseSyncs(t *testing.T) {
	l, err := CreateLog(filepath.Join(t.TempDir(), "run.jsonl"), false)
	if err != nil {
		t.Fatal(err)
	}
	if l.sync == nil {
		t.Fatal("a log file is not synced at Close")
	}
	syncs, fileSync := 0, l.sync
	l.sync = func() error { syncs++; fileSync(); return errFull }
	if err := l.Write(record(0)); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); !errors.Is(err, errFull) || syncs != 1 {
		t.Fatalf("Close: %v after %d syncs, want the sync's error after 1", err, syncs)
	}
	if err := l.Write(record(1)); err == nil {
		t.Fatal("wrote to a closed log")
	}
}

// Overwriting a log file empties it first; a folder or a symbolic link is
// refused, named, and left as it was.
func TestCreateLogTargets(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "old.jsonl")
	os.WriteFile(old, []byte("an earlier run's log, longer than the new one\n"), 0o644)
	logOne(t, old, true)
	if b, _ := os.ReadFile(old); string(b) != "{\"event\":\"x\"}\n" {
		t.Fatalf("overwritten log holds %q", b)
	}

	link := filepath.Join(dir, "link.jsonl")
	if err := os.Symlink(old, link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	folder := filepath.Join(dir, "folder")
	os.Mkdir(folder, 0o755)
	for _, c := range []struct{ path, kind string }{{link, "symbolic link"}, {folder, "folder"}} {
		for _, overwrite := range []bool{false, true} {
			_, err := CreateLog(c.path, overwrite)
			if err == nil || !strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), c.kind) {
				t.Errorf("CreateLog(%s, %v): %v, want an error naming the %s", c.path, overwrite, err, c.kind)
			}
		}
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v %v", fi.Mode(), err)
	}
	if b, _ := os.ReadFile(old); string(b) != "{\"event\":\"x\"}\n" {
		t.Fatalf("the link's target was written: %q", b)
	}
}

// A log is written in place, so a second name of a file (a hard link) is
// refused, with --force or in a resumed run's AppendLog, and the file is
// left whole; a log that got no record when it is closed (its run failed
// before its first) is removed, so that the next run needs no --force.
func TestLogNeverWritesThroughLinks(t *testing.T) {
	dir := t.TempDir()
	mine := filepath.Join(dir, "mine.txt")
	data := []byte("the user's file, longer than a record\n")
	os.WriteFile(mine, data, 0o644)
	hard := filepath.Join(dir, "run.jsonl")
	if err := os.Link(mine, hard); err != nil {
		t.Skip("no hard links here:", err)
	}
	if _, err := CreateLog(hard, true); err == nil || !strings.Contains(err.Error(), "has 2 names") {
		t.Errorf("CreateLog over a hard link with overwrite: %v", err)
	}
	if _, err := AppendLog(hard, Position{Offset: 3}); err == nil || !strings.Contains(err.Error(), "has 2 names") {
		t.Errorf("AppendLog of a hard link: %v", err)
	}
	sym := filepath.Join(dir, "sym.jsonl")
	os.Symlink(mine, sym)
	if _, err := AppendLog(sym, Position{Offset: 3}); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("AppendLog of a symbolic link: %v", err)
	}
	if b, _ := os.ReadFile(mine); !bytes.Equal(b, data) {
		t.Fatalf("the linked file now holds %q", b)
	}

	for _, overwrite := range []bool{false, true} {
		empty := filepath.Join(dir, "empty.jsonl")
		if overwrite {
			os.WriteFile(empty, []byte("an earlier log\n"), 0o644)
		}
		l, err := CreateLog(empty, overwrite)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(empty); err == nil {
			t.Errorf("a log closed without a record was left (overwrite %v)", overwrite)
		}
	}
	kept := filepath.Join(dir, "kept.jsonl")
	l, err := CreateLog(kept, false)
	if err != nil {
		t.Fatal(err)
	}
	l.Write(record(1))
	l.Close()
	if _, err := os.Stat(kept); err != nil {
		t.Errorf("a log with a record was removed: %v", err)
	}
}

// A log path that is one of the run's inputs is refused, whatever the name
// it is reached by, and the input is left whole.
func TestCreateLogRefusesInput(t *testing.T) {
	dir := t.TempDir()
	train := filepath.Join(dir, "train.txt")
	data := []byte("3 2 2\n0 0:1\n1 1:1\n")
	os.WriteFile(train, data, 0o644)
	names := []string{train, filepath.Join(dir, ".", "train.txt")}
	if err := os.Link(train, filepath.Join(dir, "hard.txt")); err == nil {
		names = append(names, filepath.Join(dir, "hard.txt"))
	}
	for _, name := range names {
		_, err := CreateLog(name, true, "", train)
		if err == nil || !strings.Contains(err.Error(), "input") {
			t.Errorf("CreateLog(%s) over the input %s: %v, want a refusal", name, train, err)
		}
	}
	if b, _ := os.ReadFile(train); !bytes.Equal(b, data) {
		t.Fatalf("the input was changed: %q", b)
	}
	l, err := CreateLog(filepath.Join(dir, "run.jsonl"), false, train)
	if err != nil {
		t.Fatalf("a log beside the input: %v", err)
	}
	l.Close()
}

// A pipe named as a standard stream (/dev/fd/N, as a shell's process
// substitution names it) is written to; a regular file reached that way is
// appended to, never truncated.
func TestCreateLogStream(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	path := fmt.Sprintf("/dev/fd/%d", w.Fd())
	if _, err := os.Lstat(path); err != nil {
		t.Skip("no /dev/fd here")
	}
	l, err := CreateLog(path, false)
	if err != nil {
		t.Fatal(err)
	}
	if l.cut != nil {
		t.Fatal("a pipe would be truncated on a failed write")
	}
	if err := l.Write(map[string]any{"event": "piped"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if b, _ := io.ReadAll(r); string(b) != "{\"event\":\"piped\"}\n" {
		t.Fatalf("read %q from the pipe", b)
	}

	f, err := os.Create(filepath.Join(t.TempDir(), "stdout.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString("earlier output\n")
	logOne(t, fmt.Sprintf("/dev/fd/%d", f.Fd()), true)
	if b, _ := os.ReadFile(f.Name()); string(b) != "earlier output\n{\"event\":\"x\"}\n" {
		t.Fatalf("a redirected standard stream holds %q", b)
	}
}

// logOne creates the log at path, writes the record {"event":"x"} and
// closes it.
func logOne(t *testing.T, path string, overwrite bool) {
	t.Helper()
	l, err := CreateLog(path, overwrite)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Write(map[string]any{"event": "x"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// A resumed run's log continues from the checkpoint's position; the records
// written after it are kept beside the log, not lost, even when a run is
// resumed twice from one checkpoint; a log whose bytes before the position
// are not those counted is refused and left as it is.
func TestAppendLogContinuesFromOffset(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	l, err := CreateLog(path, false)
	if err != nil {
		t.Fatal(err)
	}
	rec := func(i int) map[string]any { return map[string]any{"event": "eval", "i": i} }
	l.Write(rec(1))
	l.Write(rec(2))
	at := l.Position()
	l.Write(rec(3))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	a, err := AppendLog(path, at)
	if err != nil {
		t.Fatal(err)
	}
	if a.Position() != at {
		t.Fatalf("position %+v, want %+v", a.Position(), at)
	}
	a.Write(map[string]any{"event": "resume"})
	a.Write(rec(3))
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	want := string(before[:at.Offset]) + `{"event":"resume"}` + "\n" + `{"event":"eval","i":3}` + "\n"
	if string(got) != want {
		t.Fatalf("log:\n%s\nwant\n%s", got, want)
	}
	cut := fmt.Sprintf("%s.cut-%d", path, at.Offset)
	tail, err := os.ReadFile(cut)
	if err != nil || string(tail) != string(before[at.Offset:]) {
		t.Fatalf("the records after the checkpoint: %q, %v; want %q", tail, err, before[at.Offset:])
	}
	// Resumed again from the same checkpoint: the second run's records
	// join the first's beside the log.
	a, err = AppendLog(path, at)
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	if tail2, err := os.ReadFile(cut + ".1"); err != nil || string(tail2) != string(got[at.Offset:]) {
		t.Fatalf("the second run's records after the checkpoint: %q, %v", tail2, err)
	}
	if kept, _ := os.ReadFile(cut); string(kept) != string(tail) {
		t.Fatalf("the first run's records were replaced: %q", kept)
	}
	long := at
	long.Offset = int64(len(got)) + 10
	if _, err := AppendLog(path, long); err == nil || !strings.Contains(err.Error(), "fewer than") {
		t.Fatalf("a log shorter than the checkpoint's offset: %v", err)
	}
	other := at
	other.CRC++
	now, _ := os.ReadFile(path)
	if _, err := AppendLog(path, other); err == nil || !strings.Contains(err.Error(), "does not hold the records the checkpoint counted") {
		t.Fatalf("a log whose bytes differ: %v", err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(now) {
		t.Fatal("a refused log was changed")
	}
	if _, err := AppendLog(filepath.Join(t.TempDir(), "none.jsonl"), Position{}); err == nil {
		t.Fatal("a missing log: no error")
	}
}

// Also sees every record as it reached the output, and none that failed.
func TestLogAlso(t *testing.T) {
	w := &fullWriter{room: 30}
	l := NewLog(w)
	var seen []string
	l.Also(func(line []byte) { seen = append(seen, string(line)) })
	l.Write(map[string]any{"event": "a"})
	l.Write(map[string]any{"event": "b", "pad": "xxxxxxxxxxxxxxxxxxxx"}) // does not fit
	if len(seen) != 1 || seen[0] != "{\"event\":\"a\"}\n" {
		t.Fatalf("Also saw %q", seen)
	}
}
