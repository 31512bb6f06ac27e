package launch

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hetsgd/hetsgd/internal/mpirun"
)

// step is a job's first step, as its rank 0 reports it.
const step = `printf '{"samples":10,"first_step":1,"checkpoint":-1}' > "$HETSGD_LAUNCH/progress.json"; `

// usage is a job's word that it was called wrongly (NoteUsageError).
const usage = `: > "$HETSGD_LAUNCH/usage"; `

// A failure no restart can fix ends Run at once, without a restart, naming
// why and the fix; one a restart may fix is restarted. Under mpirun the
// job's stderr still reaches the launcher's unchanged.
func TestRunGivesUpAtOnce(t *testing.T) {
	slots := "--------------------------------------------------------------------------\nThere are not enough slots available in the system to satisfy the 64\nslots that were requested by the application:\n"
	rankExit := "mpirun detected that one or more processes exited with non-zero status, thus causing\nthe job to be terminated.\n"
	for _, c := range []struct {
		name, script string
		mpi          bool
		restarted    bool
		want         string
	}{
		{"a usage error", usage + "exit 2", false, false, "its command has a usage error (exit status 2; its message is above), which a restart would repeat: fix the job's flags"},
		{"a panic after the first step", step + "exit 2", false, true, ""},
		{"a panic, or memory run out, before the first step", "exit 2", false, true, ""},
		{"SIGTERM", "kill -TERM $$", false, false, "stopped by a signal that asks a process to stop (someone, or a job scheduler, sent it): a deliberate stop is not restarted: to go on, launch it again with --resume ck in the job's command"},
		{"SIGINT handled", step + "exit 130", false, false, "stopped by a signal"},
		{"SIGTERM handled", "exit 143", false, false, "stopped by a signal"},
		{"SIGKILL", step + "kill -KILL $$", false, true, ""},
		{"a refusal", "exit 1", false, false, "it stopped on an error of its own before its first step (exit status 1; its message is above): its settings, data or checkpoint folder were refused"},
		{"an error after the first step", step + "exit 1", false, true, ""},
		{"too few slots", "printf %s '" + slots + "' >&2; exit 1", true, false, "mpirun has too few slots for the ranks asked for, which no restart changes: add --oversubscribe to mpirun's flags"},
		{"a rank's refusal", "printf %s '" + rankExit + "' >&2; exit 1", true, false, "an error of its own before its first step"},
		{"mpirun's own failure", "echo 'ORTE was unable to reliably start one or more daemons.' >&2; exit 1", true, true, ""},
	} {
		var stderr bytes.Buffer
		restarted := false
		j := &Job{Command: []string{"sh", "-c", c.script}, MaxRestarts: 1, MPI: c.mpi, Checkpoint: "ck", Stderr: &stderr,
			Next: func(int, *Restart, bool) ([]string, error) { restarted = true; return []string{"true"}, nil }}
		err := j.Run(context.Background())
		switch {
		case c.restarted && (err != nil || !restarted):
			t.Errorf("%s: %v, restarted %v; want a restart", c.name, err, restarted)
		case !c.restarted && (restarted || err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, restarted %v; want no restart and %q", c.name, err, restarted, c.want)
		}
		if c.mpi && c.name != "mpirun's own failure" {
			if want := strings.SplitN(c.script, "'", 3)[1]; stderr.String() != want {
				t.Errorf("%s: the job's stderr came through as %q, want %q", c.name, stderr.String(), want)
			}
		}
	}
}

// The scanner passes every byte on and reads the lines, however they are
// cut into writes, and a line longer than it reads is not matched.
func TestScanner(t *testing.T) {
	var b bytes.Buffer
	sc := &scanner{w: &b}
	msg := "x\nThere are not enough slots avail" + "able in the system to satisfy\nmore"
	for _, piece := range []string{msg[:5], msg[5:40], msg[40:]} {
		sc.Write([]byte(piece))
	}
	if r, _ := sc.seen(); b.String() != msg || r == nil || !strings.Contains(r.fix, "--oversubscribe") {
		t.Fatalf("passed %q, found %v", b.String(), r)
	}
	long := &scanner{w: &b}
	long.Write([]byte(strings.Repeat("y", maxLine) + " exited with non-zero status\n"))
	if _, rank := long.seen(); rank {
		t.Error("a line longer than maxLine was matched")
	}
	last := &scanner{w: &b}
	last.Write([]byte("one or more processes exited with non-zero status")) // no newline: the end of the stream
	if _, rank := last.seen(); !rank {
		t.Error("the last line, without a newline, was not read")
	}
}

// A job one of whose processes is stopped (SIGSTOP) for StopTimeout is
// killed and restarted, the launcher saying which process; so is one that
// stops reporting progress after its first step for HangTimeout.
func TestRunEndsAStoppedOrHungJob(t *testing.T) {
	if _, ok := jobProcs(os.Getpid()); !ok {
		t.Skip("this system does not list a session's processes")
	}
	dir := t.TempDir()
	for _, c := range []struct {
		name, script string
		stop, hang   time.Duration
		want         string
	}{
		// The job's second process stops itself; its first waits for it.
		{"stopped", `sh -c 'kill -STOP $$' & wait`, 50 * time.Millisecond, 0, ") held by SIGSTOP or SIGTSTP for "},
		{"hung", step + "sleep 1000", 0, 50 * time.Millisecond, "hung: no progress for "},
	} {
		var f *Restart
		var said []string
		j := &Job{Command: []string{"sh", "-c", c.script}, MaxRestarts: 1, StopTimeout: c.stop, HangTimeout: c.hang,
			Say:  func(l string) { said = append(said, l) },
			Next: func(_ int, r *Restart, _ bool) ([]string, error) { f = r; return []string{"true"}, nil }}
		done := make(chan error, 1)
		go func() { done <- j.Run(context.Background()) }()
		select {
		case err := <-done:
			if err != nil || f == nil || !strings.Contains(f.Failure, c.want) || !strings.Contains(said[0], c.want) {
				t.Errorf("%s: %v; restart %+v; said %q; want %q", c.name, err, f, said, c.want)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("%s: the job was not ended", c.name)
		}
	}
	_ = dir
}

// A launcher stopped ends the job's whole session: a process of it in a
// process group of its own (as mpirun puts its ranks) too.
func TestRunEndsTheSession(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the session's processes are listed on Linux")
	}
	pids := filepath.Join(t.TempDir(), "pids")
	t.Setenv(envOwnGroup, pids)
	ctx, cancel := context.WithCancel(context.Background())
	j := &Job{Command: []string{"sh", "-c", `"$0" -test.run='^TestHelperOwnGroup$' & wait`, os.Args[0]}, Grace: 5 * time.Second}
	done := make(chan error, 1)
	go func() { done <- j.Run(ctx) }()
	pid := waitPid(t, pids)
	if pgid, _ := syscall.Getpgid(pid); pgid != pid {
		t.Fatalf("the helper is in group %d, not its own", pgid)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the launcher did not stop its job")
	}
	if alive(pid) {
		t.Errorf("the job's process %d, in a group of its own, outlived the launcher", pid)
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// envOwnGroup, in a test binary's environment, makes TestHelperOwnGroup
// a process in a group of its own, which writes its id into the file the
// value names and waits.
const envOwnGroup = "HETSGD_TEST_OWN_GROUP"

func TestHelperOwnGroup(t *testing.T) {
	path := os.Getenv(envOwnGroup)
	if path == "" {
		t.Skip("a helper process of TestRunEndsTheSession")
	}
	if err := syscall.Setpgid(0, 0); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
	signal.Ignore(syscall.SIGTERM) // only a kill ends it
	time.Sleep(time.Hour)
}

// waitPid waits for a job to write its process's id into path.
func waitPid(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, err := strconv.Atoi(strings.Fields(string(b))[0])
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no process id in %s", path)
	return 0
}

// alive reports whether process pid still runs, waiting (up to a generous
// deadline) for it to end: false once it has ended, even unreaped.
func alive(pid int) bool {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if syscall.Kill(pid, 0) != nil || zombie(pid) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// envHelper, in a test binary's environment, makes TestHelperLauncher a
// launcher: it runs the job in its value (a shell script) and waits.
const envHelper = "HETSGD_TEST_LAUNCHER"

// TestHelperLauncher is a launcher for TestLauncherKilled to kill.
func TestHelperLauncher(t *testing.T) {
	script := os.Getenv(envHelper)
	if script == "" {
		t.Skip("a helper process of TestLauncherKilled")
	}
	os.Unsetenv(envHelper)
	j := &Job{Command: []string{"sh", "-c", script}, Stderr: os.Stderr, Grace: time.Second,
		Next: func(int, *Restart, bool) ([]string, error) { select {} }}
	j.Run(context.Background())
}

// When the launcher is killed (SIGKILL: it can do nothing), its job ends
// with it: the job's leader gets the parent-death signal (SIGTERM). Under
// mpirun, mpirun then ends its ranks.
func TestLauncherKilled(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal is Linux's")
	}
	dir := t.TempDir()
	jobs := map[string]string{"a training process": `echo $$ > ` + filepath.Join(dir, "one") + `; exec sleep 1000`}
	if mpirun.Available() {
		jobs["mpirun's ranks"] = "exec mpirun " + strings.Join(mpirun.Args(mpirun.App{NP: 2, Prog: "sh", Args: []string{"-c", `'echo $$ >> ` + filepath.Join(dir, "ranks") + `; exec sleep 1000'`}}), " ")
	}
	for name, script := range jobs {
		launcher := exec.Command(os.Args[0], "-test.run=^TestHelperLauncher$")
		// A launcher killed by SIGKILL cannot remove its temporary folder:
		// it goes in the test's.
		launcher.Env = append(os.Environ(), envHelper+"="+script, "TMPDIR="+dir)
		var out bytes.Buffer
		launcher.Stdout, launcher.Stderr = &out, &out
		if err := launcher.Start(); err != nil {
			t.Fatal(err)
		}
		var pids []int
		if name == "a training process" {
			pids = []int{waitPid(t, filepath.Join(dir, "one"))}
		} else {
			pids = waitPids(t, filepath.Join(dir, "ranks"), 2)
		}
		launcher.Process.Kill()
		launcher.Wait()
		for _, pid := range pids {
			if alive(pid) {
				t.Errorf("%s: process %d outlived the launcher killed by SIGKILL\n%s", name, pid, out.String())
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}

// waitPids waits for n process ids in path, one a line.
func waitPids(t *testing.T, path string, n int) []int {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(path)
		if f := strings.Fields(string(b)); len(f) >= n && strings.HasSuffix(string(b), "\n") {
			var pids []int
			for _, s := range f {
				pid, err := strconv.Atoi(s)
				if err != nil {
					t.Fatal(err)
				}
				pids = append(pids, pid)
			}
			return pids
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("fewer than %d process ids in %s", n, path)
	return nil
}

// A process the job left behind that holds the job's output (a rank that
// outlived mpirun) holds the launcher up no longer than a moment: the
// attempt ends with its leader, and the rest of the session is ended.
func TestRunDoesNotWaitForLeftovers(t *testing.T) {
	pid := filepath.Join(t.TempDir(), "pid")
	var out bytes.Buffer // not a file: the job's output goes through a pipe
	j := &Job{Command: []string{"sh", "-c", `sleep 600 & echo $! > ` + pid + `; exit 3`}, Stdout: &out, Stderr: &out, Grace: time.Second}
	done := make(chan error, 1)
	go func() { done <- j.Run(context.Background()) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "exit status 3") {
			t.Fatalf("the job that exited 3: %v", err)
		}
	case <-time.After(5 * time.Minute): // a hang only: unmended, the launcher waits out the sleep, ten minutes
		t.Fatal("the launcher waited for a process its job left behind")
	}
	b, err := os.ReadFile(pid)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if n > 0 && alive(n) {
		t.Errorf("the job's leftover process %d outlived the attempt", n)
		syscall.Kill(n, syscall.SIGKILL)
	}
}
