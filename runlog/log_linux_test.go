package runlog

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// fsizeEnv starts the test binary as a process whose files may not grow
// past a few hundred bytes: a full disk, as a log file sees one.
const fsizeEnv = "HETSGD_METRIC_TEST_FSIZE_LOG"

// A log file that stops growing part-way through a record (here the file
// size limit, to the writer the same as a full disk) keeps every whole
// record, ends on a line break, and the failed Write returns the error.
func TestLogFileFull(t *testing.T) {
	if path := os.Getenv(fsizeEnv); path != "" {
		fullLog(path)
		return
	}
	path := filepath.Join(t.TempDir(), "run.jsonl")
	cmd := exec.Command(os.Args[0], "-test.run=^TestLogFileFull$")
	cmd.Env = append(os.Environ(), fsizeEnv+"="+path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var written int
	var werr string
	for _, line := range strings.Split(string(out), "\n") {
		if n, ok := strings.CutPrefix(line, "written "); ok {
			written, _ = strconv.Atoi(n)
		}
		if e, ok := strings.CutPrefix(line, "error "); ok {
			werr = e
		}
	}
	if written == 0 || !strings.Contains(werr, "file too large") || !strings.Contains(werr, path) {
		t.Fatalf("%d records, then error %q; want some records, then the limit's error naming the log:\n%s", written, werr, out)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := wholeRecords(t, b); len(got) != written {
		t.Fatalf("the log holds %d records, %d were written", len(got), written)
	}
}

// fullLog writes records to path under a file size limit until one fails.
func fullLog(path string) {
	var lim syscall.Rlimit
	err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim)
	if err == nil {
		lim.Cur = 700
		err = syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim)
	}
	if err != nil {
		fmt.Println("file size limit:", err)
		os.Exit(1)
	}
	l, err := CreateLog(path, false)
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	for i := range 100 {
		if err := l.Write(record(i)); err != nil {
			fmt.Printf("written %d\nerror %v\n", i, err)
			break
		}
	}
	if err := l.Close(); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
}

// A FIFO is written to as it is, without --force: it holds nothing to lose,
// and stays a FIFO.
func TestCreateLogFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	got := make(chan string, 1)
	go func() {
		f, err := os.Open(path) // blocks until the log opens the other end
		if err != nil {
			got <- err.Error()
			return
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		got <- string(b)
	}()
	logOne(t, path, false)
	if s := <-got; s != "{\"event\":\"x\"}\n" {
		t.Fatalf("read %q from the FIFO", s)
	}
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO was replaced: %v %v", fi.Mode(), err)
	}
}
