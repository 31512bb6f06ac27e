//go:build !cuda

package cuda

// Probe finds the driver, the GPUs it sees and the toolkit's libraries;
// this binary has no GPU backend (ErrNotBuilt).
func Probe(Options) (*System, error) { return nil, ErrNotBuilt }
