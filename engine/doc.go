// Package engine runs a training strategy (package strategy) on a workload
// (package workload) over a set of devices, each holding one model replica,
// under one of two clocks:
//
//   - Real time: one goroutine per device doing real work, with an injected
//     slowdown (speeds are relative: a device of speed s, the fastest being
//     f, waits f/s − 1 of its compute time after each batch) on top of the
//     natural variation of sparse batches.
//     train_seconds is wall time, evaluation excluded.
//   - Virtual time: a deterministic discrete-event simulation. Gradients,
//     updates and merges are computed for real, but each device's clock
//     advances by a cost model calibrated from measured kernel times
//     (cost.Model), divided by its speed and multiplied by seeded noise, and
//     each collective by a network model (comm.Model). Same seed, same
//     log, byte for byte; 64 and more devices fit on a laptop.
//
// A run is a driver and executors. The driver (on rank 0) feeds the
// strategy its events and gives each action its meaning, in one place: it
// deals batches from the shared, seeded stream in the order the strategy
// dispatches them (a batch is named by its position in the stream, so any
// process draws the same rows), keeps the books, evaluates — with the clock
// stopped, on the model the strategy names: at a barrier for synchronous
// strategies, between commits for asynchronous ones — and writes the run
// log. Executors hold the devices — replicas, gradients, optimizer state,
// the ops' state vectors — and the centre model; they compute batches,
// all-reduce and apply gradients, and lend their vectors and their
// comm.Comm to the strategies' ops (strategy.Op), which do the rest of each
// algorithm's arithmetic. The engine names no algorithm.
//
// The driver, the clocks and the checkpoint never read an executor's
// fields: they command the job (every rank's devices) and take its
// results — a batch's account for the virtual clock to price, the model to
// evaluate, the devices' books and vectors for a checkpoint, which the
// executors write and read back themselves. Who is in the run is one
// membership record, which the driver and the executor share.
//
// An op may start an all-reduce and return (strategy.Host.IAllReduce, as
// c10d's async_op): the devices compute while it is in flight, a later
// action of the op waits for it, and its Cost says so (Started, Awaits),
// for the virtual clock to carry it on the network concurrently with the
// batches. Across ranks a goroutine progresses each request and the op
// that waits for it finishes it; a checkpoint first completes rank 0's in
// flight (which needs every rank's part) and saves the sums the ops keep
// in Host.Pending.
//
// In one process (Config.World nil) a single executor holds every device
// and the collectives are in-memory sums. Across processes (Config.World an
// MPI world, or comm.Mem in tests) every rank holds Devices/World.Size()
// devices: rank 0 drives and sends the other ranks commands, gradients and
// replicas are all-reduced over the world, Layered SGD reduces within nodes
// and all-reduces among them while the next batches are prepared, and the
// parameter servers' θ lives on rank 0, which hands it out with each pulled
// batch and adds the updates the workers send back.
package engine
