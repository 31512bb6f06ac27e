package testdata

import (
	"testing"
	"time"
)

// Hang is how long a test waits for something that must happen before it
// calls the wait a hang and fails. It is no measure of speed: a test checks
// the order of events by synchronisation (a channel, a hook, a record in a
// file), and the deadline only turns a hang into a failure that says what
// was awaited. It is long enough for a two-core machine whose cores other
// processes keep busy, under the race detector, and short enough that a
// hung test fails well before its package's -timeout.
const Hang = 2 * time.Minute

// Recv returns the next value ch gives, failing the test when none comes
// within Hang; what names the awaited event in the failure.
func Recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	timer := time.NewTimer(Hang)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("%s: still waiting after %v (a hang?)", what, Hang)
	}
	var zero T
	return zero
}

// Until calls cond every few milliseconds until it holds, failing the test
// when it still does not after Hang; what names the awaited state.
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(Hang)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: still waiting after %v (a hang?)", what, Hang)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
