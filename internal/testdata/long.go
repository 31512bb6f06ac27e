package testdata

import (
	"os"
	"testing"
)

// LongEnv is the environment variable that runs the long tests: set to 1,
// as `scripts/test.sh --long` does.
const LongEnv = "HETSGD_LONG"

// Long skips a test of the long stage unless LongEnv is 1: a test that
// costs minutes (a fit that trains a network hundreds of times, a sweep
// over every case where the ordinary stage checks a few) and so would make
// the suite's length follow the machine's load. The ordinary stage keeps a
// cheaper test of the same property wherever there is one. what says what
// the test costs, for the skip's message.
func Long(t testing.TB, what string) {
	t.Helper()
	if os.Getenv(LongEnv) != "1" {
		t.Skipf("a long test (%s): run it with %s=1 go test, or scripts/test.sh --long", what, LongEnv)
	}
}
