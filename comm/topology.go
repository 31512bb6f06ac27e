package comm

import (
	"fmt"
	"math"
)

// Algorithm is how an all-reduce is scheduled.
type Algorithm string

const (
	// Ring: reduce-scatter then all-gather around a ring of all devices,
	// bandwidth-optimal; on a multi-node topology every step waits for the
	// inter-node hop.
	Ring Algorithm = "ring"
	// Tree: reduce up and broadcast down a binary tree of all devices,
	// latency-optimal for small messages, each level sending the whole
	// message (what a topology-unaware MPI_Allreduce may do).
	Tree Algorithm = "tree"
	// Hierarchical: reduce within each group to its communicator (tree on
	// the fast links), all-reduce among communicators (ring on the slow
	// links), broadcast back within each group — Layered SGD's schedule.
	Hierarchical Algorithm = "hierarchical"
)

// ParseAlgorithm checks an all-reduce algorithm name.
func ParseAlgorithm(s string) (Algorithm, error) {
	switch a := Algorithm(s); a {
	case Ring, Tree, Hierarchical:
		return a, nil
	}
	return "", fmt.Errorf("comm: unknown all-reduce %q (want ring, tree or hierarchical)", s)
}

// Model is the network of a cluster: devices in groups (nodes) of
// GroupSize, linked within a group by Intra and across groups by Inter.
// GroupSize 0 means one group holding every device.
type Model struct {
	GroupSize int       `json:"group_size"`
	Intra     Network   `json:"intra"`
	Inter     Network   `json:"inter"`
	AllReduce Algorithm `json:"all_reduce"` // the algorithm of plain all-reduces
}

// DefaultModel is one server whose devices talk over PCIe (DefaultNetwork),
// with ring all-reduce. Multi-node topologies set GroupSize and Inter.
var DefaultModel = Model{Intra: DefaultNetwork, Inter: DefaultNetwork, AllReduce: Ring}

// Validate reports a model that cannot be used.
func (m Model) Validate() error {
	if m.GroupSize < 0 {
		return fmt.Errorf("comm: group size %d must be ≥ 0", m.GroupSize)
	}
	if err := m.Intra.Validate(); err != nil {
		return err
	}
	if err := m.Inter.Validate(); err != nil {
		return err
	}
	_, err := ParseAlgorithm(string(m.AllReduce))
	return err
}

// groups returns the group size and number of groups for p devices.
func (m Model) groups(p int) (size, count int) {
	size = m.GroupSize
	if size <= 0 || size >= p {
		return p, 1
	}
	return size, (p + size - 1) / size
}

// Link returns the network a collective over p devices is limited by: the
// intra-group one when all p fit in one group.
func (m Model) Link(p int) Network {
	if _, count := m.groups(p); count > 1 {
		return m.Inter
	}
	return m.Intra
}

// log2 is ⌈log₂ p⌉, the depth of a binary tree over p nodes.
func log2(p int) float64 {
	if p <= 1 {
		return 0
	}
	return math.Ceil(math.Log2(float64(p)))
}

// TreeReduce returns the cost of reducing m bytes from p devices to one
// over net (binomial tree): ⌈log₂ p⌉·(α + m/β). Broadcast costs the same.
func (net Network) TreeReduce(m, p int) float64 { return log2(p) * net.Message(m) }

// AllReduceCost returns the cost of an all-reduce of m bytes among p
// devices with the given algorithm.
func (m Model) AllReduceCost(alg Algorithm, bytes, p int) float64 {
	if p <= 1 {
		return 0
	}
	switch alg {
	case Tree:
		return 2 * m.Link(p).TreeReduce(bytes, p)
	case Hierarchical:
		r, b, inter := m.HierarchicalParts(bytes, p)
		return r + inter + b
	default:
		return m.Link(p).RingAllReduce(bytes, p)
	}
}

// HierarchicalParts returns the three phases of a hierarchical all-reduce of
// m bytes among p devices: the reduce within groups, the broadcast back, and
// the ring all-reduce among the groups' communicators in between, which
// Layered SGD overlaps with the workers' preparation of the next batch.
func (m Model) HierarchicalParts(bytes, p int) (reduce, broadcast, inter float64) {
	size, count := m.groups(p)
	// Workers send to a communicator that is not a compute device: the tree
	// has size+1 nodes.
	reduce = m.Intra.TreeReduce(bytes, size+1)
	broadcast = reduce
	inter = m.Inter.RingAllReduce(bytes, count)
	return reduce, broadcast, inter
}

// AllGatherCost returns the cost of gathering m bytes from each of p
// devices on every device.
func (m Model) AllGatherCost(bytes, p int) float64 { return m.Link(p).AllGather(bytes, p) }

// MessageCost returns the cost of one point-to-point message of m bytes
// between a device and a server on the slowest link of p devices (the
// parameter server's pulls and commits).
func (m Model) MessageCost(bytes, p int) float64 { return m.Link(p).Message(bytes) }
