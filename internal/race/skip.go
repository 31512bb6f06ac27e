package race

import "testing"

// SkipAllocs skips a test of allocation counts under the race detector,
// which allocates as it instruments (goroutine hand-offs most): its counts
// say nothing of the code's. The ordinary test stage checks them.
func SkipAllocs(t testing.TB) {
	t.Helper()
	if Enabled {
		t.Skip("allocation counts mean nothing under the race detector, which allocates as it instruments")
	}
}
