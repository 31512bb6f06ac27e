package comm

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"os"
	"slices"
	"time"
)

// LinkTimer is implemented by transports that can time their links below
// their Go layer (package mpi, from C): every rank of the group calls each
// method.
type LinkTimer interface {
	// PingPong returns the seconds of iters round trips of n bytes between
	// ranks a and b (0 on the other ranks).
	PingPong(a, b, n, iters int) float64
	// TimeAllReduce returns the seconds of iters in-place all-reduces of x.
	TimeAllReduce(x []float32, iters int) float64
}

// Hosts returns, for every rank, the index of the first rank on the same
// host: ranks with equal values share a machine (and its memory).
func Hosts(c Comm) ([]int, error) {
	host, err := os.Hostname()
	if err != nil {
		// Every rank takes part in the gather below; one that cannot name
		// its host counts as a host of its own.
		host = fmt.Sprintf("unknown host of rank %d", c.Rank())
	}
	h := fnv.New64a()
	h.Write([]byte(host))
	all := make([]float64, c.Size())
	if err := c.AllGather(all, []float64{float64(h.Sum64() >> 12)}); err != nil {
		return nil, fmt.Errorf("comm: gathering the ranks' hosts: %w", err)
	}
	out := make([]int, len(all))
	for r, v := range all {
		out[r] = slices.Index(all, v)
	}
	return out, nil
}

// LinkFit is a measured link: the one-way time of messages of each size
// between two ranks, and the latency–bandwidth fit of it.
type LinkFit struct {
	Network
	A, B    int       // the ranks measured
	Sizes   []int     // bytes
	Seconds []float64 // one-way time of each size (the best of a few runs)
}

// AllReduceTiming compares an all-reduce of Bytes on Ranks ranks through
// this package's Comm.AllReduce (Go) with the transport's own call (Raw, 0
// when the transport cannot time itself) and with the fitted network
// model's ring estimate (Model), in seconds per all-reduce.
type AllReduceTiming struct {
	Bytes, Ranks   int
	Go, Raw, Model float64
}

// NetworkReport is what MeasureNetwork found.
type NetworkReport struct {
	Model        Model    // what the virtual engine reads
	Intra, Inter *LinkFit // nil when no two ranks share a host / none is on another
	AllReduce    []AllReduceTiming
	Ranks, Hosts int // ranks measured, and the hosts they run on
}

// Sizes of the messages MeasureNetwork times, and of its all-reduces: all
// of them, or a few for a quick measurement (a smoke test, not a model).
var (
	LinkSizes           = []int{8, 1 << 10, 64 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20}
	AllReduceSizes      = []int{4 << 20, 64 << 20}
	QuickLinkSizes      = []int{8, 64 << 10, 1 << 20, 4 << 20}
	QuickAllReduceSizes = []int{4 << 20}
)

// MeasureNetwork times the links of the group and fits the network model
// the virtual engine reads: the latency α is the one-way time of an 8-byte
// message and the bandwidth β the inverse slope of the one-way time over
// messages of 1 MiB and more, between rank 0 and the first rank on its host
// (Intra) and on another host (Inter; when every rank shares one host, Inter
// is Intra). Groups are hosts. It also times all-reduces through the Go
// layer against the transport's own call. Every rank calls it; the report
// is complete on rank 0.
func MeasureNetwork(c Comm, linkSizes, allReduceSizes []int) (*NetworkReport, error) {
	return MeasureNetworkContext(context.Background(), c, linkSizes, allReduceSizes)
}

// MeasureNetworkContext is MeasureNetwork, stopped once ctx is done on any
// rank: the ranks agree on it between two timed rounds, so that none is
// left waiting in a collective the others gave up, and every rank returns
// an error wrapping context.Canceled (ctx.Err() where its own ctx is done).
func MeasureNetworkContext(ctx context.Context, c Comm, linkSizes, allReduceSizes []int) (*NetworkReport, error) {
	if c.Size() < 2 {
		return nil, fmt.Errorf("comm: measuring the network needs at least 2 ranks (mpirun -np 2 or more)")
	}
	if err := agreeGoOn(ctx, c); err != nil {
		return nil, err
	}
	hosts, err := Hosts(c)
	if err != nil {
		return nil, err
	}
	rep := &NetworkReport{Ranks: c.Size()}
	seen := map[int]int{}
	for _, h := range hosts {
		seen[h]++
	}
	rep.Hosts = len(seen)
	intra, inter := -1, -1
	for r := 1; r < c.Size(); r++ {
		if hosts[r] == hosts[0] && intra < 0 {
			intra = r
		}
		if hosts[r] != hosts[0] && inter < 0 {
			inter = r
		}
	}
	for _, peer := range []int{intra, inter} {
		if peer < 0 {
			continue
		}
		fit, err := measureLink(ctx, c, 0, peer, linkSizes)
		if err != nil {
			return nil, err
		}
		if peer == intra {
			rep.Intra = fit
		} else {
			rep.Inter = fit
		}
	}
	m := Model{AllReduce: Ring}
	switch {
	case rep.Intra != nil && rep.Inter != nil:
		m.Intra, m.Inter, m.GroupSize = rep.Intra.Network, rep.Inter.Network, seen[hosts[0]]
	case rep.Intra != nil:
		m.Intra, m.Inter = rep.Intra.Network, rep.Intra.Network
	default:
		m.Intra, m.Inter = rep.Inter.Network, rep.Inter.Network
	}
	rep.Model = m
	for _, size := range allReduceSizes {
		t, err := timeAllReduce(ctx, c, size)
		if err != nil {
			return nil, err
		}
		t.Model = m.AllReduceCost(Ring, size, c.Size())
		rep.AllReduce = append(rep.AllReduce, t)
	}
	return rep, nil
}

// Write writes the report as tables: each link's one-way times against
// its fit, then each all-reduce through this package against the
// transport's own and the model's, in one write whose error it returns.
func (r *NetworkReport) Write(w io.Writer) error {
	b := new(bytes.Buffer)
	fmt.Fprintf(b, "%d ranks on %d host(s)\n", r.Ranks, r.Hosts)
	for _, l := range []struct {
		name string
		fit  *LinkFit
	}{{"within a host", r.Intra}, {"between hosts", r.Inter}} {
		if l.fit == nil {
			continue
		}
		fmt.Fprintf(b, "\nlink %s (ranks %d and %d): latency %.2f µs, bandwidth %.2f GB/s\n", l.name, l.fit.A, l.fit.B, l.fit.Latency*1e6, l.fit.Bandwidth/1e9)
		fmt.Fprintf(b, "%12s  %14s  %14s\n", "bytes", "one way (µs)", "fit (µs)")
		for i, n := range l.fit.Sizes {
			fmt.Fprintf(b, "%12d  %14.2f  %14.2f\n", n, l.fit.Seconds[i]*1e6, l.fit.Message(n)*1e6)
		}
	}
	if r.Inter == nil {
		fmt.Fprintf(b, "\nno rank runs on another host: the model's link between nodes is the one within a host\n")
	}
	fmt.Fprintf(b, "\nall-reduce of %d ranks   %12s  %12s  %9s  %14s\n", r.Ranks, "hetsgd (ms)", "MPI (ms)", "overhead", "ring model (ms)")
	for _, t := range r.AllReduce {
		over := "n/a" // the transport cannot time its own all-reduce
		if t.Raw > 0 {
			over = fmt.Sprintf("%+.1f%%", 100*(t.Go/t.Raw-1))
		}
		fmt.Fprintf(b, "%10.1f MB             %12.3f  %12.3f  %9s  %14.3f\n", float64(t.Bytes)/(1<<20), t.Go*1e3, t.Raw*1e3, over, t.Model*1e3)
	}
	b.WriteString("\n")
	_, err := w.Write(b.Bytes())
	return err
}

// agreeGoOn returns nil when no rank's ctx is done, and an error on every
// rank when one is. Every rank calls it at the same points; it synchronizes
// them as a barrier does.
func agreeGoOn(ctx context.Context, c Comm) error {
	var stop [1]float32
	if ctx.Err() != nil {
		stop[0] = 1
	}
	if err := c.AllReduce(stop[:]); err != nil {
		return err
	}
	if stop[0] == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("comm: measuring the network: %w", err)
	}
	return fmt.Errorf("comm: measuring the network: another rank stopped: %w", context.Canceled)
}

// measureLink times messages between ranks a and b; every rank takes part
// (the others only in the barriers).
func measureLink(ctx context.Context, c Comm, a, b int, sizes []int) (*LinkFit, error) {
	fit := &LinkFit{A: a, B: b, Sizes: sizes}
	lt, raw := c.(LinkTimer)
	for _, n := range sizes {
		iters := min(1000, max(5, (256<<20)/max(n, 1)/8))
		best := math.Inf(1)
		for range 3 {
			if err := agreeGoOn(ctx, c); err != nil {
				return nil, err
			}
			if err := c.Barrier(); err != nil {
				return nil, err
			}
			var s float64
			if raw {
				s = lt.PingPong(a, b, n, iters)
			} else {
				var err error
				if s, err = pingPong(c, a, b, n, iters); err != nil {
					return nil, err
				}
			}
			if r := c.Rank(); r == a || r == b {
				best = min(best, s/float64(2*iters))
			}
		}
		fit.Seconds = append(fit.Seconds, best)
	}
	// Every rank needs the fit only on rank 0, which timed it.
	if c.Rank() != a {
		return fit, nil
	}
	fit.Latency = fit.Seconds[0]
	var xs, ys []float64
	for i, n := range sizes {
		if n >= 1<<20 {
			xs, ys = append(xs, float64(n)), append(ys, fit.Seconds[i])
		}
	}
	slope := lsSlope(xs, ys)
	if !(slope > 0) {
		// Times that do not grow with the size (noise on a tiny ladder): the
		// largest message's average rate stands in for the bandwidth.
		slope = fit.Seconds[len(sizes)-1] / float64(sizes[len(sizes)-1])
	}
	fit.Bandwidth = 1 / slope
	return fit, nil
}

// lsSlope is the least-squares slope of y over x.
func lsSlope(xs, ys []float64) float64 {
	var mx, my float64
	for i := range xs {
		mx += xs[i] / float64(len(xs))
		my += ys[i] / float64(len(ys))
	}
	var num, den float64
	for i := range xs {
		num += (xs[i] - mx) * (ys[i] - my)
		den += (xs[i] - mx) * (xs[i] - mx)
	}
	return num / den
}

// pingPong times round trips through Send and Recv, for transports that
// cannot time themselves.
func pingPong(c Comm, a, b, n, iters int) (float64, error) {
	r := c.Rank()
	if r != a && r != b {
		return 0, nil
	}
	peer := b
	if r == b {
		peer = a
	}
	buf := make([]byte, n)
	t0 := time.Now()
	for range iters {
		if r == a {
			if err := c.Send(peer, 77, buf); err != nil {
				return 0, err
			}
			if _, err := c.Recv(peer, 77, buf); err != nil {
				return 0, err
			}
		} else {
			if _, err := c.Recv(peer, 77, buf); err != nil {
				return 0, err
			}
			if err := c.Send(peer, 77, buf); err != nil {
				return 0, err
			}
		}
	}
	return time.Since(t0).Seconds(), nil
}

// timeAllReduce times all-reduces of size bytes through Comm.AllReduce and,
// when it can, through the transport's own call: rounds of a block of each,
// in alternating order (what runs first in a round pays for whatever the
// other left in the caches), reporting the median of the rounds.
func timeAllReduce(ctx context.Context, c Comm, size int) (AllReduceTiming, error) {
	x := make([]float32, size/4)
	iters := max(3, (64<<20)/size)
	t := AllReduceTiming{Bytes: size, Ranks: c.Size()}
	lt, raw := c.(LinkTimer)
	const rounds = 15
	var goT, rawT []float64
	timeGo := func() error {
		if err := c.Barrier(); err != nil {
			return err
		}
		t0 := time.Now()
		for range iters {
			if err := c.AllReduce(x); err != nil {
				return err
			}
		}
		goT = append(goT, time.Since(t0).Seconds()/float64(iters))
		clear(x) // sums of sums would overflow to Inf, which may run slower
		return nil
	}
	timeRaw := func() {
		rawT = append(rawT, lt.TimeAllReduce(x, iters)/float64(iters))
		clear(x)
	}
	for i := range rounds {
		if err := agreeGoOn(ctx, c); err != nil {
			return t, err
		}
		if raw && i%2 == 1 {
			timeRaw()
		}
		if err := timeGo(); err != nil {
			return t, err
		}
		if raw && i%2 == 0 {
			timeRaw()
		}
	}
	t.Go = median(goT)
	if raw {
		t.Raw = median(rawT)
	}
	return t, nil
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
