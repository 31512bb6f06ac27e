package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/internal/cpuprofile"
)

// HETSGD_CPUPROFILE profiles a command's whole process: the profile is
// written at its end; a file already there is refused before any work and
// left as it was.
func TestCPUProfileFromTheEnvironment(t *testing.T) {
	dir := t.TempDir()
	tool := func(profile string, args ...string) (int, string) {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), asTool+"=1", cpuprofile.Env+"="+profile)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		cmd.Run()
		return cmd.ProcessState.ExitCode(), stderr.String()
	}
	prof := filepath.Join(dir, "cpu.prof")
	if code, stderr := tool(prof, "train", "--epochs", "1", "--hidden", "16", "--progress", "off"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if b, err := os.ReadFile(prof); err != nil || !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
		t.Fatalf("the profile: %d bytes, %v", len(b), err)
	}
	kept := filepath.Join(dir, "kept.txt")
	os.WriteFile(kept, []byte("mine"), 0o644)
	code, stderr := tool(kept, "train", "--epochs", "1", "--hidden", "16", "--progress", "off")
	if code != 1 || !strings.Contains(stderr, cpuprofile.Env+"="+kept) {
		t.Errorf("a profile over a file: exit %d: %s", code, stderr)
	}
	if b, _ := os.ReadFile(kept); string(b) != "mine" {
		t.Errorf("the file holds %q", b)
	}
}
