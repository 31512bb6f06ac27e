//go:build !unix

package launch

import "os/exec"

type proc struct {
	pid     int
	comm    string
	state   byte
	threads int
}

func ownSession(*exec.Cmd) {}

func leaderCommand(cmd []string) []string { return cmd }

func terminate(c *exec.Cmd) { c.Process.Kill() }

func killJob(c *exec.Cmd) {
	if c.Process != nil {
		c.Process.Kill()
	}
}

func jobProcs(int) ([]proc, bool) { return nil, false }

func signalOf(*exec.ExitError) string { return "" }

func stopSignal(*exec.ExitError) bool { return false }
