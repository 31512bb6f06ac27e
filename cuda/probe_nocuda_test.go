//go:build !cuda

package cuda

import (
	"errors"
	"testing"
)

// The default binary has no GPU backend, and says how to build one.
func TestNotBuilt(t *testing.T) {
	if _, err := Probe(FromEnv()); !errors.Is(err, ErrNotBuilt) {
		t.Errorf("Probe: %v, want ErrNotBuilt", err)
	}
}
