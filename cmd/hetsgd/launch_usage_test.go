package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A job whose command the tool refuses as misused says so to its launcher,
// which gives up at once, naming the fix: the job's exit status alone (2)
// is also what Go's runtime exits with when it panics or runs out of
// memory, which a restart may get past.
func TestLaunchGivesUpOnAUsageError(t *testing.T) {
	t.Setenv(asTool, "1")
	ck := filepath.Join(t.TempDir(), "ck")
	code, _, stderr := runCLI(t, "launch", "--max-restarts", "3", "--", os.Args[0], "train", "--checkpoint", ck, "--epochs", "1", "stray")
	if code != 1 || !strings.Contains(stderr, `unexpected argument "stray"`) || !strings.Contains(stderr, "its command has a usage error") ||
		!strings.Contains(stderr, "fix the job's flags") || strings.Contains(stderr, "restart 1 of") {
		t.Fatalf("a job with a stray argument: exit %d, %s", code, stderr)
	}
}
