package comm

import (
	"fmt"
	"math"
)

// Network is a latency–bandwidth model of the links between devices.
type Network struct {
	Latency   float64 // α, seconds per message
	Bandwidth float64 // β, bytes per second
}

// DefaultNetwork models the devices of one server linked through PCIe 3.0
// x16: about 10 µs per message and 10 GB/s of the link's 15.8 GB/s
// theoretical bandwidth, the order of what NCCL reaches between GPUs without
// NVLink. It is a documented default, not a measurement of this machine.
var DefaultNetwork = Network{Latency: 10e-6, Bandwidth: 10e9}

// DefaultInter is the default link between nodes: 25 Gb/s Ethernet with
// 20 µs per message, slower than the PCIe between devices of a node.
var DefaultInter = Network{Latency: 20e-6, Bandwidth: 25e9 / 8}

// Validate reports a model that cannot be used.
func (n Network) Validate() error {
	if !(n.Latency >= 0) || !(n.Bandwidth > 0) || math.IsInf(n.Latency, 0) || math.IsInf(n.Bandwidth, 0) {
		return fmt.Errorf("comm: network latency %v s and bandwidth %v B/s must be finite, ≥ 0 and > 0", n.Latency, n.Bandwidth)
	}
	return nil
}

// Message returns the cost of sending m bytes.
func (n Network) Message(m int) float64 { return n.Latency + float64(m)/n.Bandwidth }

// RingAllReduce returns the cost of an all-reduce of m bytes among p
// devices on a ring: a reduce-scatter and an all-gather, each of p−1 steps
// that send m/p bytes.
//
//	2(p−1)·(α + m/(p·β))
func (n Network) RingAllReduce(m, p int) float64 {
	if p <= 1 {
		return 0
	}
	return 2 * float64(p-1) * n.Message(m/p)
}

// AllGather returns the cost of gathering m bytes from each of p devices on
// every device, on a ring: p−1 steps of m bytes.
func (n Network) AllGather(m, p int) float64 {
	if p <= 1 {
		return 0
	}
	return float64(p-1) * n.Message(m)
}
