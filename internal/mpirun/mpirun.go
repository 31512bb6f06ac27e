// Package mpirun starts OpenMPI jobs on this host for tests and benchmark
// scripts: every rank on shared memory and loopback (never the machine's
// external interface), unbound from cores so that Go schedules each rank
// over all of them, and — as tests must — under a deadline, stopped with
// SIGTERM so that mpirun cleans up its shared-memory segments.
package mpirun

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/hetsgd/hetsgd/comm"
)

// Flags are the mpirun options of a job confined to this host:
//   - --bind-to none: by default each rank is pinned to one core and Go then
//     runs it with GOMAXPROCS 1;
//   - --mca btl self,vader and --mca oob_tcp_if_include lo: ranks talk over
//     shared memory, and mpirun to its ranks over loopback;
//   - --oversubscribe: more ranks than cores.
//
// As root, OpenMPI also wants --allow-run-as-root (added by Command).
var Flags = []string{"--bind-to", "none", "--mca", "btl", "self,vader", "--mca", "oob_tcp_if_include", "lo", "--oversubscribe"}

// Available reports whether mpirun is on the PATH.
func Available() bool {
	_, err := exec.LookPath("mpirun")
	return err == nil
}

// App is one program of a job: NP ranks of Prog with Args.
type App struct {
	NP   int
	Prog string
	Args []string
}

// Args returns mpirun's arguments for the apps, side by side in one job
// (several apps make an MPMD job: "mpirun -np 1 a : -np 1 b").
func Args(apps ...App) []string {
	a := append([]string{}, Flags...)
	if os.Geteuid() == 0 {
		a = append(a, "--allow-run-as-root")
	}
	for i, app := range apps {
		if i > 0 {
			a = append(a, ":")
		}
		a = append(a, "-np", strconv.Itoa(app.NP), app.Prog)
		a = append(a, app.Args...)
	}
	return a
}

// Command returns an mpirun command for np ranks of prog with args, which
// ctx's end stops with SIGTERM (and, 10 s later, SIGKILL).
func Command(ctx context.Context, np int, prog string, args ...string) *exec.Cmd {
	return CommandApps(ctx, App{NP: np, Prog: prog, Args: args})
}

// CommandApps is Command for several apps in one job.
func CommandApps(ctx context.Context, apps ...App) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "mpirun", Args(apps...)...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// Main runs a test binary's tests on every rank of an MPI job. Called from
// TestMain: in the process go test started, it starts the binary again under
// mpirun once for each size in nps (with the same flags) and exits with the
// first failure; inside the job it runs the tests on this rank, calls done
// (which closes the world) and exits with their status.
func Main(m *testing.M, done func(), nps ...int) {
	if comm.Launched() != "" {
		code := m.Run()
		done()
		os.Exit(code)
	}
	if !Available() {
		fmt.Fprintln(os.Stderr, "mpirun: not found; the mpi-tagged tests need OpenMPI (apt-get install libopenmpi-dev openmpi-bin)")
		os.Exit(1)
	}
	for _, np := range nps {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		cmd := Command(ctx, np, os.Args[0], os.Args[1:]...)
		cmd.Args = append(cmd.Args[:1], append([]string{"--tag-output"}, cmd.Args[1:]...)...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		fmt.Printf("=== mpirun -np %d\n", np)
		err := cmd.Run()
		cancel()
		if err != nil {
			fmt.Printf("--- FAIL: the job of %d ranks: %v\n", np, err)
			os.Exit(1)
		}
	}
	os.Exit(0)
}
