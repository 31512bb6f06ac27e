//go:build race

package kernel

// raceEnabled trims the reference ladders under the race detector, which
// slows the plain float64 reference loops twentyfold; the parallel paths are
// still exercised by the shapes that remain.
const raceEnabled = true
