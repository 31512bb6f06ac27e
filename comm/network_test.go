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
