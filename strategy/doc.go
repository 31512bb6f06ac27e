// Package strategy defines how parallel SGD strategies talk to the engines
// that run them, and keeps the registries of strategies and of their ops by
// name.
//
// A Strategy is a deterministic state machine in the manner of etcd's raft:
// it consumes Events (the run starts; device 2 finished its batch; the last
// collective finished; here is the answer to a query) and answers with
// Actions from a closed set: give device 2 a batch of 640 samples at
// learning rate 0.3; average the gradients and apply them; run an op — a
// collective over the replicas and the centre, a query that measures each
// device, a commit of one device's update to the centre. It holds no clock,
// starts no goroutine and does no I/O; time, if it matters at all, is the
// number of events seen. The same strategy therefore runs unchanged under
// the real-time engine, the virtual-time simulator and across machines, and
// its decisions can be tested with hand-written event sequences.
//
// An Op is an algorithm's arithmetic and state — Adaptive SGD's merge,
// CROSSBOW's synchronisation, a parameter server's commit rule — as a DDP
// communication hook holds an aggregation: the strategy decides when and
// with which parameters, the op does the sums on every rank with what the
// engine lends it (Host). The engine names no algorithm; an action names
// its op, registered with RegisterOp by the strategy's package.
//
// Implementations live in sub-packages (strategy/syncsgd, strategy/adaptive,
// strategy/diloco, …) and register themselves and their ops from init with
// Register and RegisterOp; users import strategy/all to get every one of
// them, and find them by name with New and List.
package strategy
