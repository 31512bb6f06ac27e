package launch_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/checkpoint"
	"github.com/hetsgd/hetsgd/launch"
)

// trainCommand is a Command of a job like hetsgd train's: "crash" faults
// and --config dropped when it resumes, --resume DIR added.
func trainCommand(args []string, ck, log string) *launch.Command {
	c := &launch.Command{Args: args, Sub: -1, Checkpoint: ck, Log: log, Switches: map[string]bool{"force": true}}
	for i, a := range args {
		if a == "train" && c.Sub < 0 {
			c.Sub = i
		}
	}
	c.Ranks, _ = launch.RankCount(args[:c.Sub])
	c.Drop = func(name, value string, resumed, fewer bool) bool {
		return name == "fault" && value == "crash" || name == "config" && resumed || name == "per-rank" && fewer
	}
	c.Resume = func(dir string, fewer bool) []string {
		if fewer {
			return []string{"--per-rank", "2", "--resume", dir}
		}
		return []string{"--resume", dir}
	}
	return c
}

// Before the first checkpoint a restart is the command again, less what
// Drop takes out of a fresh start, the failed log set aside; once there
// is one, it resumes it, less what Drop takes out of a resumed one, with
// Resume's arguments.
func TestCommandNext(t *testing.T) {
	dir := t.TempDir()
	ck, log := filepath.Join(dir, "ck"), filepath.Join(dir, "run.jsonl")
	os.WriteFile(log, []byte("attempt 1\n"), 0o644)
	c := trainCommand([]string{"hetsgd", "train", "--config", "c.yaml", "--fault", "crash", "--fault=slow", "--force", "data", "--log", log, "--checkpoint", ck}, ck, log)
	got, err := c.Next(1, &launch.Restart{}, true)
	if want := "hetsgd train --config c.yaml --fault=slow --force data --log " + log + " --checkpoint " + ck; err != nil || strings.Join(got, " ") != want {
		t.Fatalf("a fresh restart: %q, %v\nwant %q", got, err, want)
	}
	if b, err := os.ReadFile(log + ".failed-1"); err != nil || string(b) != "attempt 1\n" {
		t.Errorf("the failed attempt's log: %q, %v", b, err)
	}
	if err := checkpoint.Dir(ck).Make(); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(checkpoint.Dir(ck).Path(128), nil, 0o644)
	got, err = c.Next(2, &launch.Restart{}, true)
	if want := "hetsgd train --fault=slow --force data --log " + log + " --checkpoint " + ck + " --resume " + ck; err != nil || strings.Join(got, " ") != want {
		t.Fatalf("a resumed restart: %q, %v\nwant %q", got, err, want)
	}
}

// Under mpirun, an attempt that failed before its first step is followed
// by one on a rank fewer, down to MinRanks, and the restart is told its
// ranks.
func TestCommandFewerRanks(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "ck")
	checkpoint.Dir(ck).Make()
	os.WriteFile(checkpoint.Dir(ck).Path(64), nil, 0o644)
	c := trainCommand([]string{"mpirun", "-np", "3", "hetsgd", "train", "--per-rank", "1"}, ck, "")
	c.MinRanks = 2
	for _, want := range []struct {
		started bool
		cmd     string
		ranks   int
	}{
		{true, "mpirun -np 3 hetsgd train --per-rank 1 --resume " + ck, 3},
		{false, "mpirun -np 2 hetsgd train --per-rank 2 --resume " + ck, 2},
		{false, "mpirun -np 2 hetsgd train --per-rank 2 --resume " + ck, 2},
	} {
		f := &launch.Restart{}
		got, err := c.Next(1, f, want.started)
		if err != nil || strings.Join(got, " ") != want.cmd || f.Ranks != want.ranks {
			t.Errorf("after an attempt that started: %v: %q on %d ranks, %v; want %q on %d", want.started, got, f.Ranks, err, want.cmd, want.ranks)
		}
	}
}

// RankCount finds mpirun's count among its flags: the last one given.
func TestRankCount(t *testing.T) {
	for _, c := range []struct {
		launcher []string
		index, n int
	}{
		{[]string{"mpirun", "-np", "4", "./hetsgd"}, 2, 4},
		{[]string{"mpirun", "--bind-to", "none", "-n", "2", "./hetsgd"}, 4, 2},
		{[]string{"mpiexec", "-c", "8", "--np", "6", "./hetsgd"}, 4, 6},
		{[]string{"mpirun", "-np", "x", "./hetsgd"}, 0, 0},
		{[]string{"./hetsgd"}, 0, 0},
		{[]string{"mpirun", "-np"}, 0, 0},
	} {
		if i, n := launch.RankCount(c.launcher); i != c.index || n != c.n {
			t.Errorf("%q: %d at %d, want %d at %d", c.launcher, n, i, c.n, c.index)
		}
	}
}

// A failed attempt's log is set aside under a name no file has.
func ExampleSetAside() {
	dir, err := os.MkdirTemp("", "launch-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	log := filepath.Join(dir, "run.jsonl")
	os.WriteFile(log+".failed-1", []byte("an earlier launcher's\n"), 0o644)
	os.WriteFile(log, []byte("this attempt's\n"), 0o644)
	aside, err := launch.SetAside(log, 1)
	if err != nil {
		panic(err)
	}
	fmt.Println(filepath.Base(aside))
	// Output: run.jsonl.failed-1.1
}

// A job under mpirun that failed before its first step, without a
// checkpoint yet: it starts over on a rank fewer.
func ExampleCommand_Next() {
	c := &launch.Command{Args: strings.Fields("mpirun -np 4 hetsgd train --epochs 5 --checkpoint ck"), Sub: 4, Checkpoint: "ck", MinRanks: 2,
		Resume: func(dir string, fewer bool) []string { return []string{"--resume", dir} }}
	c.Ranks, _ = launch.RankCount(c.Args[:c.Sub])
	f := &launch.Restart{Attempt: 1}
	next, err := c.Next(1, f, false)
	if err != nil {
		panic(err)
	}
	fmt.Println(strings.Join(next, " "), "—", f.Ranks, "ranks")
	// Output: mpirun -np 3 hetsgd train --epochs 5 --checkpoint ck — 3 ranks
}

// Before refuses a folder another process is using (a job already there,
// whose log a restart would set aside) and one holding checkpoints the job
// does not resume; it lets a job that resumes them start.
func TestCommandBefore(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "ck")
	c := trainCommand([]string{"hetsgd", "train", "--checkpoint", ck}, ck, filepath.Join(dir, "run.jsonl"))
	if err := c.Before(); err != nil {
		t.Fatalf("a new folder: %v", err)
	}
	claim, err := checkpoint.Dir(ck).Claim(checkpoint.Owner{Run: checkpoint.NewRunID()}, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Before(); err == nil || !strings.Contains(err.Error(), "is in use by process") || !strings.Contains(err.Error(), "sets aside no log of another job's") {
		t.Errorf("a folder in use: %v", err)
	}
	os.WriteFile(checkpoint.Dir(ck).Path(64), nil, 0o644)
	claim.Release()
	fresh := trainCommand([]string{"hetsgd", "train", "--checkpoint", ck}, ck, "")
	if err := fresh.Before(); err == nil || !strings.Contains(err.Error(), "holds checkpoints already") || !strings.Contains(err.Error(), "give the job --resume "+ck) {
		t.Errorf("a new run on a folder with checkpoints: %v", err)
	}
	resumes := trainCommand([]string{"hetsgd", "train", "--resume", ck}, ck, "")
	resumes.Resumes = true
	if err := resumes.Before(); err != nil {
		t.Errorf("a job that resumes the folder: %v", err)
	}
}

// A restart before the first checkpoint sets aside only a log the failed
// attempt made: not a file that was there before the attempt started,
// which its job did not write (it refused it, or another job's), nor any
// log while another process uses the folder.
func TestCommandSetsAsideOnlyItsLog(t *testing.T) {
	dir := t.TempDir()
	ck, log := filepath.Join(dir, "ck"), filepath.Join(dir, "run.jsonl")
	c := trainCommand([]string{"hetsgd", "train", "--checkpoint", ck, "--log", log}, ck, log)
	os.WriteFile(log, []byte("the user's\n"), 0o644)
	if err := c.Before(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Next(1, &launch.Restart{}, false); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(log); string(b) != "the user's\n" {
		t.Errorf("the log there before the attempt was moved: %q", b)
	}
	if _, err := os.Stat(log + ".failed-1"); err == nil {
		t.Error("a file there before the attempt was set aside")
	}
	// The attempt replaced it: its own.
	os.Remove(log)
	os.WriteFile(log, []byte("attempt 1\n"), 0o644)
	claim, err := checkpoint.Dir(ck).Claim(checkpoint.Owner{Run: checkpoint.NewRunID()}, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Next(1, &launch.Restart{}, false); err == nil || !strings.Contains(err.Error(), "in use by process") {
		t.Errorf("a restart while another process holds the folder: %v", err)
	}
	claim.Release()
	if _, err := c.Next(1, &launch.Restart{}, false); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(log + ".failed-1"); string(b) != "attempt 1\n" {
		t.Errorf("the attempt's own log set aside: %q", b)
	}
}

// A job runs under MPI when an MPI launcher starts it, not a wrapper.
func TestUnderMPI(t *testing.T) {
	for cmd, want := range map[string]bool{
		"mpirun -np 4 --oversubscribe": true,
		"/usr/bin/mpiexec -n 2":        true,
		"env HETSGD_MEMORY_LIMIT=1G":   false,
		"nice -n 5":                    false,
		"taskset -c 0,1":               false,
		"env X=1 mpirun -np 2":         true,
		"":                             false,
	} {
		if got := launch.UnderMPI(strings.Fields(cmd)); got != want {
			t.Errorf("UnderMPI(%q) = %v, want %v", cmd, got, want)
		}
	}
}
