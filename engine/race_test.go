package engine

import (
	"testing"

	"github.com/hetsgd/hetsgd/internal/race"
)

// virtualOnly skips, under the race detector, a test whose runs are all on
// the virtual clock, with no sampled layer and one rank: such a run
// computes on one goroutine (the kernels' pool aside, which the kernel
// package's tests check under the detector), so the detector finds nothing
// there that the ordinary stage does not, at ten times the cost. The
// heaviest of them skip; the light ones still run, and the real clock's
// tests (raceClocks) keep the devices' goroutines under the detector.
func virtualOnly(t *testing.T) {
	t.Helper()
	if race.Enabled {
		t.Skip("virtual clock only, on one goroutine: the race detector finds nothing here (the ordinary test stage runs it)")
	}
}
