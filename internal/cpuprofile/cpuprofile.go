package cpuprofile

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/hetsgd/hetsgd/internal/atomicfile"
)

// Env names the file a process's CPU profile goes to.
const Env = "HETSGD_CPUPROFILE"

// rankEnv is Open MPI's name for the process's rank in its job.
const rankEnv = "OMPI_COMM_WORLD_RANK"

// FromEnv starts the CPU profile when Env names a file, and returns the
// function that stops it and writes the file (a no-op without Env), which
// the caller calls once, at the end. It is an error when the file exists
// or cannot be made, or when a profile is already running. It takes Env
// out of the process's environment: a process it starts (hetsgd launch's
// job, each attempt of it) would otherwise write the same file, and the
// later of the two would be refused.
func FromEnv() (stop func() error, err error) {
	path := os.Getenv(Env)
	os.Unsetenv(Env)
	if path == "" {
		return func() error { return nil }, nil
	}
	if r := os.Getenv(rankEnv); r != "" {
		path += ".rank-" + r
	}
	return Start(path)
}

// Start starts the CPU profile into path, which must not exist; stop ends
// it and moves the profile to path.
func Start(path string) (stop func() error, err error) {
	if _, err := os.Lstat(path); err == nil {
		return nil, fmt.Errorf("%s=%s: the file exists, and a profile replaces no file: name another", Env, path)
	}
	f, err := atomicfile.Create(path, false)
	if err != nil {
		return nil, fmt.Errorf("%s=%s: %w", Env, path, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Abort()
		return nil, fmt.Errorf("%s=%s: %w", Env, path, err)
	}
	return func() error {
		pprof.StopCPUProfile()
		// A file made at path while the process ran is not replaced.
		if _, err := os.Lstat(path); err == nil {
			f.Abort()
			return fmt.Errorf("%s=%s: a file was made there meanwhile, and a profile replaces no file: the profile is dropped", Env, path)
		}
		if err := f.Commit(); err != nil {
			return fmt.Errorf("%s=%s: %w", Env, path, err)
		}
		return nil
	}, nil
}
