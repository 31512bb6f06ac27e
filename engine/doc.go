// Package engine runs a training strategy on a set of devices, each holding
// one model replica, under one of two clocks:
//
//   - Real time: one goroutine per device doing real work, with an injected
//     slowdown (speeds are relative: a device of speed s, the fastest being
//     f, waits f/s − 1 of its compute time after each batch) on top of the
//     natural variation of sparse batches.
//     train_seconds is wall time, evaluation excluded.
//   - Virtual time: a deterministic discrete-event simulation. Gradients,
//     updates and merges are computed for real, but each device's clock
//     advances by a cost model calibrated from measured kernel times
//     (CostModel), divided by its speed and multiplied by seeded noise, and
//     each collective by a network model (comm.Model). Same seed, same
//     log, byte for byte; 64 and more devices fit on a laptop.
//
// The engine owns everything a strategy must not: the data stream (batches
// are dealt from one shared, seeded sampler in the order the strategy
// dispatches them), the replicas, the centre model and its history for
// merges, evaluation (with the clock stopped, on the model the strategy names:
// at a barrier for synchronous strategies, between commits for asynchronous
// ones) and the run log.
package engine
