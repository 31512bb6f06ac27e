//go:build mpi

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hetsgd/hetsgd/checkpoint"
	"github.com/hetsgd/hetsgd/internal/mpirun"
)

// SIGINT or SIGTERM to mpirun saves the job as it stands, rank 0 gathering
// every rank's devices, for a strategy with local steps (elastic), one
// with a parameter server (gem) and one with a fragment's all-reduce in
// flight across ranks between its barriers (streaming-diloco): the
// checkpoint resumes under mpirun and in one process.
func TestMPIStopSavesTheRun(t *testing.T) {
	for i, c := range []struct {
		strategy string
		sig      syscall.Signal
	}{{"elastic", syscall.SIGINT}, {"gem", syscall.SIGTERM}, {"streaming-diloco", syscall.SIGINT}} {
		t.Run(c.strategy, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // catches a hang only
			defer cancel()
			dir := t.TempDir()
			ck, log := filepath.Join(dir, "ck"), filepath.Join(dir, "run.jsonl")
			cmd := mpirun.Command(ctx, 3, os.Args[0], "train", "--strategy", c.strategy, "--epochs", "100000", "--eval-every", "0.5",
				"--checkpoint", ck, "--checkpoint-every", "1000", "--log", log, "--progress", "off")
			cmd.Env = append(os.Environ(), asTool+"=1")
			var out syncBuffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			evals := func() int { b, _ := os.ReadFile(log); return strings.Count(string(b), `"event":"eval"`) }
			for deadline := time.Now().Add(time.Minute); evals() < 1+2*i; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("no evaluation within a minute:\n%s", out.String())
				}
			}
			cmd.Process.Signal(c.sig)
			cmd.Wait()
			if !strings.Contains(out.String(), "saved the stopped run in") {
				t.Fatalf("mpirun stopped by %v:\n%s", c.sig, out.String())
			}
			list, err := checkpoint.Dir(ck).List()
			if err != nil || len(list) != 1 {
				t.Fatalf("the folder holds %v (%v)", list, err)
			}
			// Under mpirun, and in one process, for half an epoch more (of
			// Bibtex's 4,880 training points).
			var samples int64
			if _, err := fmt.Sscanf(filepath.Base(list[0]), "checkpoint-%d.hck", &samples); err != nil {
				t.Fatal(err)
			}
			epochs := fmt.Sprint(float64(samples)/4880 + 0.5)
			again := mpirun.Command(ctx, 3, os.Args[0], "train", "--resume", ck, "--epochs", epochs, "--progress", "off")
			again.Env = append(os.Environ(), asTool+"=1")
			if b, err := again.CombinedOutput(); err != nil || !strings.Contains(string(b), "best P@1") {
				t.Fatalf("resumed under mpirun: %v\n%s", err, b)
			}
			copyDir := filepath.Join(dir, "one")
			if code, _, errs := runCLI(t, "train", "--resume", list[0], "--devices", "3", "--checkpoint", copyDir, "--log", filepath.Join(dir, "one.jsonl"), "--epochs", epochs, "--progress", "off"); code != 0 {
				t.Fatalf("resumed in one process: %s", errs)
			}
		})
	}
}
