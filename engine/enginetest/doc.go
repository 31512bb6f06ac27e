// Package enginetest holds the engine's equivalences as tests a strategy's
// package runs on itself: the run learns, a virtual-time run resumed from
// any of its checkpoints — a device crashing on the way — ends on the
// uninterrupted run's model bit for bit, and a run on several ranks in one
// process (comm.Mem) reports what it did. A new strategy calls them from
// its tests beside the conformance suite of package strategytest, which
// holds it to the strategy contract; these hold its ops and their state to
// the engine's.
package enginetest
