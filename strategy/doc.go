// Package strategy defines how parallel SGD strategies talk to the engines
// that run them, and keeps the registry of strategies by name.
//
// A Strategy is a deterministic state machine in the manner of etcd's raft:
// it consumes Events (the run starts; device 2 finished its batch; the last
// collective finished; here are the replicas' norms) and answers with Actions
// (give device 2 a batch of 640 samples at learning rate 0.3; average the
// gradients and apply them; merge the replicas with weights α and momentum γ).
// It holds no clock, starts no goroutine and does no I/O; time, if it matters
// at all, is the number of events seen. The same strategy therefore runs
// unchanged under the real-time engine, the virtual-time simulator and, later,
// across machines, and its decisions can be tested with hand-written event
// sequences.
//
// Implementations live in sub-packages (strategy/syncsgd, strategy/adaptive, …)
// and register themselves from init with Register; users import
// strategy/all to get every one of them, and find them by name with New and
// List.
package strategy
