package stage

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeClock is a Line's clock that a test moves.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// On a terminal (mode on) each tick redraws the line in place: the stage,
// the work done of its total, the time it has taken, the time it has left
// once a hundredth is done, and the detail; Close clears it.
func TestLineRedrawn(t *testing.T) {
	var b bytes.Buffer
	c := &fakeClock{time.Unix(1000, 0)}
	l := newLine(&b, On, "hetsgd data gen", c.now)
	l.tick() // no stage yet: nothing
	if b.Len() != 0 {
		t.Fatalf("drawn before a stage: %q", b.String())
	}
	l.Stage("regression", 16, "steps")
	l.tick()
	c.t = c.t.Add(12 * time.Second)
	l.Update(4, "signal 0.5000: P@1 0.6123")
	l.tick()
	l.Close()
	got := strings.Split(b.String(), "\r\033[K")
	want := []string{"", "hetsgd data gen: regression 0/16 steps, 0:00",
		"hetsgd data gen: regression 4/16 steps, 0:12, ETA 0:36 — signal 0.5000: P@1 0.6123", ""}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("drawn\n%q\nwant\n%q", got, want)
	}
}

// Into a pipe or a file (mode auto on a writer that is not a terminal) the
// Line writes a plain line at most every PlainEvery, the first only once
// the work has gone on that long.
func TestLinePlain(t *testing.T) {
	var b bytes.Buffer
	c := &fakeClock{time.Unix(1000, 0)}
	l := newLine(&b, Auto, "hetsgd tune", c.now)
	l.Stage("runs", 40, "runs")
	l.Update(2.5, "sync lr 0.1 batch 128")
	c.t = c.t.Add(PlainEvery - time.Second)
	l.tick()
	if b.Len() != 0 {
		t.Fatalf("a plain line before %v: %q", PlainEvery, b.String())
	}
	c.t = c.t.Add(time.Second)
	l.tick()
	l.tick() // within PlainEvery of the last: nothing
	c.t = c.t.Add(PlainEvery)
	l.Update(5, "")
	l.tick()
	l.Close()
	want := "hetsgd tune: runs 2.5/40 runs, 0:10, ETA 2:30 — sync lr 0.1 batch 128\n" +
		"hetsgd tune: runs 5/40 runs, 0:20, ETA 2:20 — sync lr 0.1 batch 128\n"
	if b.String() != want {
		t.Fatalf("wrote\n%q\nwant\n%q", b.String(), want)
	}
}

// A stage without a total shows the time it has taken (and its work, if
// any) but no ETA; a long detail is cut to fit a terminal's line.
func TestLineWithoutTotal(t *testing.T) {
	var b bytes.Buffer
	c := &fakeClock{time.Unix(1000, 0)}
	l := newLine(&b, On, "hetsgd bench", c.now)
	l.Stage("reading delicious", 0, "")
	c.t = c.t.Add(65 * time.Second)
	l.tick()
	l.Stage("shrinking prototypes", 0, "steps")
	l.Update(3, strings.Repeat("x", 100))
	l.tick()
	got := strings.Split(b.String(), "\r\033[K")
	if got[1] != "hetsgd bench: reading delicious, 1:05" {
		t.Errorf("without a total: %q", got[1])
	}
	if want := "hetsgd bench: shrinking prototypes 3 steps, 0:00 — " + strings.Repeat("x", detailWidth-1) + "…"; got[2] != want {
		t.Errorf("a long detail: %q", got[2])
	}
}

// A message written through the Line clears the line before it and draws
// it again after; with the line off, the message alone is written.
func TestLineWrite(t *testing.T) {
	var b bytes.Buffer
	c := &fakeClock{time.Unix(1000, 0)}
	l := newLine(&b, On, "p", c.now)
	l.Write([]byte("before any line\n"))
	l.Stage("s", 2, "steps")
	l.tick()
	l.Write([]byte("a message\n"))
	l.Close()
	want := "before any line\n\r\033[Kp: s 0/2 steps, 0:00\r\033[Ka message\n\r\033[Kp: s 0/2 steps, 0:00\r\033[K"
	if b.String() != want {
		t.Fatalf("wrote %q\nwant %q", b.String(), want)
	}
	b.Reset()
	var out bytes.Buffer
	l = newLine(&b, On, "p", c.now)
	l.Stage("s", 2, "steps")
	l.tick()
	fmt.Fprint(l.Beside(&b), "[stdout]")
	l.Close()
	if want := "\r\033[Kp: s 0/2 steps, 0:00\r\033[K[stdout]\r\033[Kp: s 0/2 steps, 0:00\r\033[K"; b.String() != want {
		t.Fatalf("printed %q\nwant %q", b.String(), want)
	}
	var nl *Line
	nl.Print(func() { out.WriteString("run") })
	if out.String() != "run" {
		t.Errorf("a nil Line did not run print")
	}
	b.Reset()
	off, err := NewLine(&b, Off, "p")
	if err != nil {
		t.Fatal(err)
	}
	off.Stage("s", 2, "steps")
	off.Update(1, "x")
	off.Write([]byte("only this\n"))
	off.Close()
	if b.String() != "only this\n" {
		t.Fatalf("off: wrote %q", b.String())
	}
}

// NewLine refuses a mode it does not know, naming the flag; its clock
// stops at Close (a second Close does nothing); a nil Line and Or(nil)
// report nothing.
func TestNewLine(t *testing.T) {
	if _, err := NewLine(&bytes.Buffer{}, "yes", "p"); err == nil || !strings.Contains(err.Error(), `--progress "yes"`) {
		t.Fatalf("mode yes: %v", err)
	}
	l, err := NewLine(&bytes.Buffer{}, Auto, "p")
	if err != nil {
		t.Fatal(err)
	}
	l.Stage("s", 1, "steps")
	l.Close()
	l.Close()
	var nl *Line
	nl.Stage("s", 1, "steps")
	nl.Update(1, "")
	nl.Close()
	Or(nil).Stage("s", 1, "steps")
	if r := Or(l); r != Reporter(l) {
		t.Errorf("Or(l) is %v", r)
	}
}

func TestETA(t *testing.T) {
	for _, c := range []struct {
		elapsed     time.Duration
		done, total float64
		eta         time.Duration
		ok          bool
	}{
		{time.Minute, 1, 4, 3 * time.Minute, true},
		{time.Minute, 4, 4, 0, true},
		{time.Minute, 5, 4, 0, true}, // past an estimated total
		{time.Minute, 0, 4, 0, false},
		{time.Minute, 1, 0, 0, false},
		{time.Minute, 0.5, 1000, 0, false}, // too little done
		{0, 1, 4, 0, false},
	} {
		if eta, ok := ETA(c.elapsed, c.done, c.total); eta != c.eta || ok != c.ok {
			t.Errorf("ETA(%v, %v, %v) = %v, %v; want %v, %v", c.elapsed, c.done, c.total, eta, ok, c.eta, c.ok)
		}
	}
	if got := Clock(65 * time.Minute); got != "1:05:00" {
		t.Errorf("Clock: %q", got)
	}
}

func TestIsTerminal(t *testing.T) {
	if IsTerminal(&bytes.Buffer{}) {
		t.Error("a buffer is a terminal")
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) {
		t.Error("a regular file is a terminal")
	}
}

// A plain line shows the detail whole: no terminal's width to keep to.
func TestLinePlainDetailWhole(t *testing.T) {
	var b bytes.Buffer
	c := &fakeClock{time.Unix(1000, 0)}
	l := newLine(&b, Auto, "p", c.now)
	l.Stage("s", 0, "")
	long := strings.Repeat("x", 2*detailWidth)
	l.Update(0, long)
	c.t = c.t.Add(PlainEvery)
	l.tick()
	if want := "p: s, 0:10 — " + long + "\n"; b.String() != want {
		t.Fatalf("wrote %q, want %q", b.String(), want)
	}
}
