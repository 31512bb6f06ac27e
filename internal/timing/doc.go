// Package timing times a function the way hetsgd's measurements do: one
// run first to warm up — first-touch page faults, scratch space, caches —
// then a few timed runs, of which Median keeps the middle one (robust to a
// run the scheduler slowed) and Best the shortest (the machine's rate, for
// kernels short enough that only interference makes them slower).
//
// The cost model's calibration (package cost) and the training-step
// benchmark (package workload) share it, so that what they report is timed
// alike.
package timing
