package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/checkpoint"
	"github.com/hetsgd/hetsgd/launch"
	"github.com/hetsgd/hetsgd/train"
)

// hetsgd launch restarts a job that crashed (a rank fault: the process
// killed by SIGKILL) from its last checkpoint: the job completes with the
// evaluations of the job never interrupted, and its log holds a restart
// record with the failure, the work lost and the time to recover.
func TestLaunchRestartsACrashedJob(t *testing.T) {
	dir := t.TempDir()
	common := []string{"--epochs", "3", "--eval-every", "0.5", "--hidden", "16", "--progress", "off"}
	whole := filepath.Join(dir, "whole.jsonl")
	if code, _, stderr := runCLI(t, append(append([]string{"train"}, common...), "--log", whole)...); code != 0 {
		t.Fatalf("the uninterrupted job: exit %d: %s", code, stderr)
	}
	// How long the job trains, to strike it early: a tenth of it, so that
	// the strike still comes before the end when the launched job runs
	// several times faster than this one did (a run's time follows the
	// machine's load), with checkpoints close enough that one precedes it
	// when it runs slower.
	var done struct {
		TrainSeconds float64 `json:"train_seconds"`
	}
	if err := json.Unmarshal([]byte(records(t, whole, "done")[0]), &done); err != nil {
		t.Fatal(err)
	}
	ck, log := filepath.Join(dir, "ck"), filepath.Join(dir, "run.jsonl")
	job := append([]string{os.Args[0], "train"}, common...)
	job = append(job, "--checkpoint", ck, "--checkpoint-every", "0.05", "--log", log, "--fault", fmt.Sprintf("rank=0,at=%gs,kind=crash", done.TrainSeconds/10))
	t.Setenv(asTool, "1")
	code, _, stderr := runCLI(t, append([]string{"launch", "--max-restarts", "2", "--"}, job...)...)
	if code != 0 {
		t.Fatalf("launch: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "attempt 1 failed (killed by SIGKILL)") || !strings.Contains(stderr, "restart 1 of 2") {
		t.Errorf("the launcher does not say what happened:\n%s", stderr)
	}
	if got, want := strings.Join(evalScores(t, log), "\n"), strings.Join(evalScores(t, whole), "\n"); got != want {
		t.Errorf("the restarted job's evaluations:\n%s\nthe uninterrupted job's:\n%s", got, want)
	}
	if r := records(t, log, "restart"); len(r) != 1 || !strings.Contains(r[0], `"failure":"killed by SIGKILL`) || !strings.Contains(r[0], `"recovery_seconds":`) {
		t.Errorf("restart records: %v", r)
	}
	if d := records(t, log, "done"); len(d) != 1 || !strings.Contains(d[0], `"interrupted":false`) {
		t.Errorf("done records: %v", d)
	}
}

// A job the launcher cannot restart is refused before it starts, and one
// that keeps failing stops when its restarts are spent, saying why.
func TestLaunchRefusals(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(asTool, "1")
	code, _, stderr := runCLI(t, "launch", "--", os.Args[0], "train", "--epochs", "1")
	if code != 1 || !strings.Contains(stderr, "no checkpoint folder to restart from") {
		t.Errorf("a job without checkpoints: exit %d, %s", code, stderr)
	}
	code, _, stderr = runCLI(t, "launch", "--", "true")
	if code != 1 || !strings.Contains(stderr, "runs no hetsgd train") {
		t.Errorf("a command that is not a job: exit %d, %s", code, stderr)
	}
	code, _, stderr = runCLI(t, "launch", "--max-restarts", "1", "--", os.Args[0], "train", "--checkpoint", filepath.Join(dir, "ck"), "--lr", "-1")
	if code != 1 || !strings.Contains(stderr, "the job's train arguments: --lr -1: ") {
		t.Errorf("a job with a setting out of range: exit %d, %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "ck")); err == nil {
		t.Error("a refused job made its checkpoint folder")
	}
}

// evalScores returns a log's evaluations without their times (the real
// clock's), each as its epoch and scores.
func evalScores(t *testing.T, path string) []string {
	t.Helper()
	var out []string
	for _, rec := range records(t, path, "eval") {
		var e struct {
			Epoch, P1, P3, P5, Loss float64
		}
		if err := json.Unmarshal([]byte(rec), &e); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("epoch %.4f P@1 %v P@3 %v P@5 %v loss %v", e.Epoch, e.P1, e.P3, e.P5, e.Loss))
	}
	return out
}

// Before the job's first checkpoint a restart runs its command again, the
// failed attempt's log set aside under a name no file has: an earlier
// failed log of that name is kept.
func TestLaunchRestartBeforeACheckpoint(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "run.jsonl")
	os.WriteFile(log, []byte("this attempt\n"), 0o644)
	os.WriteFile(log+".failed-1", []byte("an earlier one\n"), 0o644)
	j, err := train.ParseJob([]string{"./hetsgd", "train", "--checkpoint", filepath.Join(dir, "ck"), "--log", log, "--fault", "rank=0,at=1s,kind=crash"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := j.Next(1, &launch.Restart{}, true)
	if err != nil {
		t.Fatal(err)
	}
	if want := "./hetsgd train --checkpoint " + filepath.Join(dir, "ck") + " --log " + log; strings.Join(got, " ") != want {
		t.Errorf("a restart before a checkpoint:\n%s\nwant\n%s", strings.Join(got, " "), want)
	}
	if b, _ := os.ReadFile(log + ".failed-1"); string(b) != "an earlier one\n" {
		t.Errorf("an earlier failed log was replaced: %q", b)
	}
	if b, _ := os.ReadFile(log + ".failed-1.1"); string(b) != "this attempt\n" {
		t.Errorf("the failed attempt's log: %q", b)
	}
}

// The command of a restart: --resume of the job's folder added, its rank
// faults and --config taken out; with --min-ranks, after an attempt that
// failed before its first step, a rank fewer, each rank keeping its devices.
func TestLaunchRestartCommand(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "ck")
	if code, _, stderr := runCLI(t, "train", "--epochs", "1", "--checkpoint", ck, "--progress", "off"); code != 0 {
		t.Fatal(stderr)
	}
	cfg := filepath.Join(dir, "run.yaml")
	os.WriteFile(cfg, []byte("epochs: 3\n"), 0o644)
	command := []string{"mpirun", "-np", "4", "--bind-to", "none", "./hetsgd-mpi", "train", "--config", cfg, "--checkpoint", ck,
		"--fault", "rank=2,at=1s,kind=crash", "--fault=device=0,at=1s,kind=slow=2", "--devices-per-rank", "2", "--force", "--log", "x.jsonl"}
	j, err := train.ParseJob(command)
	if err != nil {
		t.Fatal(err)
	}
	j.MinRanks = 2
	f := &launch.Restart{}
	got, err := j.Next(1, f, true)
	if err != nil {
		t.Fatal(err)
	}
	want := "mpirun -np 4 --bind-to none ./hetsgd-mpi train --checkpoint " + ck + " --fault=device=0,at=1s,kind=slow=2 --devices-per-rank 2 --force --log x.jsonl --resume " + ck
	if strings.Join(got, " ") != want || f.Ranks != 4 {
		t.Errorf("a restart:\n%s\nwant\n%s (ranks %d)", strings.Join(got, " "), want, f.Ranks)
	}
	got, _ = j.Next(2, f, false)
	want = "mpirun -np 3 --bind-to none ./hetsgd-mpi train --checkpoint " + ck + " --fault=device=0,at=1s,kind=slow=2 --force --log x.jsonl --devices-per-rank 2 --resume " + ck
	if strings.Join(got, " ") != want || f.Ranks != 3 {
		t.Errorf("a restart after a failed start:\n%s\nwant\n%s (ranks %d)", strings.Join(got, " "), want, f.Ranks)
	}
}

// The launcher gives up at once, saying why and what to do, on what a
// restart cannot fix — a log naming one of the job's inputs, a folder in
// use by another job or holding checkpoints the job does not resume, an
// error of the job's own before its first step — and renames or replaces
// no file it did not make.
func TestLaunchGivesUpAtOnce(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(asTool, "1")
	cfg, log, ck := filepath.Join(dir, "run.yaml"), filepath.Join(dir, "run.jsonl"), filepath.Join(dir, "ck")
	os.WriteFile(cfg, []byte("epochs: 1\n"), 0o644)
	os.WriteFile(log, []byte("another job's live log\n"), 0o644)
	job := func(args ...string) []string {
		return append([]string{"launch", "--", os.Args[0], "train", "--checkpoint", ck}, args...)
	}
	code, _, stderr := runCLI(t, job("--config", cfg, "--log", cfg)...)
	if code != 1 || !strings.Contains(stderr, "--log "+cfg+" is the --config file: refusing to write over an input") {
		t.Errorf("a log naming the job's config: exit %d, %s", code, stderr)
	}
	claim, err := checkpoint.Dir(ck).Claim(checkpoint.Owner{Run: checkpoint.NewRunID()}, false)
	if err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCLI(t, job("--log", log, "--force")...)
	if code != 1 || !strings.Contains(stderr, "not starting the job") || !strings.Contains(stderr, "is in use by process "+strconv.Itoa(os.Getpid())) {
		t.Errorf("a folder in use: exit %d, %s", code, stderr)
	}
	os.WriteFile(checkpoint.Dir(ck).Path(64), nil, 0o644)
	claim.Release()
	code, _, stderr = runCLI(t, job("--log", log, "--force")...)
	if code != 1 || !strings.Contains(stderr, "holds checkpoints already") || !strings.Contains(stderr, "give the job --resume "+ck) {
		t.Errorf("a folder with another run's checkpoints: exit %d, %s", code, stderr)
	}
	code, _, stderr = runCLI(t, "launch", "--", os.Args[0], "train", "--checkpoint", filepath.Join(dir, "ck2"), "--data", filepath.Join(dir, "nowhere"), "--log", log, "--force")
	if code != 1 || strings.Count(stderr, "attempt ") != 1 || strings.Contains(stderr, "restart 1") ||
		!strings.Contains(stderr, "not restarting the job: it stopped on an error of its own before its first step (exit status 1; its message is above)") {
		t.Errorf("a job refused its data: exit %d, %s", code, stderr)
	}
	if b, _ := os.ReadFile(cfg); string(b) != "epochs: 1\n" {
		t.Errorf("the config changed: %q", b)
	}
	if b, _ := os.ReadFile(log); string(b) != "another job's live log\n" {
		t.Errorf("the log there before changed: %q", b)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*.failed-*")); len(m) > 0 {
		t.Errorf("files set aside: %v", m)
	}
}
