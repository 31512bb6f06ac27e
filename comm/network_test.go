package comm

import (
	"math"
	"testing"
)

func TestRingAllReduceKnownAnswer(t *testing.T) {
	n := Network{Latency: 1e-5, Bandwidth: 1e9}
	// 4 devices, 4 MB: 2·3·(10 µs + 1 MB / 1 GB/s) = 6·(1e-5 + 1e-3).
	if got, want := n.RingAllReduce(4_000_000, 4), 6*(1e-5+1e-3); math.Abs(got-want) > 1e-15 {
		t.Fatalf("RingAllReduce = %v, want %v", got, want)
	}
	if n.RingAllReduce(4_000_000, 1) != 0 || n.AllGather(8, 1) != 0 {
		t.Fatal("a collective of one device must be free")
	}
	// Bandwidth term tends to 2m/β as p grows.
	big := Network{Bandwidth: 1e9}.RingAllReduce(1_000_000_000, 1000)
	if math.Abs(big-2*0.999) > 1e-9 {
		t.Fatalf("bandwidth-bound ring = %v, want ≈ 2·(p−1)/p·m/β", big)
	}
	if (Network{Latency: -1, Bandwidth: 1}).Validate() == nil || (Network{Bandwidth: 0}).Validate() == nil {
		t.Fatal("bad networks accepted")
	}
}

func TestTopologyCosts(t *testing.T) {
	intra := Network{Latency: 1e-5, Bandwidth: 1e10}
	inter := Network{Latency: 2e-5, Bandwidth: 1e9}
	m := Model{GroupSize: 4, Intra: intra, Inter: inter, AllReduce: Ring}
	const mb = 1_000_000
	// Within one group the intra-node link is used.
	if got, want := m.AllReduceCost(Ring, mb, 4), intra.RingAllReduce(mb, 4); got != want {
		t.Fatalf("ring within a node: %v, want %v", got, want)
	}
	// Across nodes a ring waits for the slow hop at every step.
	if got, want := m.AllReduceCost(Ring, mb, 16), 2*15*(2e-5+mb/16/1e9); math.Abs(got-want) > 1e-15 {
		t.Fatalf("ring across nodes: %v, want %v", got, want)
	}
	// Tree: ⌈log₂ 16⌉ = 4 levels up and down, whole message, slow link.
	if got, want := m.AllReduceCost(Tree, mb, 16), 2*4*(2e-5+mb/1e9); math.Abs(got-want) > 1e-12 {
		t.Fatalf("tree: %v, want %v", got, want)
	}
	// Hierarchical on 4 nodes of 4: tree over 4 workers + communicator
	// (⌈log₂ 5⌉ = 3 levels) each way on the fast link, ring of 4 on the
	// slow one.
	r, b, x := m.HierarchicalParts(mb, 16)
	if want := 3 * (1e-5 + mb/1e10); math.Abs(r-want) > 1e-15 || r != b {
		t.Fatalf("intra reduce %v broadcast %v, want %v", r, b, want)
	}
	if want := inter.RingAllReduce(mb, 4); x != want {
		t.Fatalf("inter ring %v, want %v", x, want)
	}
	if got := m.AllReduceCost(Hierarchical, mb, 16); math.Abs(got-(r+b+x)) > 1e-15 {
		t.Fatalf("hierarchical total %v", got)
	}
	if _, err := ParseAlgorithm("butterfly"); err == nil {
		t.Fatal("unknown algorithm accepted")
	}
	if (Model{GroupSize: -1, Intra: intra, Inter: inter, AllReduce: Ring}).Validate() == nil {
		t.Fatal("negative group size accepted")
	}
}
