// Package comm holds what crosses between devices: the network cost model
// that the virtual-time engine charges for collectives, and (with the
// multi-machine transports) the collectives themselves.
//
// The cost model is the standard latency–bandwidth (α–β) model: a message of
// m bytes costs α + m/β. Collective costs follow from their message
// schedules; see each function. MeasureNetwork fits it to the links of a
// running job, and its NetworkReport writes what it measured as tables
// (`hetsgd calibrate --network`).
package comm
