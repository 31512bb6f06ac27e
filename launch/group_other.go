//go:build !unix

package launch

import "os/exec"

func ownGroup(*exec.Cmd) {}

func terminate(c *exec.Cmd) { c.Process.Kill() }

func killGroup(c *exec.Cmd) {
	if c.Process != nil {
		c.Process.Kill()
	}
}

func signalOf(*exec.ExitError) string { return "" }
