//go:build unix

package reexec

import (
	"os"
	"strings"
	"syscall"
)

// With restarts the process with env's KEY=VALUE variables added, those
// of them it does not hold yet (a variable already set, even to another
// value, is the user's and stays). It returns when there is nothing to
// add, or when the restart failed, with the environment as it was; empty
// entries are skipped.
func With(env ...string) {
	var added []string
	for _, kv := range env {
		key, value, ok := strings.Cut(kv, "=")
		if !ok || key == "" {
			continue
		}
		if _, set := os.LookupEnv(key); !set {
			os.Setenv(key, value)
			added = append(added, key)
		}
	}
	if len(added) == 0 {
		return
	}
	if exe, err := os.Executable(); err == nil {
		syscall.Exec(exe, os.Args, os.Environ())
	}
	for _, key := range added { // still this process: as it was
		os.Unsetenv(key)
	}
}
