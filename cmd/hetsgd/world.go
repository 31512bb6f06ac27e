package main

import (
	"fmt"

	"github.com/hetsgd/hetsgd/comm"
)

// multiRank lists the commands that run as one job across the ranks mpirun
// starts; the others run in one process and refuse to start N copies.
var multiRank = map[string]bool{"train": true, "calibrate": true, "version": true}

// checkLaunch refuses a single-process command that mpirun started.
func checkLaunch(name string) error {
	if how := comm.Launched(); how != "" && !multiRank[name] {
		return fmt.Errorf("this command runs in one process; start it without mpirun (started by a process manager: %s)", how)
	}
	return nil
}

// rankErr prefixes the errors of ranks other than 0 with their rank, so that
// the lines mpirun gathers say where they come from.
func rankErr(world comm.Comm, err error) error {
	if err == nil || world == nil || world.Rank() == 0 {
		return err
	}
	return fmt.Errorf("rank %d: %w", world.Rank(), err)
}
