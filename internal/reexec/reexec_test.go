//go:build unix

package reexec

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

const helperEnv = "HETSGD_REEXEC_HELPER"

// The helper, started as a process of its own, asks for two variables, one
// of which its environment holds already with another value: it restarts
// once, with the other added and the user's kept.
func TestHelperRestart(t *testing.T) {
	if os.Getenv(helperEnv) == "" {
		t.Skip("a helper of TestWithRestartsOnce")
	}
	With("", "HETSGD_REEXEC_A=new", "HETSGD_REEXEC_B=new", "malformed")
	fmt.Printf("a=%s b=%s\n", os.Getenv("HETSGD_REEXEC_A"), os.Getenv("HETSGD_REEXEC_B"))
	os.Exit(0)
}

func TestWithRestartsOnce(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperRestart$")
	cmd.Env = append(os.Environ(), helperEnv+"=1", "HETSGD_REEXEC_A=user's")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got := strings.TrimSpace(string(out)); !strings.Contains(got, "a=user's b=new") {
		t.Fatalf("the restarted helper says %q", got)
	}
	// Nothing to add: no restart, nothing changed.
	t.Setenv("HETSGD_REEXEC_A", "x")
	With("HETSGD_REEXEC_A=y")
	if v := os.Getenv("HETSGD_REEXEC_A"); v != "x" {
		t.Fatalf("a variable set already became %q", v)
	}
}
